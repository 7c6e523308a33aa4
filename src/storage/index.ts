// Picks the backend named by the configuration. Nothing else outside src/storage/
// knows which backend is in use.
//
// Each backend's module (and driver) is imported only when it is the one configured:
// loading pg was ~50 ms of a SQLite start on Node 20 (BENCHMARKS.md), and a PostgreSQL
// deployment has no use for the SQLite addon.
import { existsSync } from 'node:fs';
import type { Config } from '../config.js';
import { describeDatabase } from './database-url.js';
import { DatabaseMissingError, type Store } from './types.js';

export type { Store } from './types.js';

export interface OpenStoreOptions {
  onIdleError?: (err: Error) => void;
  /** SQLite: told when other local users can reach the database's directory or files. */
  onWarning?: (message: string, details: Record<string, unknown>) => void;
}

const HOW_TO_CREATE =
  "create it with 'infracat migrate' (or start the server once) with the same DATABASE_URL, " +
  'or point DATABASE_URL / --database-url at the existing database';

/**
 * Opens an existing infracat database and nothing else: the operator commands use it so
 * that a typo in a path or running from another directory never creates a fresh, empty
 * database that a running server knows nothing about. Throws DatabaseMissingError
 * naming the resolved location.
 */
export async function openExistingStore(
  config: Pick<Config, 'database' | 'databasePoolMax' | 'databaseTimeoutMs'>,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const where = describeDatabase(config.database);
  if (config.database.kind === 'sqlite' && !existsSync(config.database.path)) {
    throw new DatabaseMissingError(`no infracat database at ${where} (the file does not exist); ${HOW_TO_CREATE}`);
  }
  let store: Store | undefined;
  let version: number;
  try {
    store = await openStore(config, options);
    version = await store.schemaVersion();
  } catch (err) {
    await store?.close();
    if ((err as { code?: unknown }).code === 'SQLITE_NOTADB')
      throw new DatabaseMissingError(`${where} is not a SQLite database; ${HOW_TO_CREATE}`);
    throw err;
  }
  if (version === 0) {
    await store.close();
    throw new DatabaseMissingError(`no infracat database at ${where} (it holds no infracat schema); ${HOW_TO_CREATE}`);
  }
  return store;
}

export async function openStore(
  config: Pick<Config, 'database' | 'databasePoolMax' | 'databaseTimeoutMs'> &
    Partial<Pick<Config, 'databaseNotifyUrl'>>,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const db = config.database;
  if (db.kind === 'sqlite') {
    const { SqliteStore } = await import('./sqlite/store.js');
    return new SqliteStore({
      path: db.path,
      busyTimeoutMs: config.databaseTimeoutMs,
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    });
  }
  const { PostgresStore } = await import('./postgres/store.js');
  return new PostgresStore({
    url: db.url,
    poolMax: config.databasePoolMax,
    timeoutMs: config.databaseTimeoutMs,
    ...(config.databaseNotifyUrl ? { notifyUrl: config.databaseNotifyUrl } : {}),
    ...(options.onIdleError ? { onIdleError: options.onIdleError } : {}),
  });
}
