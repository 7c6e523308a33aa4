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

/**
 * Inserts `records` into one of the store's tables (tables.ts) outside the store, a few
 * hundred rows a statement: seed data, or rows as an older schema holds them (only the
 * table's own columns; no audit event, as the store would write).
 */
export async function insertRows<R>(
  backend: Backend,
  db: BackendDb,
  table: { name: string; columns: string; placeholders: string; params(record: R): unknown[] },
  records: readonly R[],
): Promise<void> {
  for (let at = 0; at < records.length; at += 500) {
    const batch = records.slice(at, at + 500);
    const values = batch.map(() => `(${table.placeholders})`).join(', ');
    await rawSql(
      backend,
      db,
      `INSERT INTO ${table.name} (${table.columns}) VALUES ${values}`,
      batch.flatMap((r) => table.params(r)),
    );
  }
}
