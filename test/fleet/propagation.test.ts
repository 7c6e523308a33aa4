// Changes reach every other instance within a second, pushed by storage (src/fleet/changes.ts):
// PostgreSQL LISTEN/NOTIFY, SQLite's change counter for several processes on one file.
// Every instance here trusts a cached verification for 10 minutes and polls the catalog
// once an hour, so only the change feed can explain a change seen within the bound.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import type { App } from '../../src/http/types.js';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { build, mintToken, type Built } from '../helpers/app.js';
import { backends, postgresBackend, type BackendDb } from '../helpers/backends.js';
import { applyDocument } from '../helpers/catalog-apply.js';
import { freePort } from '../helpers/embedded-pg.js';

/** The bound docs/contract.md states: a change made on one instance is enforced on the others within it. */
const BOUND_MS = 1000;
const ENV = {
  TOKEN_CACHE_TTL_MS: '600000',
  CATALOG_REFRESH_MS: '3600000',
  AUTH_FAILURE_LIMIT: '1000000',
  RATE_LIMIT: '0',
  RATE_LIMIT_ANONYMOUS: '0',
};

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** Milliseconds until `done()` holds; fails past `bound`. */
async function within(bound: number, what: string, done: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await done()) return performance.now() - started;
    assert.ok(performance.now() - started < bound, `${what} within ${bound} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function fleet(t: Parameters<typeof build>[0], db: BackendDb, n: number, env: Record<string, string> = {}) {
  const apps: Built[] = [];
  for (let i = 0; i < n; i++)
    apps.push(await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...ENV, ...env } }));
  return apps;
}

const status = async (app: App, secret: string, url = '/api/v1/api-tokens/current') =>
  (await app.inject({ method: 'GET', url, headers: bearer(secret) })).statusCode;

for (const backend of backends()) {
  describe(`changes reach the other instances within ${BOUND_MS} ms (${backend.name})`, () => {
    it('deleted tokens: refused by every other instance', async (t) => {
      const db = await backend.fresh(t);
      const [a, b, c] = (await fleet(t, db, 3)).map((x) => x.app) as [App, App, App];
      const admin = await mintToken(a, ['api-tokens:write', 'api-tokens:read']);
      const tokens = [];
      for (let i = 0; i < 10; i++) tokens.push(await mintToken(a, ['api-tokens:read'], `t${i}`));
      for (const token of tokens) for (const app of [b, c]) assert.equal(await status(app, token.secret), 200);
      for (const token of tokens) {
        const res = await a.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${token.id}`, headers: admin.auth });
        assert.equal(res.statusCode, 204);
        for (const app of [b, c])
          await within(BOUND_MS, 'the deleted token refused', async () => (await status(app, token.secret)) === 401);
      }
    });

    it('rotation (grace 0, and a second rotation ending a grace period) and narrowed scopes', async (t) => {
      const db = await backend.fresh(t);
      const [a, b] = (await fleet(t, db, 2)).map((x) => x.app) as [App, App];
      const admin = await mintToken(a, ['api-tokens:write', 'api-tokens:read', 'apps:read']);
      const token = await mintToken(a, ['api-tokens:read', 'apps:read'], 'rotated');
      const rotate = async (grace: number) => {
        const res = await a.inject({
          method: 'POST',
          url: `/api/v1/api-tokens/${token.id}/rotate`,
          headers: admin.auth,
          payload: { grace_period_s: grace },
        });
        assert.equal(res.statusCode, 200, res.body);
        return res.json<{ token: string }>().token;
      };
      assert.equal(await status(b, token.secret), 200, 'cached on B');
      const second = await rotate(0);
      await within(
        BOUND_MS,
        'the rotated-out secret refused on B',
        async () => (await status(b, token.secret)) === 401,
      );
      assert.equal(await status(b, second), 200);
      // A grace period, then a rotation that ends it at once.
      const third = await rotate(3600);
      assert.equal(await status(b, second), 200, 'in its grace period, cached on B');
      const fourth = await rotate(3600);
      await within(BOUND_MS, 'the earlier grace period ended on B', async () => (await status(b, second)) === 401);
      assert.equal(await status(b, third), 200);
      assert.equal(await status(b, fourth), 200);
      // Narrowed scopes.
      assert.equal(await status(b, fourth, '/api/v1/api-tokens'), 200, 'cached on B with api-tokens:read');
      const patched = await a.inject({
        method: 'PATCH',
        url: `/api/v1/api-tokens/${token.id}`,
        headers: admin.auth,
        payload: { scopes: ['apps:read'] },
      });
      assert.equal(patched.statusCode, 200, patched.body);
      await within(
        BOUND_MS,
        'the narrowed scope refused on B',
        async () => (await status(b, fourth, '/api/v1/api-tokens')) === 403,
      );
    });

    it('token conditions: disabled, re-enabled, limited to networks, a later not_before', async (t) => {
      const db = await backend.fresh(t);
      const [a, b] = (await fleet(t, db, 2)).map((x) => x.app) as [App, App];
      const admin = await mintToken(a, ['api-tokens:write', 'api-tokens:read', 'apps:read']);
      const token = await mintToken(a, ['api-tokens:read'], 'conditioned');
      const set = async (payload: object) => {
        const res = await a.inject({
          method: 'PATCH',
          url: `/api/v1/api-tokens/${token.id}`,
          headers: admin.auth,
          payload,
        });
        assert.equal(res.statusCode, 200, res.body);
      };
      assert.equal(await status(b, token.secret), 200, 'cached on B');
      await set({ enabled: false });
      await within(BOUND_MS, 'the disabled token refused on B', async () => (await status(b, token.secret)) === 401);
      await set({ enabled: true });
      await within(BOUND_MS, 'the re-enabled token works on B', async () => (await status(b, token.secret)) === 200);
      // inject's client address is 127.0.0.1.
      await set({ allowed_cidrs: ['192.0.2.0/24'] });
      await within(BOUND_MS, 'the limited token refused on B', async () => (await status(b, token.secret)) === 403);
      await set({ allowed_cidrs: ['127.0.0.0/8'] });
      await within(BOUND_MS, 'the widened token works on B', async () => (await status(b, token.secret)) === 200);
      await set({ not_before: new Date(Date.now() + 3_600_000).toISOString() });
      await within(BOUND_MS, 'the token not valid yet on B', async () => (await status(b, token.secret)) === 401);
    });

    it('account suspension and deletion', async (t) => {
      const db = await backend.fresh(t);
      const [a, b] = (await fleet(t, db, 2)).map((x) => x.app) as [App, App];
      const operator = await mintToken(a, ['accounts:write', 'api-tokens:write', 'api-tokens:read']);
      const account = (
        await a.inject({ method: 'POST', url: '/api/v1/accounts', headers: operator.auth, payload: { name: 'Acme' } })
      ).json<{ id: string }>();
      const created = await a.inject({
        method: 'POST',
        url: `/api/v1/accounts/${account.id}/api-tokens`,
        headers: operator.auth,
        payload: { name: 'ci', scopes: ['api-tokens:read'] },
      });
      assert.equal(created.statusCode, 201, created.body);
      const secret = created.json<{ token: string }>().token;
      const patch = (s: string) =>
        a.inject({
          method: 'PATCH',
          url: `/api/v1/accounts/${account.id}`,
          headers: operator.auth,
          payload: { status: s },
        });
      assert.equal(await status(b, secret), 200, 'cached on B');
      assert.equal((await patch('suspended')).statusCode, 200);
      await within(BOUND_MS, 'the suspended account refused on B', async () => (await status(b, secret)) === 401);
      assert.equal((await patch('active')).statusCode, 200);
      await within(BOUND_MS, 'the resumed account accepted on B', async () => (await status(b, secret)) === 200);
      const del = await a.inject({ method: 'DELETE', url: `/api/v1/accounts/${account.id}`, headers: operator.auth });
      assert.equal(del.statusCode, 204, del.body);
      await within(BOUND_MS, 'the deleted account refused on B', async () => (await status(b, secret)) === 401);
    });

    it('a catalog apply: served by every other instance', async (t) => {
      const db = await backend.fresh(t);
      const [a, b, c] = (await fleet(t, db, 3)).map((x) => x.app) as [App, App, App];
      const before = await b.inject({ method: 'GET', url: '/api/v1/regions' });
      assert.equal(before.statusCode, 200);
      const version = await applyDocument(a, {
        regions: [{ slug: 'xyz1', name: 'Somewhere', available: true, features: [] }],
        plans: [],
        images: [],
      });
      for (const app of [b, c])
        await within(BOUND_MS, `catalog version ${version} served`, async () => {
          const res = await app.inject({ method: 'GET', url: '/api/v1/regions' });
          return (
            res
              .json<{ slug: string }[]>()
              .map((r) => r.slug)
              .join() === 'xyz1'
          );
        });
    });
  });
}

