// An immutable, pre-serialised view of one catalog version at one moment. Every catalog
// response is built from bytes made here once: a full list is one Buffer; a filtered
// list joins the pre-made bytes of its entries; nothing is serialised per request, and
// what the filters need (which region offers what) is computed here too. Sunset is
// time-based: the snapshot says until when it holds (the next sunset_at), and the
// service builds the next one from the same catalog then, without storage.
import { createHash } from 'node:crypto';
import { jsonText, toWire } from './forms.js';
import { KINDS, type Catalog, type Kind } from './model.js';
import { ENTITIES } from './schemas.js';

export interface Entry<T> {
  value: T;
  json: string;
}

/** One entry as its single-item GET answers it. */
export interface Item {
  body: Buffer;
  /** Deprecation (RFC 9745), Sunset (RFC 8594) and the successor Link, when the file sets them. */
  headers: Record<string, string>;
  /** Past its sunset_at: the GET answers 410 Gone (with the same headers). */
  gone: boolean;
}

/** The catalog kinds a region offers. */
export type Offered = 'plans' | 'images';

export interface CatalogSnapshot {
  version: number;
  catalog: Catalog;
  /** Strong validator of this snapshot, quoted: `"v3-1f2e..."`. */
  etag: string;
  /** When this instance built the snapshot (ms since epoch). */
  builtAt: number;
  /** The next sunset_at after builtAt: from then on this snapshot is out of date. Infinity: never. */
  validUntil: number;
  /** Every live (not sunset) entry of a kind, in the documented order, as one JSON array. */
  lists: Record<Kind, Buffer>;
  /** The live entries, each with its JSON. */
  entries: { [K in Kind]: Entry<Catalog[K][number]>[] };
  /** Every entry by slug, sunset ones included (410). */
  bySlug: Record<Kind, Map<string, Item>>;
  /** For each live plan and image, the live regions that offer it. */
  regionsOf: Record<Offered, Map<string, ReadonlySet<string>>>;
}

/** One entry's wire bytes: the fields of its schema, in the schema's order. */
const wireJson = (kind: Kind, value: unknown): string => jsonText(toWire(ENTITIES[kind], value));

export function joinEntries(entries: readonly { json: string }[]): Buffer {
  return Buffer.from(`[${entries.map((e) => e.json).join(',')}]`, 'utf8');
}

/** The path of an entry's single-item GET. */
export const itemPath = (kind: Kind, slug: string): string => `/api/v1/${kind}/${encodeURIComponent(slug)}`;

interface Lifecycle {
  deprecated_at?: string;
  sunset_at?: string;
  successor?: string;
}

// Validated RFC 3339 text (file.ts): Date.parse reads it exactly.
const instant = (text: string | undefined): number | undefined => (text === undefined ? undefined : Date.parse(text));

function lifecycleHeaders(kind: Kind, entry: Lifecycle): Record<string, string> {
  const headers: Record<string, string> = {};
  const deprecated = instant(entry.deprecated_at);
  const sunset = instant(entry.sunset_at);
  // RFC 9745: a Structured Field Date, `@` + Unix seconds.
  if (deprecated !== undefined) headers.deprecation = `@${Math.floor(deprecated / 1000)}`;
  // RFC 8594: an HTTP-date (IMF-fixdate, which toUTCString writes).
  if (sunset !== undefined) headers.sunset = new Date(sunset).toUTCString();
  if (entry.successor !== undefined) headers.link = `<${itemPath(kind, entry.successor)}>; rel="successor-version"`;
  return headers;
}

export function buildSnapshot(catalog: Catalog, version: number, now = Date.now()): CatalogSnapshot {
  const entries = {} as CatalogSnapshot['entries'];
  const lists = {} as Record<Kind, Buffer>;
  const bySlug = {} as Record<Kind, Map<string, Item>>;
  const hash = createHash('sha256');
  let validUntil = Infinity;
  for (const kind of KINDS) {
    const live: Entry<{ slug: string }>[] = [];
    bySlug[kind] = new Map();
    for (const value of catalog[kind] as ({ slug: string } & Lifecycle)[]) {
      const json = wireJson(kind, value);
      const sunset = instant(value.sunset_at);
      const gone = sunset !== undefined && sunset <= now;
      if (sunset !== undefined && !gone) validUntil = Math.min(validUntil, sunset);
      if (!gone) live.push({ value, json });
      bySlug[kind].set(value.slug, { body: Buffer.from(json, 'utf8'), headers: lifecycleHeaders(kind, value), gone });
    }
    (entries as Record<Kind, unknown>)[kind] = live;
    lists[kind] = joinEntries(live);
    hash.update(lists[kind]);
  }
  hash.update(catalog.currency);
  const etag = `"v${version}-${hash.digest('hex').slice(0, 20)}"`;
  return {
    version,
    catalog,
    etag,
    builtAt: now,
    validUntil,
    lists,
    entries,
    bySlug,
    regionsOf: offeredIn(entries),
  };
}

/** For each live plan and image, the live regions offering it (a region without a list offers all). */
function offeredIn(entries: CatalogSnapshot['entries']): Record<Offered, Map<string, ReadonlySet<string>>> {
  const result = {} as Record<Offered, Map<string, ReadonlySet<string>>>;
  for (const kind of ['plans', 'images'] as const) {
    const map = new Map<string, Set<string>>(entries[kind].map((e) => [e.value.slug, new Set<string>()]));
    // One pass over each region's offers (not every plan or image against each offer list).
    for (const { value: region } of entries.regions) {
      const offered = region[kind];
      if (offered === undefined) for (const regions of map.values()) regions.add(region.slug);
      else for (const slug of offered) map.get(slug)?.add(region.slug);
    }
    result[kind] = map;
  }
  return result;
}
