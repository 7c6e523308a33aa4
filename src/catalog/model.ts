// The catalog: OS images, instance plans and regions, as the API shows them, plus
// the settings that travel with them (currency, extensions of the known value sets).
// Prices are integer cents everywhere inside the service; only the wire and the file
// format show decimals.

export interface Image {
  slug: string;
  name: string;
  distribution: string;
  version: string;
  type: string;
  min_disk_gb: number;
}

export type PlanType = 'general' | 'cpu-optimized' | 'memory-optimized';

export interface Plan {
  id: string;
  slug: string;
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
  transfer_tb: number;
  type: PlanType;
  price_cents: number;
}

export interface Region {
  slug: string;
  name: string;
  available: boolean;
  features: string[];
}

export interface Catalog {
  currency: string;
  /** Image types allowed beyond the built-in ones. */
  extra_image_types: string[];
  /** Region features allowed beyond the built-in ones. */
  extra_region_features: string[];
  images: Image[];
  plans: Plan[];
  regions: Region[];
}

export type Kind = 'images' | 'plans' | 'regions';
export const KINDS: readonly Kind[] = ['images', 'plans', 'regions'];

export const BUILTIN_IMAGE_TYPES: readonly string[] = ['base'];
export const BUILTIN_REGION_FEATURES: readonly string[] = ['backups', 'ipv6', 'storage'];
export const PLAN_TYPES: Record<PlanType, string> = { general: 's', 'cpu-optimized': 'c', 'memory-optimized': 'm' };
export const DEFAULT_CURRENCY = 'USD';

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

/** 600 -> "6.00": the two-fraction-digit text the API and the file format use. */
export function centsToDecimal(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

const naturalCompare = new Intl.Collator('en', { numeric: true, sensitivity: 'base' }).compare;

/**
 * The documented order of each list:
 * images by distribution (A-Z), newest version first; plans by price, then vCPUs,
 * memory and slug; regions by slug.
 */
export function sortCatalog(c: Catalog): Catalog {
  return {
    ...c,
    images: [...c.images].sort(
      (a, b) => naturalCompare(a.distribution, b.distribution) || naturalCompare(b.version, a.version) || (a.slug < b.slug ? -1 : 1),
    ),
    plans: [...c.plans].sort(
      (a, b) => a.price_cents - b.price_cents || a.vcpus - b.vcpus || a.memory_mb - b.memory_mb || (a.slug < b.slug ? -1 : 1),
    ),
    regions: [...c.regions].sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0)),
  };
}
