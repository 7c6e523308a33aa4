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
  type PlanType,
} from './model.js';
import { errorPath, problemsFromErrors, type CatalogProblem } from './problems.js';
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

export function parseCatalogText(text: string): ParseResult {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // The whole message: with prettyErrors it ends in the offending line and a caret under the spot.
    return { ok: false, problems: doc.errors.map((e) => ({ entry: 'file', message: e.message.trimEnd() })) };
  }
  return validateCatalog(doc.toJS() as unknown);
}

/** Validates a parsed document (YAML/JSON data) against every catalog rule. */
export function validateCatalog(data: unknown): ParseResult {
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
  problems.push(...crossFieldProblems(data, refused, (kind, i) => label(kind, i) ?? kind));
  if (problems.length > 0) return { ok: false, problems };
  const catalog = toModel(CatalogFile, data) as Catalog;
  // A value listed twice in a set extends it once.
  catalog.extra_image_types = [...new Set(catalog.extra_image_types)];
  catalog.extra_region_features = [...new Set(catalog.extra_region_features)];
  return { ok: true, catalog: sortCatalog(catalog) };
}

/** The rules that relate fields and entries to each other, over fields the schema accepted. */
function crossFieldProblems(
  data: Raw,
  refused: Set<string>,
  label: (kind: string, i: number) => string,
): CatalogProblem[] {
  const problems: CatalogProblem[] = [];
  const at = (entry: string, field: string, message: string) => problems.push({ entry, field, message });
  const entries = (kind: string) =>
    (Array.isArray(data[kind]) ? (data[kind] as unknown[]) : []).flatMap((raw, i) => {
      if (!isObject(raw)) return [];
      const entry = label(kind, i);
      /** The fields' values, when every one of them passed the schema. */
      const accepted = (...fields: string[]): unknown[] | undefined =>
        fields.every((f) => raw[f] !== undefined && !refused.has(`/${kind}/${i}/${f}`))
          ? fields.map((f) => raw[f])
          : undefined;
      return [{ raw, entry, accepted }];
    });
  const extension = (field: string, builtin: readonly string[]): Set<string> =>
    new Set([
      ...builtin,
      ...(refused.has(`/${field}`) || !Array.isArray(data[field]) ? [] : (data[field] as string[])),
    ]);
  const imageTypes = extension('extra_image_types', BUILTIN_IMAGE_TYPES);
  const regionFeatures = extension('extra_region_features', BUILTIN_REGION_FEATURES);

  for (const { entry, accepted } of entries('images')) {
    const names = accepted('distribution', 'version', 'slug') as string[] | undefined;
    if (names !== undefined && names[2] !== imageSlug(names[0]!, names[1]!)) {
      at(entry, 'slug', `must be "${imageSlug(names[0]!, names[1]!)}" (lowercase distribution-version)`);
    }
    const [type] = (accepted('type') ?? []) as string[];
    if (type !== undefined && !imageTypes.has(type))
      at(entry, 'type', `must be one of ${[...imageTypes].join(', ')} (extend with extra_image_types)`);
  }
  for (const { entry, accepted } of entries('plans')) {
    const ids = accepted('id', 'slug') as string[] | undefined;
    if (ids !== undefined && ids[0] !== ids[1]) at(entry, 'id', `must equal slug "${ids[1]}"`);
    const shape = accepted('type', 'vcpus', 'memory_mb', 'slug') as [PlanType, number, number, string] | undefined;
    if (shape !== undefined && shape[3] !== planSlug(shape[0], shape[1], shape[2])) {
      at(
        entry,
        'slug',
        `must be "${planSlug(shape[0], shape[1], shape[2])}" ` +
          `(<${PLAN_TYPES[shape[0]]}>-<vcpus>vcpu-<memory GB>gb for type ${shape[0]})`,
      );
    }
  }
  for (const { raw, entry } of entries('regions')) {
    for (const f of Array.isArray(raw.features) ? (raw.features as unknown[]) : []) {
      if (typeof f === 'string' && !regionFeatures.has(f)) {
        at(
          entry,
          'features',
          `unknown feature ${JSON.stringify(f)}; known: ${[...regionFeatures].join(', ')} ` +
            '(extend with extra_region_features)',
        );
      }
    }
  }
  for (const kind of KINDS) {
    const first = new Map<string, string>();
    for (const { raw, entry } of entries(kind)) {
      if (typeof raw.slug !== 'string' || raw.slug === '') continue;
      const seen = first.get(raw.slug);
      if (seen !== undefined) at(entry, 'slug', `duplicate ${kind.slice(0, -1)} slug "${raw.slug}" (first at ${seen})`);
      else first.set(raw.slug, entry);
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
