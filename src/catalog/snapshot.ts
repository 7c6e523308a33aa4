// An immutable, pre-serialised view of one catalog version. Every catalog response is
// built from bytes made here once per version: a full list is one Buffer; a filtered
// list joins the pre-made bytes of its entries; nothing is serialised per request.
import { createHash } from 'node:crypto';
import { jsonText, toWire } from './forms.js';
import { KINDS, type Catalog, type Kind } from './model.js';
import { ENTITIES } from './schemas.js';

export interface Entry<T> {
  value: T;
  json: string;
}

export interface CatalogSnapshot {
  version: number;
  catalog: Catalog;
  /** Strong validator of this snapshot, quoted: `"v3-1f2e..."`. */
  etag: string;
  /** When this instance built the snapshot (ms since epoch). */
  builtAt: number;
  lists: Record<Kind, Buffer>;
  entries: { [K in Kind]: Entry<Catalog[K][number]>[] };
  bySlug: Record<Kind, Map<string, Buffer>>;
}

/** One entry's wire bytes: the fields of its schema, in the schema's order. */
const wireJson = (kind: Kind, value: unknown): string => jsonText(toWire(ENTITIES[kind], value));

export function joinEntries(entries: readonly { json: string }[]): Buffer {
  return Buffer.from(`[${entries.map((e) => e.json).join(',')}]`, 'utf8');
}

export function buildSnapshot(catalog: Catalog, version: number, now = Date.now()): CatalogSnapshot {
  const entries = {} as CatalogSnapshot['entries'];
  const lists = {} as Record<Kind, Buffer>;
  const bySlug = {} as Record<Kind, Map<string, Buffer>>;
  const hash = createHash('sha256');
  for (const kind of KINDS) {
    const list: Entry<{ slug: string }>[] = catalog[kind].map((value) => ({ value, json: wireJson(kind, value) }));
    (entries as Record<Kind, unknown>)[kind] = list;
    lists[kind] = joinEntries(list);
    bySlug[kind] = new Map(list.map((e) => [e.value.slug, Buffer.from(e.json, 'utf8')]));
    hash.update(lists[kind]);
  }
  hash.update(catalog.currency);
  const etag = `"v${version}-${hash.digest('hex').slice(0, 20)}"`;
  return { version, catalog, etag, builtAt: now, lists, entries, bySlug };
}
