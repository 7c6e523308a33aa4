// The catalog: OS images, instance plans and regions, as the API shows them, plus
// the settings that travel with them (currency, extensions of the known value sets).
// Their shapes are declared in schemas.ts; here are the in-memory types derived from
// them (prices in integer cents: only the wire and the file format show decimals) and
// the domain rules: derived slugs and the documented order.
import type { Model } from './forms.js';
import { ENTITIES, type CatalogSettings, type Kind } from './schemas.js';
import type { Image as ImageSchema, Plan as PlanSchema, Region as RegionSchema, FILE_ENTITIES } from './schemas.js';
import { naturalCompare } from './natural-order.js';

export type Image = Model<typeof ImageSchema>;
export type Plan = Model<typeof PlanSchema>;
export type Region = Model<typeof RegionSchema>;
export type PlanType = Plan['type'];

/**
 * A whole catalog in memory (and, as JSON, in storage): its settings and entity lists,
 * each entry in its file form (the wire fields plus deprecation and, for regions, offers).
 */
export type Catalog = CatalogSettings & { [K in Kind]: Model<(typeof FILE_ENTITIES)[K]>[] };

export type { Kind };
export const KINDS = Object.keys(ENTITIES) as readonly Kind[];

export const BUILTIN_IMAGE_TYPES: readonly string[] = ['base'];
export const BUILTIN_REGION_FEATURES: readonly string[] = ['backups', 'ipv6', 'storage'];
/** The slug prefix of each plan type (the keys are checked against the schema's types). */
export const PLAN_TYPES: Record<PlanType, string> = { general: 's', 'cpu-optimized': 'c', 'memory-optimized': 'm' };

/** `Ubuntu` + `24.04` -> `ubuntu-24-04`: lowercase, every non-alphanumeric run a dash. */
export function imageSlug(distribution: string, version: string): string {
  return `${distribution}-${version}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** `general`, 2 vCPUs, 4096 MB -> `s-2vcpu-4gb`. */
export function planSlug(type: PlanType, vcpus: number, memoryMb: number): string {
  return `${PLAN_TYPES[type]}-${vcpus}vcpu-${memoryMb / 1024}gb`;
}

/**
 * The documented order of each list:
 * images by distribution (A-Z), newest version first; plans by price, then vCPUs,
 * memory and slug; regions by slug.
 */
export function sortCatalog(c: Catalog): Catalog {
  return {
    ...c,
    images: [...c.images].sort(
      (a, b) =>
        naturalCompare(a.distribution, b.distribution) ||
        naturalCompare(b.version, a.version) ||
        (a.slug < b.slug ? -1 : 1),
    ),
    plans: [...c.plans].sort(
      (a, b) =>
        a.price_cents - b.price_cents || a.vcpus - b.vcpus || a.memory_mb - b.memory_mb || (a.slug < b.slug ? -1 : 1),
    ),
    regions: [...c.regions].sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0)),
  };
}
