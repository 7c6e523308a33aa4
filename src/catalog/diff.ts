// What `catalog apply` would change: entries added, removed and changed (field by
// field, the file's fields: deprecation and offers included), per kind, plus catalog
// settings. Entries are matched by slug.
import { toWire } from './forms.js';
import { Amount } from './money.js';
import { KINDS, type Catalog, type Kind } from './model.js';
import { CatalogSettings, FILE_ENTITIES } from './schemas.js';
import { inTurns, pauseAfter, toEnd, type Steps } from './turns.js';

export interface FieldChange {
  field: string;
  from: unknown;
  to: unknown;
}

export interface CatalogDiff {
  settings: FieldChange[];
  added: Record<Kind, string[]>;
  removed: Record<Kind, string[]>;
  changed: Record<Kind, { slug: string; changes: FieldChange[] }[]>;
}

// Fields are compared and shown in the file's form: price_monthly "6.00", as the operator wrote it.
const display = (v: unknown): unknown => (v instanceof Amount ? v.toString() : v);
const SETTINGS = Object.keys(CatalogSettings.properties) as (keyof typeof CatalogSettings.properties)[];

export function diffCatalogs(before: Catalog | null, after: Catalog): CatalogDiff {
  return toEnd(diffSteps(before, after));
}

/** diffCatalogs a slice of entries per event-loop turn (turns.ts): a server answers other requests meanwhile. */
export function diffCatalogsInTurns(before: Catalog | null, after: Catalog): Promise<CatalogDiff> {
  return inTurns(diffSteps(before, after));
}

function* diffSteps(before: Catalog | null, after: Catalog): Steps<CatalogDiff> {
  const diff: CatalogDiff = {
    settings: [],
    added: { images: [], plans: [], regions: [] },
    removed: { images: [], plans: [], regions: [] },
    changed: { images: [], plans: [], regions: [] },
  };
  for (const key of SETTINGS) {
    const from = before?.[key] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(after[key])) diff.settings.push({ field: key, from, to: after[key] });
  }
  for (const kind of KINDS) {
    const wire = (entry: unknown) => toWire(FILE_ENTITIES[kind], entry) as Record<string, unknown>;
    // Matched by slug through a map: one pass over each side.
    const old = new Map<string, unknown>();
    for (const [i, entry] of (before?.[kind] ?? []).entries()) {
      old.set(entry.slug, entry);
      if (pauseAfter(i)) yield;
    }
    for (const [i, next] of after[kind].entries()) {
      if (pauseAfter(i)) yield;
      const slug = next.slug;
      const prev = old.get(slug);
      old.delete(slug);
      if (prev === undefined) {
        diff.added[kind].push(slug);
        continue;
      }
      const [from, to] = [wire(prev), wire(next)];
      const changes: FieldChange[] = [];
      // Every field either side has (a file-only field may be set or cleared).
      for (const field of new Set([...Object.keys(to), ...Object.keys(from)])) {
        const [a, b] = [display(from[field]) ?? null, display(to[field]) ?? null];
        if (JSON.stringify(a) !== JSON.stringify(b)) changes.push({ field, from: a, to: b });
      }
      if (changes.length > 0) diff.changed[kind].push({ slug, changes });
    }
    diff.removed[kind].push(...old.keys());
  }
  return diff;
}

/** The diff in brief (slugs and setting names, no values): what the audit event of an apply records. */
/** Most slugs an audit event names per list (a catalog may add 25,000 plans at once). */
export const SUMMARY_SLUGS_MAX = 100;

/**
 * The diff in brief, for the audit event: the settings changed, and the first
 * SUMMARY_SLUGS_MAX slugs added, removed and changed per kind, with `counts` of each and
 * `slugs_truncated: true` when a list was cut.
 */
export function diffSummary(d: CatalogDiff): Record<string, unknown> {
  let truncated = false;
  const first = (all: string[]) => {
    if (all.length > SUMMARY_SLUGS_MAX) truncated = true;
    return all.slice(0, SUMMARY_SLUGS_MAX);
  };
  const slugs = (pick: (k: Kind) => string[]) => Object.fromEntries(KINDS.map((k) => [k, first(pick(k))]));
  return {
    settings: d.settings.map((s) => s.field),
    added: slugs((k) => d.added[k]),
    removed: slugs((k) => d.removed[k]),
    changed: slugs((k) => d.changed[k].map((c) => c.slug)),
    counts: changeCounts(d),
    ...(truncated ? { slugs_truncated: true } : {}),
  };
}

/** The diff counted: settings changed, and entries added, removed and changed per kind (what a revision records). */
export interface ChangeCounts {
  settings: number;
  added: Record<Kind, number>;
  removed: Record<Kind, number>;
  changed: Record<Kind, number>;
}

export function changeCounts(d: CatalogDiff): ChangeCounts {
  const per = (r: Record<Kind, unknown[]>) =>
    Object.fromEntries(KINDS.map((k) => [k, r[k].length])) as Record<Kind, number>;
  return { settings: d.settings.length, added: per(d.added), removed: per(d.removed), changed: per(d.changed) };
}

/** How many entries the diff removes, over every kind. */
export function removedCount(d: CatalogDiff): number {
  return KINDS.reduce((n, k) => n + d.removed[k].length, 0);
}

export function isEmptyDiff(d: CatalogDiff): boolean {
  return (
    d.settings.length === 0 && KINDS.every((k) => d.added[k].length + d.removed[k].length + d.changed[k].length === 0)
  );
}

/** The diff as lines an operator reads in a terminal or a CI log. */
export function formatDiff(d: CatalogDiff): string {
  if (isEmptyDiff(d)) return 'no changes\n';
  const lines: string[] = [];
  for (const s of d.settings) lines.push(`~ ${s.field}: ${JSON.stringify(s.from)} -> ${JSON.stringify(s.to)}`);
  for (const kind of KINDS) {
    for (const slug of d.added[kind]) lines.push(`+ ${kind} ${slug}`);
    for (const slug of d.removed[kind]) lines.push(`- ${kind} ${slug}`);
    for (const c of d.changed[kind]) {
      const fields = c.changes.map((f) => `${f.field} ${JSON.stringify(f.from)} -> ${JSON.stringify(f.to)}`);
      lines.push(`~ ${kind} ${c.slug}: ${fields.join(', ')}`);
    }
  }
  lines.push(summaryLine(d));
  return `${lines.join('\n')}\n`;
}

/** The diff in one line: `2 added, 1 changed, 0 removed` (what a revision records as its summary). */
export function summaryLine(d: CatalogDiff): string {
  const count = (r: Record<Kind, unknown[]>): number => KINDS.reduce((n, k) => n + r[k].length, 0);
  const settings = d.settings.length > 0 ? `, ${d.settings.length} setting(s) changed` : '';
  return `${count(d.added)} added, ${count(d.changed)} changed, ${count(d.removed)} removed${settings}`;
}
