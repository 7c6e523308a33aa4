// The storage a command works on: DATABASE_URL, or the command's --database-url flag.
// Opened, migrated, handed to the command, and always closed.
import { loadConfig, type Config } from '../config.js';
import { openStore } from '../storage/index.js';
import type { MigrationReport, Store } from '../storage/types.js';

export async function withStore<T>(
  url: string | undefined,
  body: (store: Store, config: Config, migration: MigrationReport) => Promise<T>,
): Promise<T> {
  const config = loadConfig(process.env, url !== undefined ? { DATABASE_URL: url } : {});
  const store = await openStore(config);
  try {
    const migration = await store.migrate();
    return await body(store, config, migration);
  } finally {
    await store.close();
  }
}
