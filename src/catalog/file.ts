// The catalog file format operators keep in version control (YAML or JSON; JSON is
// YAML too), declared by CatalogFile in schemas.ts. Validation collects problems with
// their location instead of stopping at the first, so one `infracat catalog validate`
// run shows what to fix: the schema's rules through Ajv, then the rules that relate
// fields and entries to each other (derived slugs, known sets, unique slugs). Its work
// is bounded whatever the document holds (an API client sends it): it stops after
// MAX_PROBLEMS problems, Ajv reports every error only of one entry at a time and only
// within the schema's caps, and every rule is one pass over the entries (and their lists).
import { Ajv, type ValidateFunction } from 'ajv';
import { parseDocument, stringify, type ScalarTag } from 'yaml';
import { jsonText, toModel, toWire } from './forms.js';
import { Amount, withCentsRule } from './money.js';
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
import { MAX_FIELD_ERRORS } from '../errors.js';
import { parseTimestamp } from '../tokens/rules.js';
import { errorPath, pointerOf, problemsFromErrors, type CatalogProblem } from './problems.js';
import { CatalogFile, FILE_ENTITIES } from './schemas.js';
import { ENTRIES_PER_TURN, inTurns, toEnd, type Steps } from './turns.js';

export type { CatalogProblem };

/** Validation stops once it has found this many problems: as many as a problem body shows. */
export const MAX_PROBLEMS = MAX_FIELD_ERRORS;

export type ParseResult =
  | { ok: true; catalog: Catalog }
  | {
      ok: false;
      /** At most MAX_PROBLEMS. */
      problems: CatalogProblem[];
      /** Validation stopped before the end of the document: there may be more problems. */
      more?: boolean;
    };

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Problems as they are found: at most MAX_PROBLEMS; one more sets `more` (and the rules stop looking). */
class Found {
  readonly problems: CatalogProblem[] = [];
  more = false;
  add(...problems: CatalogProblem[]): void {
    for (const p of problems) {
      if (this.problems.length < MAX_PROBLEMS) this.problems.push(p);
      else this.more = true;
    }
  }
}

/** A schema validated two ways: every error (within the schema's caps), or the first. */
interface Check {
  schema: { properties: Record<string, object> };
  every: ValidateFunction;
  /** Compiled when first needed: only a value over a cap needs it. */
  first: () => ValidateFunction;
}

// Compiled on first use: only the CLI and a first start's seeding read catalog files.
let checks: { file: Check; entries: Record<Kind, Check> } | undefined;
function compileChecks(): NonNullable<typeof checks> {
  // verbose: errors carry their schema (its problem messages) and the offending value.
  // multipleOfPrecision: a price's float noise is tolerated as parseMoney tolerates it.
  // useDefaults: absent settings take their declared defaults.
  const options = { verbose: true, useDefaults: true, multipleOfPrecision: 6, strict: false };
  const every = new Ajv({ ...options, allErrors: true });
  const first = new Ajv(options);
  const check = (schema: Check['schema']): Check => {
    let compiled: ValidateFunction | undefined;
    const ruled = withCentsRule(schema);
    return { schema, every: every.compile(ruled), first: () => (compiled ??= first.compile(ruled)) };
  };
  // The document around its entries (settings, the lists and their caps): each entry is
  // validated on its own, so that validation can stop between two of them.
  const lists = Object.fromEntries(KINDS.map((k) => [k, { ...CatalogFile.properties[k], items: {} }]));
  return {
    file: check({ ...CatalogFile, properties: { ...CatalogFile.properties, ...lists } }),
    entries: {
      images: check(FILE_ENTITIES.images),
      plans: check(FILE_ENTITIES.plans),
      regions: check(FILE_ENTITIES.regions),
    },
  };
}

/**
 * Whether Ajv's every-error run over `value` stays small: a closed mapping holds no more
 * fields than its schema declares and each of its lists no more items than its maxItems
 * (past either, Ajv would go on to report every unknown field and every bad item).
 */
function withinCaps(schema: Check['schema'], value: unknown): boolean {
  if (!isObject(value)) return true;
  const declared = Object.keys(schema.properties).length;
  let fields = 0;
  for (const key in value) {
    if (++fields > declared) return false;
    const list = value[key];
    const max = (schema.properties[key] as { maxItems?: number } | undefined)?.maxItems;
    if (Array.isArray(list) && max !== undefined && list.length > max) return false;
  }
  return true;
}

