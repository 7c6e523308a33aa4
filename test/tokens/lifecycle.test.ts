// What happens around the endpoints, on both backends: last-used batching, secrets at
// rest and in logs, the failed-auth limiter, fail-closed verification, bootstrap, and
// two instances sharing one database.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { createTokenDomain } from '../../src/tokens/index.js';
import { loadConfig } from '../../src/config.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { freePort } from '../helpers/embedded-pg.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { ev, TEST_CONTEXT } from '../helpers/audit.js';
import { LIVENESS_BOUND_MS, whileWorking } from '../helpers/liveness.js';
import { insertRows } from '../helpers/raw-sql.js';
import { until } from '../helpers/until.js';
import { BATCH_ROWS } from '../../src/storage/sql-store.js';
import { API_TOKENS } from '../../src/storage/tables.js';
import type { TokenRecord } from '../../src/storage/types.js';

/** Distinct tokens used within one flush interval: two seconds' worth at 10,000 a second. */
const BIG_FLUSH = 20_000;

/** A stored token row, as many as a test needs (no secret behind it: only its id is used). */
function bulkToken(i: number): TokenRecord {
  return {
    id: `tok_${String(i).padStart(26, '0')}`,
    name: `bulk ${i}`,
    scopes: ['apps:read'],
    secretHash: i.toString(16).padStart(64, '0'),
    createdAt: 1_700_000_000_000 + i,
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
}

for (const backend of backends()) {
  describe(`token lifecycle on ${backend.name}`, () => {
    it('last_used_at: many uses within one interval cost one row write; never on the request path', async (t) => {
      const db = await backend.fresh(t);
      // A long interval: nothing is written until we flush.
      const { app, store } = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000' },
      });
      const tok = await mintToken(app, ['api-tokens:read']);
      const other = await mintToken(app, ['apps:read']);
      const tracker = app.infracat.tokens.lastUsed;
      for (let i = 0; i < 50; i++) {
        assert.equal(
          (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: tok.auth })).statusCode,
          200,
        );
      }
      await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: other.auth });
      assert.equal(tracker.stats.rows, 0, 'no writes on the request path');
      assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, tok.id))?.lastUsedAt, null);
      // The API already shows the pending use.
      const listed = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: tok.auth })).json<
        { id: string; last_used_at: string | null }[]
      >();
      const shown = listed.find((x) => x.id === tok.id)?.last_used_at;
      assert.ok(shown !== null && shown !== undefined);
      await tracker.flush();
      assert.deepEqual(
        tracker.stats,
        { flushes: 1, rows: 2, failures: 0 },
        '51 uses of two tokens -> one batch of two rows',
      );
      const stored = await store.tokens.get(OPERATOR_ACCOUNT_ID, tok.id);
      assert.ok(stored?.lastUsedAt !== null && stored!.lastUsedAt >= Date.parse(shown));
    });

    it('last_used_at is flushed on the periodic timer and on shutdown', async (t) => {
      const db = await backend.fresh(t);
      const timed = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '50' } });
      const a = await mintToken(timed.app, ['apps:read']);
      await timed.app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: a.auth });
      const deadline = Date.now() + 3000;
      while ((await timed.store.tokens.get(OPERATOR_ACCOUNT_ID, a.id))?.lastUsedAt === null && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      assert.notEqual(
        (await timed.store.tokens.get(OPERATOR_ACCOUNT_ID, a.id))?.lastUsedAt,
        null,
        'written by the timer',
      );

      const slow = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000' } });
      const b = await mintToken(slow.app, ['apps:read']);
      await slow.app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: b.auth });
      await slow.app.close();
      const check = db.open();
      t.after(() => check.close());
      assert.notEqual((await check.tokens.get(OPERATOR_ACCOUNT_ID, b.id))?.lastUsedAt, null, 'written on close');
    });

    it('the secret is in no table, file or log line; only its SHA-256 is stored', async (t) => {
      const db = await backend.fresh(t);
      const { app, logs, store } = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, LOG_LEVEL: 'trace' },
      });
      const admin = await mintToken(app, ['api-tokens:write', 'apps:write']);
      const created = (
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'leak check', scopes: ['apps:read'] },
        })
      ).json<{ id: string; token: string }>();
      await app.inject({
        method: 'GET',
        url: '/api/v1/api-tokens/current',
        headers: { authorization: `Bearer ${created.token}` },
      });
      await app.inject({
        method: 'GET',
        url: '/api/v1/api-tokens/current',
        headers: { authorization: `Bearer ${created.token}x` },
      });
      await app.inject({ method: 'GET', url: `/api/v1/api-tokens?access_token=${created.token}` });
      await app.infracat.tokens.lastUsed.flush();
      const secrets = [created.token, admin.secret];
      const needles = secrets.flatMap((s) => [s, s.slice(5, 35)]);
      for (const n of needles) assert.ok(!logs.text.includes(n), 'secret in logs');
      if (backend.name === 'sqlite') {
        const dir = path.dirname(db.url.slice('sqlite:'.length));
        for (const file of readdirSync(dir)) {
          const bytes = readFileSync(path.join(dir, file)).toString('latin1');
          for (const n of needles) assert.ok(!bytes.includes(n), `secret in ${file}`);
        }
      } else {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        const dump = JSON.stringify((await c.query('SELECT * FROM api_tokens')).rows);
        await c.end();
        for (const n of needles) assert.ok(!dump.includes(n), 'secret in api_tokens');
        assert.match(dump, /"secret_hash":"[0-9a-f]{64}"/);
      }
      assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, created.id))?.secretHash.length, 64);
    });

    it(
      'a burst of verifications with a cold cache shares one storage read; a read begun before a delete is ' +
        'neither joined after it nor cached',
      async (t) => {
        const db = await backend.fresh(t);
        const store = db.open();
        t.after(() => store.close());
        await store.migrate();
        const domain = createTokenDomain(loadConfig({ DATABASE_URL: db.url }), store);
        const { token, secret } = await domain.service.create(
          { name: 'burst', scopes: ['apps:read'] },
          null,
          OPERATOR_ACCOUNT_ID,
          TEST_CONTEXT,
        );
        const findByHash = store.tokens.findByHash.bind(store.tokens);
        let reads = 0;
        let release = (): void => undefined;
        let gate = Promise.resolve();
        const hold = (): void => {
          gate = new Promise<void>((r) => (release = r));
        };
        // Reads storage at once, answers when released: "in flight".
        store.tokens.findByHash = async (hash: string) => {
          reads += 1;
          const found = await findByHash(hash);
          await gate;
          return found;
        };

        hold();
        const burst = Array.from({ length: 20 }, () => domain.service.verify(secret));
        release();
        assert.ok((await Promise.all(burst)).every((r) => r.ok));
        assert.equal(reads, 1, '20 concurrent verifications, one storage read');

        domain.cache.evict(token.id, token.secretHash, OPERATOR_ACCOUNT_ID);
        hold();
        const before = domain.service.verify(secret); // its read finds the token, then waits
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(await domain.service.delete(OPERATOR_ACCOUNT_ID, token.id, null, TEST_CONTEXT), true);
        const after = domain.service.verify(secret); // must not join the read from before
        release();
        assert.equal((await before).ok, true, 'concurrent with the delete');
        assert.deepEqual(await after, { ok: false, reason: 'unknown' });
        assert.deepEqual(
          await domain.service.verify(secret),
          { ok: false, reason: 'unknown' },
          'the stale read was not cached',
        );
        assert.equal(reads, 4);
      },
    );

    it('TOKEN_CACHE_TTL_MS=0 turns the verification cache off: a delete elsewhere is refused at once', async (t) => {
      const db = await backend.fresh(t);
      const env = { DATABASE_URL: db.url, TOKEN_CACHE_TTL_MS: '0' };
      const { app, store } = await build(t, { store: db.open(), env });
      const victim = await mintToken(app, ['apps:read']);
      const current = () => app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: victim.auth });
      assert.equal((await current()).statusCode, 200);
      assert.equal((await current()).statusCode, 200);
      assert.equal(app.infracat.tokens.cache.hits, 0, 'nothing answered from memory');
      // As another instance would, behind this one's back.
      assert.equal(await store.tokens.delete(OPERATOR_ACCOUNT_ID, victim.id, ev()), true);
      assert.equal((await current()).statusCode, 401);
    });

    it('a malformed or checksum-failing token is refused without a storage lookup', async (t) => {
      const db = await backend.fresh(t);
      const { app } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url } });
      const cache = app.infracat.tokens.cache;
      const before = cache.misses + cache.hits;
      const good = generateSecret('icat');
      for (const bad of [
        'x',
        `${good.slice(0, -1)}${good.endsWith('a') ? 'b' : 'a'}`,
        good.replace('icat_', 'ghp_'),
        `${good}0`,
      ]) {
        const res = await app.inject({
          method: 'GET',
          url: '/api/v1/api-tokens/current',
          headers: { authorization: `Bearer ${bad}` },
        });
        assert.equal(res.statusCode, 401);
      }
      assert.equal(cache.misses + cache.hits, before, 'no lookup was attempted');
      await app.inject({
        method: 'GET',
        url: '/api/v1/api-tokens/current',
        headers: { authorization: `Bearer ${good}` },
      });
      assert.equal(cache.misses, before + 1, 'a well-formed token is looked up');
    });

    it(
      'failed authentications per client address: 429 with Retry-After past the limit; valid tokens and other ' +
        'addresses unaffected',
      async (t) => {
        const db = await backend.fresh(t);
        const { app } = await build(t, {
          store: db.open(),
          env: { DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_S: '60' },
        });
        const good = await mintToken(app, ['api-tokens:read']);
        const from = (remoteAddress: string, authorization: string) =>
          app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', remoteAddress, headers: { authorization } });
        for (let i = 0; i < 3; i++)
          assert.equal((await from('10.0.0.9', `Bearer ${generateSecret('icat')}`)).statusCode, 401);
        const blocked = await from('10.0.0.9', `Bearer ${generateSecret('icat')}`);
        assert.equal(blocked.statusCode, 429);
        assert.equal(blocked.json<{ code: string }>().code, 'RATE_LIMITED');
        const retry = Number(blocked.headers['retry-after']);
        assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
        assert.equal(
          (await from('10.0.0.9', good.auth.authorization)).statusCode,
          200,
          'a valid token from that address is still answered',
        );
        assert.equal(
          (await from('10.0.0.10', good.auth.authorization)).statusCode,
          200,
          'other addresses are not affected',
        );
        const anonymous = await app.inject({ method: 'GET', url: '/api/v1/scopes', remoteAddress: '10.0.0.9' });
        assert.equal(anonymous.statusCode, 200, 'requests without credentials are not throttled by this limiter');
      },
    );
  });
}

