// Picks the backend named by the configuration. Nothing else outside src/storage/
// knows which backend is in use.
//
// Each backend's module (and driver) is imported only when it is the one configured: a
// SQLite start has no use for pg, and a PostgreSQL deployment none for the SQLite addon.
import { existsSync } from 'node:fs';
import { describeDatabase, type DatabaseConfig } from './database-url.js';
import { DatabaseMissingError, type Store } from './types.js';

export type { Store } from './types.js';

/** Where the database is and how to reach it; each field is the setting of the same name (src/config.ts). */
export interface StoreSettings {
  database: DatabaseConfig;
  databasePoolMax: number;
  databaseTimeoutMs: number;
  /** PostgreSQL: where to LISTEN; '' or absent: `database`. */
  databaseNotifyUrl?: string;
}

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
export async function openExistingStore(settings: StoreSettings, options: OpenStoreOptions = {}): Promise<Store> {
  const where = describeDatabase(settings.database);
  if (settings.database.kind === 'sqlite' && !existsSync(settings.database.path)) {
    throw new DatabaseMissingError(`no infracat database at ${where} (the file does not exist); ${HOW_TO_CREATE}`);
  }
  let store: Store | undefined;
  let version: number;
  try {
    store = await openStore(settings, options);
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

export async function openStore(settings: StoreSettings, options: OpenStoreOptions = {}): Promise<Store> {
  const db = settings.database;
  if (db.kind === 'sqlite') {
    const { SqliteStore } = await import('./sqlite/store.js');
    return new SqliteStore({
      path: db.path,
      busyTimeoutMs: settings.databaseTimeoutMs,
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    });
  }
  const { PostgresStore } = await import('./postgres/store.js');
  return new PostgresStore({
    url: db.url,
    poolMax: settings.databasePoolMax,
    timeoutMs: settings.databaseTimeoutMs,
    ...(settings.databaseNotifyUrl ? { notifyUrl: settings.databaseNotifyUrl } : {}),
    ...(options.onIdleError ? { onIdleError: options.onIdleError } : {}),
  });
}
