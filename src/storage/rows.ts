// Helpers of the shared store that are plain functions of records (tables.ts maps rows).
import type { LastUsed, TokenRecord, UsageCell } from './types.js';

/**
 * Collapses repeated ids to their latest use (time and address), so one batch writes each
 * row once; in id order, so instances flushing overlapping batches lock rows in the same order.
 */
export function latestPerId(entries: readonly LastUsed[]): [id: string, at: number, ip: string | null][] {
  const latest = new Map<string, LastUsed>();
  for (const entry of entries) {
    const prev = latest.get(entry.id);
    if (prev === undefined || entry.at > prev.at) latest.set(entry.id, entry);
  }
  return [...latest.values()]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map(({ id, at, ip }) => [id, at, ip ?? null]);
}

/** Cells in (token_id, hour) order: instances adding to overlapping rows lock them in the same order. */
export function inKeyOrder(cells: readonly UsageCell[]): UsageCell[] {
  return [...cells].sort((a, b) => (a.tokenId < b.tokenId ? -1 : a.tokenId > b.tokenId ? 1 : a.hour - b.hour));
}

/** The value recorded under the bootstrap key: what the one bootstrap decision was. */
export function bootstrapOutcome(token: TokenRecord | null, storedTokens: number): string {
  if (token === null) return 'not minted: turned off at first start';
  return storedTokens === 0 ? `minted ${token.id}` : 'not minted: the store already held tokens';
}
