// The storage a command works on: DATABASE_URL, or the command's --database-url flag.
// Opened, migrated, handed to the command, and always closed. Every command says on
// stderr which database it used (password redacted), so an operator can never act on
// another database than the one they meant without being told.
//
// Only `migrate` may create a database. The operator commands (tokens, catalog, backup)
// open an existing one or fail naming the resolved location: a typo in a path must not
// quietly produce a fresh database the running server knows nothing about.
import { loadConfig, type Config } from '../config.js';
import { describeDatabase } from '../storage/database-url.js';
import { openExistingStore, openStore } from '../storage/index.js';
import type { MigrationReport, Store } from '../storage/types.js';

export interface WithStoreOptions {
  /** Create the database when the location holds none (migrate only). */
  create?: boolean;
}

export async function withStore<T>(
  url: string | undefined,
  body: (store: Store, config: Config, migration: MigrationReport) => Promise<T>,
  options: WithStoreOptions = {},
): Promise<T> {
  const config = loadConfig(process.env, url !== undefined ? { DATABASE_URL: url } : {});
  process.stderr.write(`infracat: database ${describeDatabase(config.database)}\n`);
  const store = options.create === true ? await openStore(config) : await openExistingStore(config);
  try {
    const migration = await store.migrate();
    return await body(store, config, migration);
  } finally {
    await store.close();
  }
}
