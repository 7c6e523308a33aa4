// One SQL statement on a test database outside the store (what an older release, or a
// tampered database, holds): `?` placeholders, rewritten to $1.. for PostgreSQL.
// The project's loader: better-sqlite3 12 on Node 20, 13 (Node-API) on Node 22+.
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import pg from 'pg';
import type { Backend, BackendDb } from './backends.js';

export async function rawSql(backend: Backend, db: BackendDb, sql: string, values: unknown[] = []): Promise<unknown[]> {
  if (backend.name === 'postgres') {
    let n = 0;
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return (
        await c.query<Record<string, unknown>>(
          sql.replaceAll('?', () => `$${++n}`),
          values,
        )
      ).rows;
    } finally {
      await c.end();
    }
  }
  const raw = openDatabase(db.url.slice('sqlite:'.length));
  try {
    const stmt = raw.prepare(sql);
    return stmt.reader ? stmt.all(...values) : (stmt.run(...values), []);
  } finally {
    raw.close();
  }
}
