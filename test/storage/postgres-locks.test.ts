// PostgreSQL serialises count-then-insert with a row of infracat_locks (SQLite: the file's
// write lock). A missing row would lock nothing: the store refuses instead.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import type { Store } from '../../src/storage/types.js';
import { postgresBackend } from '../helpers/backends.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { ev } from '../helpers/audit.js';

describe('PostgreSQL lock rows', () => {
  it('migrate creates the lock rows in the same list as the schema; a missing lock row fails closed', async (t) => {
    const backend = postgresBackend(t);
    if (backend === undefined) return;
    const db = await backend.fresh(t);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const store = db.open();
    try {
      await check(c, store);
    } finally {
      await store.close();
      await c.end();
    }
  });
});

async function check(c: pg.Client, store: Store): Promise<void> {
  const rows = await c.query<{ name: string }>('SELECT name FROM infracat_locks ORDER BY name');
  assert.deepEqual(
    rows.rows.map((r) => r.name),
    ['migrate', 'tokens'],
  );

  await c.query(`DELETE FROM infracat_locks WHERE name = 'tokens'`);
  const token = {
    id: 'tok_x',
    name: 'x',
    scopes: ['apps:read'],
    secretHash: 'a'.repeat(64),
    createdAt: 1,
    expiresAt: null,
    lastUsedAt: null,
    lastUsedIp: null,
    accountId: OPERATOR_ACCOUNT_ID,
    previousSecretHash: null,
    previousExpiresAt: null,
    allowedCidrs: null,
    notBefore: null,
    enabled: true,
  };
  await assert.rejects(store.tokens.create(token, { maxLive: 10, now: 1 }, ev()), /lock row 'tokens' is missing/);
  assert.equal(await store.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_x'), null, 'nothing inserted without the lock');
  await store.migrate();
  assert.equal(await store.tokens.create(token, { maxLive: 10, now: 1 }, ev()), 'created', 'migrate puts the row back');
}
