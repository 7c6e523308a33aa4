// Helpers of the shared store that are plain functions of records (tables.ts maps rows).
import type { TokenRecord } from './types.js';

/**
 * Collapses repeated ids to their latest time, so one batch writes each row once; in id
 * order, so instances flushing overlapping batches lock rows in the same order.
 */
export function latestPerId(entries: readonly { id: string; at: number }[]): [string, number][] {
  const latest = new Map<string, number>();
  for (const { id, at } of entries) {
    const prev = latest.get(id);
    if (prev === undefined || at > prev) latest.set(id, at);
  }
  return [...latest].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The value recorded under the bootstrap key: what the one bootstrap decision was. */
export function bootstrapOutcome(token: TokenRecord | null, storedTokens: number): string {
  if (token === null) return 'not minted: turned off at first start';
  return storedTokens === 0 ? `minted ${token.id}` : 'not minted: the store already held tokens';
}
