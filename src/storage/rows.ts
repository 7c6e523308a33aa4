// Row <-> record mapping shared by both backends (column names are the same in both).
import type { TokenRecord } from './types.js';

export interface TokenRow {
  id: string;
  name: string;
  scopes: string;
  secret_hash: string;
  created_at: number | string;
  expires_at: number | string | null;
  last_used_at: number | string | null;
}

/**
 * A real write that changes nothing: proves at start that the database accepts writes
 * (a read-only file or a standby would otherwise serve reads and fail every write).
 */
export const WRITE_PROBE_SQL =
  'UPDATE infracat_schema_migrations SET applied_at = applied_at WHERE version = (SELECT MAX(version) FROM infracat_schema_migrations)';

export const TOKEN_COLUMNS = 'id, name, scopes, secret_hash, created_at, expires_at, last_used_at';

// PostgreSQL returns BIGINT as a string; epoch milliseconds fit a double exactly.
const num = (v: number | string): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: number | string | null): number | null => (v === null ? null : num(v));

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

export function tokenParams(t: TokenRecord): [string, string, string, string, number, number | null, number | null] {
  return [t.id, t.name, JSON.stringify(t.scopes), t.secretHash, t.createdAt, t.expiresAt, t.lastUsedAt];
}

/** Collapses repeated ids to their latest time, so one batch writes each row once. */
export function latestPerId(entries: readonly { id: string; at: number }[]): Map<string, number> {
  const latest = new Map<string, number>();
  for (const { id, at } of entries) {
    const prev = latest.get(id);
    if (prev === undefined || at > prev) latest.set(id, at);
  }
  return latest;
}

/** The value recorded under the bootstrap key: what the one bootstrap decision was. */
export function bootstrapOutcome(token: TokenRecord | null, storedTokens: number): string {
  if (token === null) return 'not minted: turned off at first start';
  return storedTokens === 0 ? `minted ${token.id}` : 'not minted: the store already held tokens';
}
