// One SQL statement on a test database outside the store (what an older release, or a
// tampered database, holds): `?` placeholders, rewritten to $1.. for PostgreSQL.
// The project's loader: better-sqlite3 12 on Node 20, 13 (Node-API) on Node 22+.
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import pg from 'pg';
import type { AccountRecord, TokenRecord } from '../../src/storage/types.js';
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
 * A token as releases from schema 5 on store it, written without the store: the store
 * writes an audit event with every change, in the columns of the newest schema, which an
 * older release's audit table lacks.
 */
export async function insertOldToken(backend: Backend, db: BackendDb, t: TokenRecord): Promise<void> {
  await rawSql(
    backend,
    db,
    `INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, expires_at, last_used_at, account_id,
       previous_secret_hash, previous_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      t.id,
      t.name,
      JSON.stringify(t.scopes),
      t.secretHash,
      t.createdAt,
      t.expiresAt,
      t.lastUsedAt,
      t.accountId,
      t.previousSecretHash,
      t.previousExpiresAt,
    ],
  );
}

/** An account as releases from schema 4 on store it, written without the store (see insertOldToken). */
export async function insertOldAccount(backend: Backend, db: BackendDb, a: AccountRecord): Promise<void> {
  await rawSql(backend, db, 'INSERT INTO accounts (id, name, external_id, status, created_at) VALUES (?, ?, ?, ?, ?)', [
    a.id,
    a.name,
    a.externalId,
    a.status,
    a.createdAt,
  ]);
}
