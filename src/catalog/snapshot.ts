// An immutable, pre-serialised view of one catalog version at one moment. Every catalog
// response is built from bytes made here once: a full list is one Buffer; a filtered
// list joins the pre-made bytes of its entries the first time its filter is asked for,
// and is kept for the next requests (FilteredLists, bounded); nothing is serialised per
// request. What the filters need (which region offers what) is made here too, in one
// pass over the catalog: building a snapshot is linear in the document. Sunset is
// time-based: the snapshot says until when it holds (the next sunset_at), and the
// service builds the next one from the same catalog then, without storage.
import { createHash } from 'node:crypto';
import { jsonText, toWire } from './forms.js';
import { KINDS, type Catalog, type Kind } from './model.js';
import { ENTITIES } from './schemas.js';
import { inTurns, pauseAfter, toEnd, type Steps } from './turns.js';

export interface Entry<T> {
  value: T;
  json: string;
}

/** One entry as its single-item GET answers it. */
export interface Item<T = unknown> {
  value: T;
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
  bySlug: { [K in Kind]: Map<string, Item<Catalog[K][number]>> };
  /**
   * What each live region offers, by region slug: the slugs its list names, or null when it
   * has no list (it offers every plan or image). As large as the lists the document holds,
   * never plans times regions.
   */
  offers: Record<Offered, Map<string, ReadonlySet<string> | null>>;
  /** The filtered lists of this snapshot, each made once (see FilteredLists). */
  filtered: FilteredLists;
}

/**
 * The most filtered lists (`?region=fra1`, `?type=general&min_vcpus=4`...) a snapshot keeps,
 * and the most bytes they may hold together: past either, the least recently used goes. A
 * client that cycles through filters costs a list's computation per request, as it would
 * without the memo, and never more memory than this.
 */
export const FILTERED_LISTS_MAX = 256;
export const FILTERED_BYTES_MAX = 128 * 1024 * 1024;

/**
 * Filtered lists by their normalised filter, least recently used first out. Each list is
 * computed once per snapshot (catalog version) and filter while it is kept; `builds` counts
 * the computations.
 */
export class FilteredLists {
  private readonly lists = new Map<string, Buffer>();
  private bytes = 0;
  /** How many lists were computed (a request answered from the memo adds none). */
  builds = 0;

  constructor(
    private readonly maxLists = FILTERED_LISTS_MAX,
    private readonly maxBytes = FILTERED_BYTES_MAX,
  ) {}

  /** The list kept for `key`, or the one `build` makes (kept when it fits the bounds). */
  get(key: string, build: () => Buffer): Buffer {
    const kept = this.lists.get(key);
    if (kept !== undefined) {
      // Map keeps insertion order: moved to the end, it is the most recently used.
      this.lists.delete(key);
      this.lists.set(key, kept);
      return kept;
    }
    const body = build();
    this.builds += 1;
    if (body.length > this.maxBytes) return body;
    this.lists.set(key, body);
    this.bytes += body.length;
    for (const [oldest, list] of this.lists) {
      if (this.lists.size <= this.maxLists && this.bytes <= this.maxBytes) break;
      this.lists.delete(oldest);
      this.bytes -= list.length;
    }
    return body;
  }

  /** How many lists are kept, and their bytes. */
  get size(): { lists: number; bytes: number } {
    return { lists: this.lists.size, bytes: this.bytes };
  }
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
  return toEnd(snapshotSteps(catalog, version, now));
}

/** buildSnapshot a slice of entries per event-loop turn (turns.ts): a server answers other requests meanwhile. */
export function buildSnapshotInTurns(catalog: Catalog, version: number, now = Date.now()): Promise<CatalogSnapshot> {
  return inTurns(snapshotSteps(catalog, version, now));
}

function* snapshotSteps(catalog: Catalog, version: number, now: number): Steps<CatalogSnapshot> {
  const entries = {} as CatalogSnapshot['entries'];
  const lists = {} as Record<Kind, Buffer>;
  const bySlug = {} as Record<Kind, Map<string, Item>>;
  const hash = createHash('sha256');
  let validUntil = Infinity;
  for (const kind of KINDS) {
    const live: Entry<{ slug: string }>[] = [];
    bySlug[kind] = new Map();
    for (const [i, value] of (catalog[kind] as ({ slug: string } & Lifecycle)[]).entries()) {
      if (pauseAfter(i)) yield;
      const json = wireJson(kind, value);
      const sunset = instant(value.sunset_at);
      const gone = sunset !== undefined && sunset <= now;
      if (sunset !== undefined && !gone) validUntil = Math.min(validUntil, sunset);
      if (!gone) live.push({ value, json });
      bySlug[kind].set(value.slug, {
        value,
        body: Buffer.from(json, 'utf8'),
        headers: lifecycleHeaders(kind, value),
        gone,
      });
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
    bySlug: bySlug as CatalogSnapshot['bySlug'],
    offers: offersOf(entries.regions),
    filtered: new FilteredLists(),
  };
}

/** What each live region offers: its list as a set, or null (no list: everything). One pass over the lists. */
function offersOf(regions: CatalogSnapshot['entries']['regions']): CatalogSnapshot['offers'] {
  const result = { plans: new Map(), images: new Map() } as CatalogSnapshot['offers'];
  for (const { value: region } of regions) {
    for (const kind of ['plans', 'images'] as const) {
      const listed = region[kind];
      result[kind].set(region.slug, listed === undefined ? null : new Set(listed));
    }
  }
  return result;
}

/** Whether the live region `region` offers the plan or image `slug`. */
export function offeredIn(snap: CatalogSnapshot, kind: Offered, region: string, slug: string): boolean {
  const offered = snap.offers[kind].get(region);
  return offered === null || (offered !== undefined && offered.has(slug));
}

/** The live regions offering a plan or image: one look per region. */
export function regionsOffering(snap: CatalogSnapshot, kind: Offered, slug: string): Set<string> {
  const regions = new Set<string>();
  for (const region of snap.offers[kind].keys()) if (offeredIn(snap, kind, region, slug)) regions.add(region);
  return regions;
}

/**
 * What any of `regions` (live region slugs) offers of a kind: the union of their lists, or
 * null when one of them offers everything. As much work as those lists are long.
 */
export function offeredInAny(snap: CatalogSnapshot, kind: Offered, regions: Iterable<string>): Set<string> | null {
  const union = new Set<string>();
  for (const region of regions) {
    const offered = snap.offers[kind].get(region);
    if (offered === null) return null;
    for (const slug of offered ?? []) union.add(slug);
  }
  return union;
}