describe('the PostgreSQL listening connection', () => {
  it('an instance is ready once it hears changes: the feed is up and its resync taken in at start', async (t) => {
    const backend = postgresBackend(t);
    if (backend === undefined) return;
    const db = await backend.fresh(t);
    const { app } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...ENV } });
    // Read at once after start: nothing may still be on its way in the background.
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(text, /^infracat_change_feed_listening 1$/m);
    assert.match(text, /^infracat_change_feed_changes_total\{kind="resync"\} 1$/m);
  });

  it('reconnects by itself after the server drops it, and changes flow again', async (t) => {
    const backend = postgresBackend(t);
    if (backend === undefined) return;
    const db = await backend.fresh(t);
    const [a, b] = await fleet(t, db, 2);
    const admin = await mintToken(a!.app, ['api-tokens:write', 'api-tokens:read']);
    const metric = async (app: App, name: string) => {
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    };
    await within(5000, 'B listening', async () => (await metric(b!.app, 'infracat_change_feed_listening')) === 1);
    const client = new pg.Client({ connectionString: backend.adminUrl });
    await client.connect();
    t.after(() => client.end());
    const killed = await client.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'infracat-listen'",
    );
    assert.ok(killed.rowCount !== null && killed.rowCount >= 2, 'both listening connections terminated');
    await within(5000, 'B lost it', async () => (await metric(b!.app, 'infracat_change_feed_disconnects_total')) >= 1);
    await within(5000, 'B listening again', async () => (await metric(b!.app, 'infracat_change_feed_listening')) === 1);
    assert.match(b!.logs.text, /lost the connection that hears changes/);
    const token = await mintToken(a!.app, ['api-tokens:read'], 'after');
    assert.equal(await status(b!.app, token.secret), 200);
    const res = await a!.app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${token.id}`, headers: admin.auth });
    assert.equal(res.statusCode, 204);
    await within(
      BOUND_MS,
      'refused on B after the reconnect',
      async () => (await status(b!.app, token.secret)) === 401,
    );
  });

  it('while it cannot connect: the instance is ready and the TTL still bounds a revocation', async (t) => {
    const backend = postgresBackend(t);
    if (backend === undefined) return;
    const db = await backend.fresh(t);
    // Nothing listens on this port: the listening connection never comes up.
    const nowhere = `postgres://infracat@127.0.0.1:${await freePort()}/infracat`;
    const env = { TOKEN_CACHE_TTL_MS: '300', DATABASE_NOTIFY_URL: nowhere };
    const a = (await fleet(t, db, 1))[0]!.app;
    const store = new PostgresStore({ url: db.url, poolMax: 4, timeoutMs: 2000, notifyUrl: nowhere });
    const b = await build(t, { store, env: { DATABASE_URL: db.url, ...ENV, ...env } });
    assert.equal((await b.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200, 'ready without it');
    const admin = await mintToken(a, ['api-tokens:write', 'api-tokens:read']);
    const token = await mintToken(a, ['api-tokens:read'], 'ttl');
    assert.equal(await status(b.app, token.secret), 200);
    const res = await a.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${token.id}`, headers: admin.auth });
    assert.equal(res.statusCode, 204);
    await within(
      1500,
      'refused on B once its cached entry expires',
      async () => (await status(b.app, token.secret)) === 401,
    );
    assert.match(b.logs.text, /lost the connection that hears changes/);
  });
});
