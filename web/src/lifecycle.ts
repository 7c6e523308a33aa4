// Deprecation badges of catalog entries, decided without the DOM. The lists answer the
// spec's fields only, so the lifecycle of each entry comes from the catalog document
// (GET /api/v1/catalog, catalog:read). Unit-tested in test/console/logic.test.ts.
import type { CatalogEntry, CatalogKind } from './catalog-wire.js';
import { shortDate } from './format.js';

export type Lifecycles = Record<CatalogKind, ReadonlyMap<string, CatalogEntry>>;

const KINDS: readonly CatalogKind[] = ['images', 'plans', 'regions'];

/** No lifecycle known: what a token without catalog:read (or a failed fetch) gets. */
export function noLifecycles(): Lifecycles {
  return { images: new Map(), plans: new Map(), regions: new Map() };
}

const isInstant = (v: unknown): v is string => typeof v === 'string' && Number.isFinite(Date.parse(v));

/**
 * The deprecated entries of a catalog document, by kind and slug. The document is read
 * field by field and anything not as expected is left out: a badge is shown only for an
 * entry whose deprecation can be read exactly (a wrong badge is worse than none).
 */
export function lifecyclesOf(doc: unknown): Lifecycles {
  const found = noLifecycles();
  if (typeof doc !== 'object' || doc === null) return found;
  for (const kind of KINDS) {
    const list: unknown = (doc as Record<string, unknown>)[kind];
    if (!Array.isArray(list)) continue;
    const byslug = found[kind] as Map<string, CatalogEntry>;
    for (const item of list as unknown[]) {
      if (typeof item !== 'object' || item === null) continue;
      const { slug, deprecated_at, sunset_at, successor } = item as Record<string, unknown>;
      if (typeof slug !== 'string' || !isInstant(deprecated_at)) continue;
      if (sunset_at !== undefined && !isInstant(sunset_at)) continue;
      if (successor !== undefined && typeof successor !== 'string') continue;
      byslug.set(slug, {
        slug,
        deprecated_at,
        ...(sunset_at === undefined ? {} : { sunset_at }),
        ...(successor === undefined ? {} : { successor }),
      });
    }
  }
  return found;
}

/**
 * The badge of an entry: "Deprecated", or "Deprecated from <date>" while the deprecation
 * is still ahead, then what replaces it and when it goes, when known
 * ("Deprecated · replaced by ubuntu-24-04 · sunset 1 Mar 2027"); null when not deprecated.
 */
export function deprecationBadge(entry: CatalogEntry | undefined, now: number): string | null {
  if (entry?.deprecated_at === undefined) return null;
  const parts = [
    Date.parse(entry.deprecated_at) > now ? `Deprecated from ${shortDate(entry.deprecated_at)}` : 'Deprecated',
  ];
  if (entry.successor !== undefined) parts.push(`replaced by ${entry.successor}`);
  if (entry.sunset_at !== undefined) parts.push(`sunset ${shortDate(entry.sunset_at)}`);
  return parts.join(' · ');
}
