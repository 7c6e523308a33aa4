// The catalog file format operators keep in version control (YAML or JSON; JSON is
// YAML too), declared by CatalogFile in schemas.ts. Validation collects every problem
// with its location instead of stopping at the first, so one `infracat catalog validate`
// run shows everything to fix: the schema's rules through Ajv, then the rules that
// relate fields and entries to each other (derived slugs, known sets, unique slugs).
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { parseDocument, stringify, type ScalarTag } from 'yaml';
import { jsonText, toModel, toWire } from './forms.js';
import { Amount } from './money.js';
import {
  BUILTIN_IMAGE_TYPES,
  BUILTIN_REGION_FEATURES,
  imageSlug,
  KINDS,
  PLAN_TYPES,
  planSlug,
  sortCatalog,
  type Catalog,
  type Kind,
  type PlanType,
} from './model.js';
import { parseTimestamp } from '../tokens/rules.js';
import { errorPath, pointerOf, problemsFromErrors, type CatalogProblem } from './problems.js';
import { CatalogFile } from './schemas.js';

export type { CatalogProblem };

export type ParseResult = { ok: true; catalog: Catalog } | { ok: false; problems: CatalogProblem[] };

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

// Compiled on first use: only the CLI and a first start's seeding read catalog files.
let validateFile: ValidateFunction | undefined;
function schemaErrors(data: unknown): ErrorObject[] {
  // verbose: errors carry their schema (its problem messages) and the offending value.
  // multipleOfPrecision: a price's float noise is tolerated as parseMoney tolerates it.
  // useDefaults: absent settings take their declared defaults.
  validateFile ??= new Ajv({
    allErrors: true,
    verbose: true,
    useDefaults: true,
    multipleOfPrecision: 6,
    strict: false,
  }).compile(CatalogFile);
  return validateFile(data) ? [] : [...(validateFile.errors ?? [])];
}

export function parseCatalogText(text: string, now = Date.now()): ParseResult {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // The whole message: with prettyErrors it ends in the offending line and a caret under the spot.
    return {
      ok: false,
      problems: doc.errors.map((e) => ({ entry: 'file', pointer: '', message: e.message.trimEnd() })),
    };
  }
  return validateCatalog(doc.toJS() as unknown, now);
}

/**
 * Validates a parsed document (YAML/JSON data) against every catalog rule. `now` decides
 * which entries are already sunset (a successor must not be).
 */
export function validateCatalog(data: unknown, now = Date.now()): ParseResult {
  const errors = schemaErrors(data);
  const label = (kind: string, i: number): string | undefined => {
    const list = isObject(data) && (KINDS as readonly string[]).includes(kind) ? data[kind] : undefined;
    if (!Array.isArray(list)) return undefined;
    const slug = isObject(list[i]) ? list[i].slug : undefined;
    return typeof slug === 'string' && slug !== '' ? `${kind}[${i}] (${slug})` : `${kind}[${i}]`;
  };
  const problems = problemsFromErrors(errors, label);
  if (!isObject(data)) return { ok: false, problems };
  // Values the schema refused, and what holds them (`/plans/3/slug`, `/plans/3`, `/plans`,
  // `/extra_image_types` for one bad word): the rules below leave them alone.
  const refused = new Set(
    errors.flatMap((e) =>
      errorPath(e)
        .slice(0, 3)
        .map((_, i, path) => `/${path.slice(0, i + 1).join('/')}`),
    ),
  );
  problems.push(...crossFieldProblems(data, refused, (kind, i) => label(kind, i) ?? kind, now));
  if (problems.length > 0) return { ok: false, problems };
  const catalog = toModel(CatalogFile, data) as Catalog;
  // A value listed twice in a set extends it once.
  catalog.extra_image_types = [...new Set(catalog.extra_image_types)];
  catalog.extra_region_features = [...new Set(catalog.extra_region_features)];
  return { ok: true, catalog: sortCatalog(catalog) };
}

interface EntryOf {
  raw: Raw;
  index: number;
  entry: string;
  /** The fields' values, when every one of them passed the schema. */
  accepted(...fields: string[]): unknown[] | undefined;
}