describe('last_used_at flushing on SQLite (synchronous statements)', () => {
  it(`/healthz answers within ${LIVENESS_BOUND_MS} ms while a flush of ${BIG_FLUSH} tokens runs`, async (t) => {
    const sqlite = backends().find((b) => b.name === 'sqlite')!;
    const db = await sqlite.fresh(t);
    const tokens = Array.from({ length: BIG_FLUSH }, (_, i) => bulkToken(i));
    await insertRows(sqlite, db, API_TOKENS, tokens);
    const { app, store } = await build(t, {
      store: db.open(),
      env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000', WEBHOOK_POLL_MS: '60000' },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    // What a listening instance reads at start (due deliveries, expiry notices, the purges) is done before the count.
    await until(() => app.infracat.webhooks.worker.running, 'the delivery worker started');
    await app.infracat.webhooks.worker.idle();
    await app.infracat.notices.idle();
    const { purger, auditPruner, usagePruner, deliveryPruner } = app.infracat;
    for (const purge of [purger, auditPruner, usagePruner, deliveryPruner]) await purge.idle();
    const { port } = app.server.address() as { port: number };
    const tracker = app.infracat.tokens.lastUsed;
    for (const [i, tok] of tokens.entries()) tracker.record(tok.id, 5_000_000 + i);
    const before = store.stats.queries;
    const { slowestMs, answers } = await whileWorking(`http://127.0.0.1:${port}`, () => tracker.flush());
    assert.ok(slowestMs < LIVENESS_BOUND_MS, `/healthz took ${slowestMs.toFixed(0)} ms during the flush`);
    t.diagnostic(`${answers} /healthz answers, the slowest in ${slowestMs.toFixed(0)} ms`);
    assert.equal(store.stats.queries - before, Math.ceil(BIG_FLUSH / BATCH_ROWS.sqlite));
    assert.deepEqual(tracker.stats, { flushes: 1, rows: BIG_FLUSH, failures: 0 });
    for (const i of [0, BATCH_ROWS.sqlite, BIG_FLUSH - 1])
      assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, tokens[i]!.id))?.lastUsedAt, 5_000_000 + i);
  });
});

