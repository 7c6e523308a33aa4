// Row <-> record mapping, declared once for both backends (the column names are the same).
import type { Param } from './driver.js';
import type { CatalogRevision, TokenRecord } from './types.js';

// BIGINT columns come back from PostgreSQL as strings (SQLite: numbers); epoch
// milliseconds fit a double exactly.
type Int64 = number | string;

/** The columns of api_tokens, in the order of TOKEN_COLUMNS and tokenParams(). */
export interface TokenRow {
  id: string;
  name: string;
  scopes: string;
  secret_hash: string;
  created_at: Int64;
  expires_at: Int64 | null;
  last_used_at: Int64 | null;
}

export const TOKEN_COLUMNS = 'id, name, scopes, secret_hash, created_at, expires_at, last_used_at';

export interface CatalogRow {
  version: number;
  document: string;
  applied_at: Int64;
}

export const CATALOG_COLUMNS = 'version, document, applied_at';

const num = (v: Int64): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: Int64 | null): number | null => (v === null ? null : num(v));

export function tokenFromRow(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    name: row.name,
    scopes: JSON.parse(row.scopes) as string[],
    secretHash: row.secret_hash,
    createdAt: num(row.created_at),
    expiresAt: numOrNull(row.expires_at),
    lastUsedAt: numOrNull(row.last_used_at),
  };
}

export function tokenParams(t: TokenRecord): Param[] {
  return [t.id, t.name, JSON.stringify(t.scopes), t.secretHash, t.createdAt, t.expiresAt, t.lastUsedAt];
}

export function catalogFromRow(row: CatalogRow): CatalogRevision {
  return { version: row.version, document: row.document, appliedAt: num(row.applied_at) };
}

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
