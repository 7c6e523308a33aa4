// Migration 17 on a database of the schema before it, on both backends: the tokens that
// have not expired get their first expiry notice time (7 days before their expiry), the
// ones already expired and those that never expire get none; and the webhook tables are
// there for the API.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { hashSecret } from '../../src/tokens/format.js';
import { backends } from '../helpers/backends.js';
import { rawSql } from '../helpers/raw-sql.js';

const DAY = 86_400_000;

for (const backend of backends()) {
  describe(`migration 17 on ${backend.name}`, () => {
    it('live expiring tokens get their first notice time; expired and never-expiring ones none', async (t) => {
      const db = await backend.create();
      t.after(() => db.drop());
      const store = db.open();
      try {
        await store.migrate({ upTo: 15 });
        const now = Date.now();
        const tokens: [id: string, expiresAt: number | null][] = [
          ['tok_01JLATER000000000000000000', now + 30 * DAY],
          ['tok_01JSOON0000000000000000000', now + 2 * DAY],
          ['tok_01JGONE0000000000000000000', now - DAY],
          ['tok_01JNEVER000000000000000000', null],
        ];
        for (const [id, expiresAt] of tokens)
          await rawSql(
            backend,
            db,
            'INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, expires_at, account_id)' +
              ' VALUES (?, ?, ?, ?, ?, ?, ?)',
            [id, id, '["apps:read"]', hashSecret(id), now - 60 * DAY, expiresAt, OPERATOR_ACCOUNT_ID],
          );
        const report = await store.migrate();
        assert.ok(report.applied.includes(17), JSON.stringify(report));
        const rows = (await rawSql(backend, db, 'SELECT id, next_notice_at FROM api_tokens ORDER BY id')) as {
          id: string;
          next_notice_at: number | string | null;
        }[];
        const notice = Object.fromEntries(
          rows.map((r) => [r.id, r.next_notice_at === null ? null : Number(r.next_notice_at)]),
        );
        assert.deepEqual(notice, {
          tok_01JGONE0000000000000000000: null,
          tok_01JLATER000000000000000000: now + 23 * DAY,
          tok_01JNEVER000000000000000000: null,
          tok_01JSOON0000000000000000000: now - 5 * DAY,
        });
        assert.deepEqual(await store.webhooks.list(OPERATOR_ACCOUNT_ID, { limit: 10 }), []);
        assert.deepEqual(await store.webhooks.pending(now, 10), []);
      } finally {
        await store.close();
      }
    });
  });
}
