// Filtering and sorting of the plans table (pure; unit-tested in test/console/logic.test.ts).
import type { Plan } from './api.js';

export type { Plan } from './api.js';

export interface PlanFilter {
  type: string; // '' = any
  minVcpus: number | null;
  minMemoryGb: number | null;
  maxPrice: number | null;
}

export type SortKey = 'slug' | 'type' | 'vcpus' | 'memory_mb' | 'disk_gb' | 'transfer_tb' | 'price_monthly';
export interface Sort {
  key: SortKey;
  direction: 'ascending' | 'descending';
}

export function filterPlans(plans: readonly Plan[], f: PlanFilter): Plan[] {
  return plans.filter(
    (p) =>
      (f.type === '' || p.type === f.type) &&
      (f.minVcpus === null || p.vcpus >= f.minVcpus) &&
      (f.minMemoryGb === null || p.memory_mb >= f.minMemoryGb * 1024) &&
      (f.maxPrice === null || p.price_monthly <= f.maxPrice),
  );
}

/** Stable sort; ties keep the catalog's own order. */
export function sortPlans(plans: readonly Plan[], sort: Sort): Plan[] {
  const sign = sort.direction === 'ascending' ? 1 : -1;
  return plans
    .map((plan, index) => ({ plan, index }))
    .sort((a, b) => {
      const x = a.plan[sort.key];
      const y = b.plan[sort.key];
      const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      return c !== 0 ? sign * c : a.index - b.index;
    })
    .map((e) => e.plan);
}

/** Clicking a column: a new column sorts ascending, the same column flips. */
export function nextSort(current: Sort, key: SortKey): Sort {
  if (current.key !== key) return { key, direction: 'ascending' };
  return { key, direction: current.direction === 'ascending' ? 'descending' : 'ascending' };
}

/** A number input's value: '' is "no filter"; anything not a non-negative number too. */
export function numberOrNull(raw: string): number | null {
  if (raw.trim() === '') return null;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : null;
}
