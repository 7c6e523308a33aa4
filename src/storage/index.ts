// Picks the backend named by the configuration. Nothing else outside src/storage/
// knows which backend is in use.
import type { Config } from '../config.js';
import { PostgresStore } from './postgres/store.js';
import { SqliteStore } from './sqlite/store.js';
import type { Store } from './types.js';

export type { Store } from './types.js';

export interface OpenStoreOptions {
  onIdleError?: (err: Error) => void;
}

export function openStore(
  config: Pick<Config, 'database' | 'databasePoolMax' | 'databaseTimeoutMs'>,
  options: OpenStoreOptions = {},
): Store {
  const db = config.database;
  if (db.kind === 'sqlite') return new SqliteStore({ path: db.path, busyTimeoutMs: config.databaseTimeoutMs });
  return new PostgresStore({
    url: db.url,
    poolMax: config.databasePoolMax,
    timeoutMs: config.databaseTimeoutMs,
    ...(options.onIdleError ? { onIdleError: options.onIdleError } : {}),
  });
}
