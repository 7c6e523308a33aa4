// Storage that turns read-only while the server runs (PostgreSQL failing over to a
// standby): writes answer 503 STORAGE_UNAVAILABLE with Retry-After, /readyz answers 503
// so a balancer stops sending traffic, reads keep working, and all recovers by itself.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { build, mintToken } from '../helpers/app.js';
import { admin, postgresBackend } from '../helpers/backends.js';

describe('storage turning read-only while running', () => {
  it(
    'PostgreSQL: writes 503 STORAGE_UNAVAILABLE, /readyz 503, reads served, flush failures logged once a minute; ' +
      'recovers when writable again',
    async (t) => {
      // PostgreSQL only: a session can be made read-only under a running server.
      const pg = postgresBackend(t);
      if (pg === undefined) return;
      const { adminUrl } = pg;
      const db = await pg.fresh(t);
      const name = new URL(db.url).pathname.slice(1);
      const store = db.open({ timeoutMs: 3000 });
      const { app, logs } = await build(t, {
        store,
        env: { DATABASE_URL: db.url, TOKEN_CACHE_TTL_MS: '600000', LAST_USED_FLUSH_MS: '600000' },
      });
      const writer = await mintToken(app, ['api-tokens:write']);
      const create = () =>
        app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: writer.auth,
          payload: { name: 'x', scopes: ['api-tokens:read'] },
        });
      assert.equal((await create()).statusCode, 201);
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);

      // A failover to a standby: every new session is read-only; existing ones are cut.
      const cut =
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity ' +
        `WHERE datname = '${name}' AND pid <> pg_backend_pid()`;
      await admin(adminUrl, `ALTER DATABASE ${name} SET default_transaction_read_only = on`);
      await admin(adminUrl, cut);
      let refused = await create();
      // The first request after the cut may meet a connection the pool has not yet dropped.
      for (let i = 0; i < 5 && refused.json<{ code: string }>().code !== 'STORAGE_UNAVAILABLE'; i++)
        refused = await create();
      assert.equal(refused.statusCode, 503);
      assert.equal(refused.json<{ code: string }>().code, 'STORAGE_UNAVAILABLE');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      assert.doesNotMatch(refused.body, /25006|read_only_sql_transaction|transaction/i, 'no internals in the body');
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.equal(ready.json<{ code: string }>().code, 'STORAGE_UNAVAILABLE');
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/plans' })).statusCode,
        200,
        'catalogs are served from memory',
      );
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: writer.auth })).statusCode,
        200,
        'reads still work',
      );

      // last_used_at and usage flushes keep failing meanwhile: one warning (with a count), not one per retry.
      for (let i = 0; i < 4; i++) {
        assert.equal(
          (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: writer.auth })).statusCode,
          200,
        );
        await app.infracat.tokens.lastUsed.flush();
        await app.infracat.tokens.usage.flush();
      }
      const warnings = logs.records().filter((r) => String(r.msg).startsWith('last_used_at or usage flush failed'));
      assert.equal(app.infracat.tokens.lastUsed.stats.failures, 4);
      assert.equal(app.infracat.tokens.usage.stats.failures, 4);
      assert.equal(warnings.length, 1, 'four failed flushes, one warning');

      await admin(adminUrl, `ALTER DATABASE ${name} RESET default_transaction_read_only`);
      await admin(adminUrl, cut);
      let back = await create();
      for (let i = 0; i < 5 && back.statusCode !== 201; i++) back = await create();
      assert.equal(back.statusCode, 201, 'recovers without a restart');
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    },
  );
});