/** The rules that relate fields and entries to each other, over fields the schema accepted. */
function crossFieldProblems(
  data: Raw,
  refused: Set<string>,
  label: (kind: string, i: number) => string,
  now: number,
): CatalogProblem[] {
  const problems: CatalogProblem[] = [];
  // Made once per kind: the rules below key maps by these objects (a successor's own
  // sunset_at is looked up by the entry that bySlug resolves it to).
  const made = new Map<Kind, EntryOf[]>();
  const entries = (kind: Kind): EntryOf[] => {
    let list = made.get(kind);
    if (list === undefined) made.set(kind, (list = entriesOf(kind)));
    return list;
  };
  const entriesOf = (kind: Kind): EntryOf[] =>
    (Array.isArray(data[kind]) ? (data[kind] as unknown[]) : []).flatMap((raw, index) => {
      if (!isObject(raw)) return [];
      const accepted = (...fields: string[]): unknown[] | undefined =>
        fields.every((f) => raw[f] !== undefined && !refused.has(`/${kind}/${index}/${f}`))
          ? fields.map((f) => raw[f])
          : undefined;
      return [{ raw, index, entry: label(kind, index), accepted }];
    });
  const at = (kind: Kind, e: EntryOf, field: string, message: string, ...more: (string | number)[]) =>
    problems.push({ entry: e.entry, field, pointer: pointerOf([kind, e.index, field, ...more]), message });
  const extension = (field: string, builtin: readonly string[]): Set<string> =>
    new Set([
      ...builtin,
      ...(refused.has(`/${field}`) || !Array.isArray(data[field]) ? [] : (data[field] as string[])),
    ]);
  const imageTypes = extension('extra_image_types', BUILTIN_IMAGE_TYPES);
  const regionFeatures = extension('extra_region_features', BUILTIN_REGION_FEATURES);

  for (const e of entries('images')) {
    const names = e.accepted('distribution', 'version', 'slug') as string[] | undefined;
    if (names !== undefined && names[2] !== imageSlug(names[0]!, names[1]!)) {
      at('images', e, 'slug', `must be "${imageSlug(names[0]!, names[1]!)}" (lowercase distribution-version)`);
    }
    const [type] = (e.accepted('type') ?? []) as string[];
    if (type !== undefined && !imageTypes.has(type))
      at('images', e, 'type', `must be one of ${[...imageTypes].join(', ')} (extend with extra_image_types)`);
  }
  for (const e of entries('plans')) {
    const ids = e.accepted('id', 'slug') as string[] | undefined;
    if (ids !== undefined && ids[0] !== ids[1]) at('plans', e, 'id', `must equal slug "${ids[1]}"`);
    const shape = e.accepted('type', 'vcpus', 'memory_mb', 'slug') as [PlanType, number, number, string] | undefined;
    if (shape !== undefined && shape[3] !== planSlug(shape[0], shape[1], shape[2])) {
      at(
        'plans',
        e,
        'slug',
        `must be "${planSlug(shape[0], shape[1], shape[2])}" ` +
          `(<${PLAN_TYPES[shape[0]]}>-<vcpus>vcpu-<memory GB>gb for type ${shape[0]})`,
      );
    }
  }
  for (const e of entries('regions')) {
    const features = Array.isArray(e.raw.features) ? (e.raw.features as unknown[]) : [];
    features.forEach((f, i) => {
      if (typeof f === 'string' && !regionFeatures.has(f)) {
        at(
          'regions',
          e,
          'features',
          `unknown feature ${JSON.stringify(f)}; known: ${[...regionFeatures].join(', ')} ` +
            '(extend with extra_region_features)',
          i,
        );
      }
    });
  }

  // Slugs: unique per kind; the first entry of each is what references resolve to.
  const bySlug = {} as Record<Kind, Map<string, EntryOf>>;
  for (const kind of KINDS) {
    bySlug[kind] = new Map();
    for (const e of entries(kind)) {
      if (typeof e.raw.slug !== 'string' || e.raw.slug === '') continue;
      const seen = bySlug[kind].get(e.raw.slug);
      if (seen !== undefined)
        at(kind, e, 'slug', `duplicate ${kind.slice(0, -1)} slug "${e.raw.slug}" (first at ${seen.entry})`);
      else bySlug[kind].set(e.raw.slug, e);
    }
  }

  // What a region offers: slugs of existing plans and images.
  for (const e of entries('regions')) {
    for (const kind of ['plans', 'images'] as const) {
      const [list] = (e.accepted(kind) ?? []) as string[][];
      list?.forEach((slug, i) => {
        if (!bySlug[kind].has(slug)) at('regions', e, kind, `unknown ${kind.slice(0, -1)} "${slug}"`, i);
      });
    }
  }

  // Deprecation: dates on the calendar, in order; a successor of the same kind, existing,
  // not gone, and no chain of successors that comes back to where it started.
  for (const kind of KINDS) {
    const instants = new Map<EntryOf, { deprecated?: number; sunset?: number }>();
    for (const e of entries(kind)) {
      const times: { deprecated?: number; sunset?: number } = {};
      for (const [field, key] of [
        ['deprecated_at', 'deprecated'],
        ['sunset_at', 'sunset'],
      ] as const) {
        const [text] = (e.accepted(field) ?? []) as string[];
        if (text === undefined) continue;
        const parsed = parseTimestamp(text);
        if ('error' in parsed) at(kind, e, field, parsed.error);
        else times[key] = parsed.at;
      }
      instants.set(e, times);
      const present = (field: string) => e.raw[field] !== undefined;
      if (present('sunset_at') && !present('deprecated_at'))
        at(kind, e, 'sunset_at', 'needs deprecated_at: an entry is deprecated before it is sunset');
      if (present('successor') && !present('deprecated_at'))
        at(kind, e, 'successor', 'needs deprecated_at: only a deprecated entry has a successor');
      if (times.deprecated !== undefined && times.sunset !== undefined && times.sunset < times.deprecated)
        at(kind, e, 'sunset_at', `must not be before deprecated_at (${String(e.raw.deprecated_at)})`);
    }
    for (const e of entries(kind)) {
      const [successor] = (e.accepted('successor', 'slug') ?? []) as string[];
      if (successor === undefined) continue;
      const next = bySlug[kind].get(successor);
      const noun = kind.slice(0, -1);
      if (successor === e.raw.slug) at(kind, e, 'successor', `must not be the ${noun} itself`);
      else if (next === undefined)
        at(kind, e, 'successor', `unknown ${noun} "${successor}" (a successor is a ${noun} of this catalog)`);
      else if ((instants.get(next)?.sunset ?? Infinity) <= now)
        at(kind, e, 'successor', `"${successor}" is itself sunset (since ${String(next.raw.sunset_at)})`);
      else {
        // Follow the chain; each entry has one successor, so a cycle is met within n steps.
        const seen = new Set<string>([e.raw.slug as string]);
        let cursor: EntryOf | undefined = next;
        while (cursor !== undefined) {
          const slug = cursor.raw.slug as string;
          if (seen.has(slug)) {
            if (slug === e.raw.slug)
              at(kind, e, 'successor', `successors form a cycle: ${[...seen, slug].join(' -> ')}`);
            break;
          }
          seen.add(slug);
          const to: unknown = cursor.raw.successor;
          cursor = typeof to === 'string' ? bySlug[kind].get(to) : undefined;
        }
      }
    }
  }
  return problems;
}

// YAML's writer would print 6 for 6.00: an Amount is written by the money formatter, as a
// plain (untagged) number.
const amountTag: ScalarTag = {
  tag: 'tag:yaml.org,2002:float',
  default: true,
  identify: (value) => value instanceof Amount,
  resolve: (text) => text,
  stringify: ({ value }) => String(value),
};

/** A catalog in the file format: what `catalog export` writes and `catalog apply` reads. */
export function formatCatalog(c: Catalog, format: 'yaml' | 'json'): string {
  const data = toWire(CatalogFile, c);
  return format === 'json' ? `${jsonText(data, '  ')}\n` : stringify(data, { lineWidth: 0, customTags: [amountTag] });
}
