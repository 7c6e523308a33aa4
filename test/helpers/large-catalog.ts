// A valid catalog document of any size, in the file form (what PUT /api/v1/catalog and
// `infracat catalog apply` take), with what its filters should answer computed from the
// document itself. Even-numbered regions have no lists (they offer everything); an
// odd-numbered region offers the plans whose index is its own modulo 5, and the
// even-indexed images.
import { image, plan, region } from './catalog-entries.js';

const PLAN_PREFIX = ['s', 'c', 'm'] as const;
const PLAN_TYPE = ['general', 'cpu-optimized', 'memory-optimized'] as const;

export interface LargeCatalog {
  document: {
    currency: string;
    images: Record<string, unknown>[];
    plans: Record<string, unknown>[];
    regions: Record<string, unknown>[];
  };
  /** The plan slugs region `slug` offers (every one for a region without a list). */
  plansIn(slug: string): Set<string>;
  /** The image slugs region `slug` offers. */
  imagesIn(slug: string): Set<string>;
}

/** `plans` plans (up to 30,000), `images` images (up to 1,000), `regions` regions (up to 100). */
export function largeCatalog(counts: { plans: number; images: number; regions: number }): LargeCatalog {
  const images = Array.from({ length: counts.images }, (_, i) => {
    const [d, v] = [Math.floor(i / 10), i % 10];
    return image({
      slug: `distro${d}-${v}`,
      name: `Distro ${d} ${v}`,
      distribution: `Distro${d}`,
      version: String(v),
      min_disk_gb: 10 + (i % 5) * 10,
    });
  });
  const plans = Array.from({ length: counts.plans }, (_, i) => {
    const type = i % 3;
    const j = Math.floor(i / 3);
    const vcpus = 1 + (j % 100);
    const gb = 1 + Math.floor(j / 100);
    const slug = `${PLAN_PREFIX[type]}-${vcpus}vcpu-${gb}gb`;
    return plan({
      id: slug,
      slug,
      vcpus,
      memory_mb: gb * 1024,
      disk_gb: 25 + (i % 8) * 25,
      transfer_tb: 1 + (i % 5),
      type: PLAN_TYPE[type],
      price_monthly: vcpus * 4 + gb * 3 + type + (i % 4) * 0.25,
    });
  });
  const plansOf = (k: number) => plans.filter((_, i) => i % 5 === k % 5).map((p) => p.slug);
  const imagesOf = () => images.filter((_, i) => i % 2 === 0).map((x) => x.slug);
  const regions = Array.from({ length: counts.regions }, (_, k) =>
    region({
      slug: `reg${k}`,
      name: `Region ${k}`,
      available: k % 7 !== 3,
      features: k % 3 === 0 ? ['backups', 'ipv6'] : ['backups'],
      ...(k % 2 === 1 ? { plans: plansOf(k), images: imagesOf() } : {}),
    }),
  );
  const all = (list: { slug: string }[]) => new Set(list.map((e) => e.slug));
  const odd = (slug: string) => Number(slug.slice(3)) % 2 === 1;
  return {
    document: { currency: 'USD', images, plans, regions },
    plansIn: (slug) => (odd(slug) ? new Set(plansOf(Number(slug.slice(3)))) : all(plans)),
    imagesIn: (slug) => (odd(slug) ? new Set(imagesOf()) : all(images)),
  };
}