/**
 * Validation is a generator (turns.ts) that pauses once it has looked at about SLICE values
 * since its last pause: an entry counts as ENTRY_VALUES, plus the items of its lists (a
 * region may list every plan), so that a slice is about as much work whatever the entries
 * hold. The API runs it a slice per event-loop turn (validateCatalogInTurns), the CLI to
 * the end at once (validateCatalog).
 */
const ENTRY_VALUES = 8;
const SLICE = ENTRIES_PER_TURN * ENTRY_VALUES;
/** The lists an entry may hold: a region's offers and features. */
const ENTRY_LISTS = ['plans', 'images', 'features'];

class Pace {
  private since = 0;
  /**
   * Counts an entry about to be (or just) looked at, with the items of its lists when the
   * rule looks at them (`entry` given); true when it is time to pause.
   */
  after(entry?: unknown): boolean {
    this.since += ENTRY_VALUES;
    if (isObject(entry)) {
      for (const key of ENTRY_LISTS) {
        const list = entry[key];
        if (Array.isArray(list)) this.since += list.length;
      }
    }
    if (this.since < SLICE) return false;
    this.since = 0;
    return true;
  }
}

/**
 * The schema's rules: the document around its entries, then each entry. Returns what the
 * schema refused (see checkCatalog); stops at a value over a cap, or once `found` is full.
 */
function* schemaProblems(
  data: unknown,
  found: Found,
  pace: Pace,
  label: (kind: string, i: number) => string | undefined,
): Steps<Set<string>> {
  checks ??= compileChecks();
  const refused = new Set<string>();
  const check = ({ schema, every, first }: Check, value: unknown, at: string[]): void => {
    const bounded = withinCaps(schema, value);
    const validate = bounded ? every : first();
    if (validate(value)) return;
    const errors = validate.errors ?? [];
    for (const e of errors) {
      const path = errorPath(e, at).slice(0, 3);
      path.forEach((_, i) => refused.add(`/${path.slice(0, i + 1).join('/')}`));
    }
    found.add(...problemsFromErrors(errors, label, at));
    // Only the first problem of this value is known: validation stops here.
    if (!bounded) found.more = true;
  };
  check(checks.file, data, []);
  if (!isObject(data)) return refused;
  for (const kind of KINDS) {
    const list = data[kind];
    if (!Array.isArray(list)) continue;
    for (let i = 0; i < list.length && !found.more; i++) {
      check(checks.entries[kind], list[i], [kind, String(i)]);
      if (pace.after(list[i])) yield;
    }
  }
  return refused;
}

/**
 * The first key that appears twice in one object of `text`, which must be valid JSON (its
 * strings closed, its brackets balanced); null when every key is unique. JSON.parse keeps
 * the last of two equal keys without a word; a catalog file refuses them, as its YAML
 * reading does. One pass over the text.
 */
export function duplicateJsonKey(text: string): string | null {
  // Per open object its keys so far; null for an open array.
  const open: (Set<string> | null)[] = [];
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let end = i + 1;
      let escaped = false;
      for (let ch = text.charCodeAt(end); ch !== 0x22; ch = text.charCodeAt(end)) {
        if (ch === 0x5c) {
          escaped = true;
          end += 1;
        }
        end += 1;
      }
      if (keyNext) {
        const raw = text.slice(i + 1, end);
        const key = escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
        const keys = open.at(-1)!;
        if (keys.has(key)) return key;
        keys.add(key);
        keyNext = false;
      }
      i = end;
    } else if (c === 0x7b) {
      open.push(new Set());
      keyNext = true;
    } else if (c === 0x5b) open.push(null);
    else if (c === 0x7d || c === 0x5d) {
      open.pop();
      keyNext = false;
    } else if (c === 0x2c) keyNext = open.at(-1) instanceof Set;
  }
  return null;
}

