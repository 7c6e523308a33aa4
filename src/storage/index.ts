// Picks the backend named by the configuration. Nothing else outside src/storage/
// knows which backend is in use.
//
// Each backend's module (and driver) is imported only when it is the one configured:
// loading pg was ~50 ms of a SQLite start on Node 20 (BENCHMARKS.md), and a PostgreSQL
// deployment has no use for the SQLite addon.
import type { Config } from '../config.js';
import type { Store } from './types.js';

export type { Store } from './types.js';

export interface OpenStoreOptions {
  onIdleError?: (err: Error) => void;
  /** SQLite: told when other local users can reach the database's directory or files. */
  onWarning?: (message: string, details: Record<string, unknown>) => void;
}

export async function openStore(
  config: Pick<Config, 'database' | 'databasePoolMax' | 'databaseTimeoutMs'>,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const db = config.database;
  if (db.kind === 'sqlite') {
    const { SqliteStore } = await import('./sqlite/store.js');
    return new SqliteStore({ path: db.path, busyTimeoutMs: config.databaseTimeoutMs, ...(options.onWarning ? { onWarning: options.onWarning } : {}) });
  }
  const { PostgresStore } = await import('./postgres/store.js');
  return new PostgresStore({
    url: db.url,
    poolMax: config.databasePoolMax,
    timeoutMs: config.databaseTimeoutMs,
    ...(options.onIdleError ? { onIdleError: options.onIdleError } : {}),
  });
}