describe('token verification fails closed', () => {
  it('storage unreachable: token endpoints answer 503 + Retry-After promptly, never 200 or a hang', async (t) => {
    const port = await freePort();
    const store = new PostgresStore({ url: `postgres://u:p@127.0.0.1:${port}/x`, poolMax: 2, timeoutMs: 300 });
    const { app } = await build(t, { store });
    const started = Date.now();
    const res = await app.inject({
      method: 'GET',
      url: '/api/v1/api-tokens',
      headers: { authorization: `Bearer ${generateSecret('icat')}` },
    });
    assert.ok(Date.now() - started < 3000);
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers['retry-after'], '5');
    assert.equal(res.json<{ code: string }>().code, 'STORAGE_UNAVAILABLE');
  });
});

// (A delete refused by another instance within the bound: test/reliability/security.test.ts.)
for (const backend of backends()) {
  describe(`several instances on one ${backend.name} database`, () => {
    it('bootstrap: exactly one admin token when several instances start together', async (t) => {
      const db = await backend.fresh(t);
      const config = loadConfig({ DATABASE_URL: db.url });
      const stores = Array.from({ length: 4 }, () => db.open());
      t.after(async () => {
        for (const s of stores) await s.close();
      });
      const results = await Promise.all(stores.map((s) => createTokenDomain(config, s).service.bootstrapAdmin(true)));
      const winners = results.filter((r) => r !== null);
      assert.equal(winners.length, 1);
      assert.equal(await stores[0]!.tokens.count(), 1);
      assert.deepEqual(
        winners[0]!.token.scopes.length,
        14,
        'every registered scope (the read-only resources: read only)',
      );
    });
  });
}
