// An immutable, pre-serialised view of one catalog version. Every catalog response is
// built from bytes made here once per version: a full list is one Buffer; a filtered
// list joins the pre-made bytes of its entries; nothing is serialised per request.
import { createHash } from 'node:crypto';
import { centsToDecimal, KINDS, type Catalog, type Image, type Kind, type Plan, type Region } from './model.js';

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
  entries: { images: Entry<Image>[]; plans: Entry<Plan>[]; regions: Entry<Region>[] };
  bySlug: Record<Kind, Map<string, Buffer>>;
}

// Field order is the spec's; only these fields are written (the model has no others
// except price_cents, which is written as price_monthly).
function imageJson(i: Image): string {
  return JSON.stringify({ slug: i.slug, name: i.name, distribution: i.distribution, version: i.version, type: i.type, min_disk_gb: i.min_disk_gb });
}

function planJson(p: Plan): string {
  const head = JSON.stringify({ id: p.id, slug: p.slug, vcpus: p.vcpus, memory_mb: p.memory_mb, disk_gb: p.disk_gb, transfer_tb: p.transfer_tb, type: p.type });
  // JSON.stringify would write 6 for 6.00; the spec wants two fraction digits.
  return `${head.slice(0, -1)},"price_monthly":${centsToDecimal(p.price_cents)}}`;
}

function regionJson(r: Region): string {
  return JSON.stringify({ slug: r.slug, name: r.name, available: r.available, features: r.features });
}

export function joinEntries(entries: readonly { json: string }[]): Buffer {
  return Buffer.from(`[${entries.map((e) => e.json).join(',')}]`, 'utf8');
}

export function buildSnapshot(catalog: Catalog, version: number, now = Date.now()): CatalogSnapshot {
  const entries = {
    images: catalog.images.map((value) => ({ value, json: imageJson(value) })),
    plans: catalog.plans.map((value) => ({ value, json: planJson(value) })),
    regions: catalog.regions.map((value) => ({ value, json: regionJson(value) })),
  };
  const lists = {} as Record<Kind, Buffer>;
  const bySlug = {} as Record<Kind, Map<string, Buffer>>;
  const hash = createHash('sha256');
  for (const kind of KINDS) {
    const list: Entry<{ slug: string }>[] = entries[kind];
    lists[kind] = joinEntries(list);
    bySlug[kind] = new Map(list.map((e) => [e.value.slug, Buffer.from(e.json, 'utf8')]));
    hash.update(lists[kind]);
  }
  hash.update(catalog.currency);
  const etag = `"v${version}-${hash.digest('hex').slice(0, 20)}"`;
  return { version, catalog, etag, builtAt: now, lists, entries, bySlug };
}