/** A file's text as data: JSON by JSON.parse (a catalog of 20,000 plans in milliseconds), anything else as YAML. */
function readText(
  text: string,
): { ok: true; data: unknown } | { ok: false; problems: CatalogProblem[]; more: boolean } {
  if (/^\s*[[{]/.test(text)) {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
    // Not JSON after all (a YAML flow mapping such as `{currency: USD}`): read as YAML below.
    if (data !== undefined) {
      const key = duplicateJsonKey(text);
      if (key === null) return { ok: true, data };
      const message = `Map keys must be unique: ${JSON.stringify(key)} appears twice in one object`;
      return { ok: false, problems: [{ entry: 'file', pointer: '', message }], more: false };
    }
  }
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // The whole message: with prettyErrors it ends in the offending line and a caret under the spot.
    return {
      ok: false,
      problems: doc.errors
        .slice(0, MAX_PROBLEMS)
        .map((e) => ({ entry: 'file', pointer: '', message: e.message.trimEnd() })),
      more: doc.errors.length > MAX_PROBLEMS,
    };
  }
  return { ok: true, data: doc.toJS() as unknown };
}

export function parseCatalogText(text: string, now = Date.now()): ParseResult {
  const read = readText(text);
  if (!read.ok) return read;
  return validateCatalog(read.data, now);
}

/**
 * Validates a parsed document (YAML/JSON data) against every catalog rule, up to
 * MAX_PROBLEMS problems. `now` decides which entries are already sunset (a successor must not be).
 */
export function validateCatalog(data: unknown, now = Date.now()): ParseResult {
  return toEnd(checkCatalog(data, now));
}

/** validateCatalog a slice of entries per event-loop turn: a server answers other requests meanwhile. */
export function validateCatalogInTurns(data: unknown, now = Date.now()): Promise<ParseResult> {
  return inTurns(checkCatalog(data, now));
}

function* checkCatalog(data: unknown, now: number): Steps<ParseResult> {
  const label = (kind: string, i: number): string | undefined => {
    const list = isObject(data) && (KINDS as readonly string[]).includes(kind) ? data[kind] : undefined;
    if (!Array.isArray(list)) return undefined;
    const slug = isObject(list[i]) ? list[i].slug : undefined;
    return typeof slug === 'string' && slug !== '' ? `${kind}[${i}] (${slug})` : `${kind}[${i}]`;
  };
  const found = new Found();
  // Values the schema refused, and what holds them (`/plans/3/slug`, `/plans/3`, `/plans`,
  // `/extra_image_types` for one bad word): the rules below leave them alone.
  const pace = new Pace();
  const refused = yield* schemaProblems(data, found, pace, label);
  if (isObject(data) && !found.more)
    yield* crossFieldProblems(data, refused, (kind, i) => label(kind, i) ?? kind, now, found, pace);
  const { problems, more } = found;
  if (problems.length > 0) return { ok: false, problems, more };
  // The model form, an entry at a time: the settings first, then each list.
  const raw = data as Raw;
  const catalog = toModel(CatalogFile, { ...raw, ...Object.fromEntries(KINDS.map((k) => [k, []])) }) as Catalog;
  for (const kind of KINDS) {
    const list = Array.isArray(raw[kind]) ? (raw[kind] as unknown[]) : [];
    const models: unknown[] = [];
    for (const entry of list) {
      models.push(toModel(FILE_ENTITIES[kind], entry));
      if (pace.after(entry)) yield;
    }
    (catalog as Record<Kind, unknown[]>)[kind] = models;
  }
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

/**
 * The rules that relate fields and entries to each other, over fields the schema accepted,
 * each one pass over the entries (references resolved through maps); they stop once
 * `found` has more than it keeps.
 */
function* crossFieldProblems(
  data: Raw,
  refused: Set<string>,
  label: (kind: string, i: number) => string,
  now: number,
  found: Found,
  pace: Pace,
): Steps<void> {
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
    found.add({ entry: e.entry, field, pointer: pointerOf([kind, e.index, field, ...more]), message });
  const extension = (field: string, builtin: readonly string[]): Set<string> =>
    new Set([
      ...builtin,
      ...(refused.has(`/${field}`) || !Array.isArray(data[field]) ? [] : (data[field] as string[])),
    ]);
  const imageTypes = extension('extra_image_types', BUILTIN_IMAGE_TYPES);
  const regionFeatures = extension('extra_region_features', BUILTIN_REGION_FEATURES);

  for (const e of entries('images')) {
    if (pace.after()) yield;
    const names = e.accepted('distribution', 'version', 'slug') as string[] | undefined;
    if (names !== undefined && names[2] !== imageSlug(names[0]!, names[1]!)) {
      at('images', e, 'slug', `must be "${imageSlug(names[0]!, names[1]!)}" (lowercase distribution-version)`);
    }
    const [type] = (e.accepted('type') ?? []) as string[];
    if (type !== undefined && !imageTypes.has(type))
      at('images', e, 'type', `must be one of ${[...imageTypes].join(', ')} (extend with extra_image_types)`);
  }
  for (const e of entries('plans')) {
    if (pace.after()) yield;
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
    if (pace.after(e.raw)) yield;
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

  if (found.more) return;

  // Slugs: unique per kind; the first entry of each is what references resolve to.
  const bySlug = {} as Record<Kind, Map<string, EntryOf>>;
  for (const kind of KINDS) {
    bySlug[kind] = new Map();
    for (const e of entries(kind)) {
      if (pace.after()) yield;
      if (typeof e.raw.slug !== 'string' || e.raw.slug === '') continue;
      const seen = bySlug[kind].get(e.raw.slug);
      if (seen !== undefined)
        at(kind, e, 'slug', `duplicate ${kind.slice(0, -1)} slug "${e.raw.slug}" (first at ${seen.entry})`);
      else bySlug[kind].set(e.raw.slug, e);
    }
  }

  if (found.more) return;

  // What a region offers: slugs of existing plans and images.
  for (const e of entries('regions')) {
    if (pace.after(e.raw)) yield;
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
    if (found.more) return;
    const instants = new Map<EntryOf, { deprecated?: number; sunset?: number }>();
    for (const e of entries(kind)) {
      if (pace.after()) yield;
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
    const successorOf = (e: EntryOf): EntryOf | undefined =>
      typeof e.raw.successor === 'string' ? bySlug[kind].get(e.raw.successor) : undefined;
    const cyclic = onCycles(entries(kind), successorOf);
    for (const e of entries(kind)) {
      if (pace.after()) yield;
      if (found.more) return;
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
        const onCycle = cyclic.get(e);
        if (onCycle !== undefined) at(kind, e, 'successor', `successors form a cycle: ${cycleText(onCycle)}`);
      }
    }
  }
}

/** A cycle (its entries in successor order) and where an entry is on it. */
interface OnCycle<T> {
  cycle: readonly T[];
  at: number;
}

/**
 * The entries on a cycle of successors, in one pass: each entry has at most one successor,
 * so a walk from an entry not yet seen ends, meets an entry an earlier walk settled, or
 * comes back to an entry of its own walk (that one and those after it form a cycle).
 */
function onCycles<T>(entries: readonly T[], successorOf: (e: T) => T | undefined): Map<T, OnCycle<T>> {
  const settled = new Set<T>();
  const cyclic = new Map<T, OnCycle<T>>();
  for (const start of entries) {
    const walk: T[] = [];
    const onWalk = new Set<T>();
    let cursor: T | undefined = start;
    while (cursor !== undefined && !settled.has(cursor) && !onWalk.has(cursor)) {
      walk.push(cursor);
      onWalk.add(cursor);
      cursor = successorOf(cursor);
    }
    if (cursor !== undefined && onWalk.has(cursor)) {
      const cycle = walk.slice(walk.indexOf(cursor));
      cycle.forEach((e, at) => cyclic.set(e, { cycle, at }));
    }
    for (const e of walk) settled.add(e);
  }
  return cyclic;
}

/** How many slugs of a cycle its problem names: the first ones and the way back. */
const CYCLE_SHOWN = 8;

/** A cycle from an entry back to it: `a -> b -> a`, or `a -> b -> ... -> z -> a (26 entries)` when long. */
function cycleText({ cycle, at }: OnCycle<EntryOf>): string {
  const slug = (i: number) => String(cycle[(at + i) % cycle.length]!.raw.slug);
  const n = cycle.length;
  if (n <= CYCLE_SHOWN) return [...Array.from({ length: n }, (_, i) => slug(i)), slug(0)].join(' -> ');
  const shown = Array.from({ length: CYCLE_SHOWN }, (_, i) => slug(i));
  return `${[...shown, '...', slug(n - 1), slug(0)].join(' -> ')} (${n} entries)`;
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
