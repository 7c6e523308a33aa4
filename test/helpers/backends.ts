// One loop over both storage backends (Kysely's dialect loop): a test suite written
// once runs on SQLite and on PostgreSQL.
import type { TestContext } from 'node:test';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import type { Store } from '../../src/storage/types.js';
import { createTestDatabase, requirePostgres } from './pg.js';
import { tempDir } from './sqlite.js';

export interface BackendDb {
  /** DATABASE_URL of this database. */
  url: string;
  /** A new Store on the same database (another "instance"); closed by the caller or the app. */
  open(): Store;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** A fresh, migrated database, dropped when the test ends. */
  fresh(t: TestContext): Promise<BackendDb>;
}

const sqlite: Backend = {
  name: 'sqlite',
  async fresh(t) {
    const tmp = tempDir();
    const file = tmp.file();
    const open = (): Store => new SqliteStore({ path: file, busyTimeoutMs: 5000 });
    const s = open();
    await s.migrate();
    await s.close();
    t.after(() => tmp.remove());
    return { url: `sqlite:${file}`, open };
  },
};

function postgres(adminUrl: string): Backend {
  return {
    name: 'postgres',
    async fresh(t) {
      const db = await createTestDatabase(adminUrl);
      const open = (): Store => new PostgresStore({ url: db.url, poolMax: 4, timeoutMs: 5000 });
      const s = open();
      await s.migrate();
      await s.close();
      t.after(() => db.drop());
      return { url: db.url, open };
    },
  };
}

/** SQLite always; PostgreSQL whenever a test server is configured (always under npm test, required in CI). */
export function backends(): Backend[] {
  const admin = requirePostgres();
  return admin === undefined ? [sqlite] : [sqlite, postgres(admin)];
}
