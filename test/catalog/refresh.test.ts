// Catalog changes reach every instance without a restart, and catalog reads survive
// a PostgreSQL outage from the in-memory snapshot.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadDefaultCatalog } from '../../src/catalog/default.js';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { build } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { startEmbeddedPostgres } from '../helpers/embedded-pg.js';
import { ev, rev, TEST_CONTEXT } from '../helpers/audit.js';

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await check()) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

for (const backend of backends()) {
  describe(`catalog refresh on ${backend.name}`, () => {
    it('a catalog applied through one instance is served by another within CATALOG_REFRESH_MS', async (t) => {
      const db = await backend.fresh(t);
      const env = { DATABASE_URL: db.url, CATALOG_REFRESH_MS: '200' };
      const a = await build(t, { store: db.open(), env });
      const b = await build(t, { store: db.open(), env });
      const before = await b.app.inject({ method: 'GET', url: '/api/v1/plans/s-1vcpu-1gb' });
      assert.ok(before.body.endsWith('"price_monthly":6.00}'));
      const next = loadDefaultCatalog();
      next.plans = next.plans.map((p) => (p.slug === 's-1vcpu-1gb' ? { ...p, price_cents: 650 } : p));
      const { baseVersion } = await a.app.infracat.catalog.plan(next);
      const appliedAt = Date.now();
      assert.equal(await a.app.infracat.catalog.apply(next, baseVersion, TEST_CONTEXT), baseVersion + 1);
      const after = await a.app.inject({ method: 'GET', url: '/api/v1/plans/s-1vcpu-1gb' });
      assert.ok(after.body.endsWith('"price_monthly":6.50}'), 'the applying instance serves it at once');
      await waitFor(
        async () =>
          (await b.app.inject({ method: 'GET', url: '/api/v1/plans/s-1vcpu-1gb' })).body.endsWith(
            '"price_monthly":6.50}',
          ),
        3000,
      );
      assert.ok(Date.now() - appliedAt <= 200 + 500, `picked up after ${Date.now() - appliedAt} ms`);
      const etagB = (await b.app.inject({ method: 'GET', url: '/api/v1/plans' })).headers.etag;
      assert.notEqual(etagB, before.headers.etag, 'a new snapshot has a new ETag');
      assert.equal(
        etagB,
        (await a.app.inject({ method: 'GET', url: '/api/v1/plans' })).headers.etag,
        'instances agree on the ETag of a version',
      );
    });

    it('a stale apply (someone else applied first) is refused and changes nothing', async (t) => {
      const db = await backend.fresh(t);
      const { app } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url } });
      const svc = app.infracat.catalog;
      const next = loadDefaultCatalog();
      const { baseVersion } = await svc.plan(next);
      await svc.apply({ ...next, regions: next.regions.slice(1) }, baseVersion, TEST_CONTEXT);
      await assert.rejects(svc.apply({ ...next, regions: [] }, baseVersion, TEST_CONTEXT), /changed by someone else/);
      assert.equal(svc.snapshot.catalog.regions.length, next.regions.length - 1);
    });
  });
}

describe('catalog reads through a PostgreSQL outage', () => {
  it('keep answering 200 from memory while the server is stopped, and recover without a restart', async (t) => {
    const server = await startEmbeddedPostgres();
    t.after(() => server.destroy());
    const store = new PostgresStore({ url: server.url, poolMax: 3, timeoutMs: 500 });
    const { app } = await build(t, {
      store,
      env: { DATABASE_URL: server.url, CATALOG_REFRESH_MS: '100', DATABASE_TIMEOUT_MS: '500' },
    });
    const first = await app.inject({ method: 'GET', url: '/api/v1/plans' });
    assert.equal(first.statusCode, 200);

    await server.stop();
    const svc = app.infracat.catalog;
    const failuresBefore = svc.refreshFailures;
    await waitFor(async () => svc.refreshFailures > failuresBefore, 5000);
    for (const url of ['/api/v1/plans', '/api/v1/images?distribution=ubuntu', '/api/v1/regions/nyc3']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
    }
    const during = await app.inject({ method: 'GET', url: '/api/v1/plans' });
    assert.equal(during.body, first.body);
    assert.equal(during.headers.etag, first.headers.etag);
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    assert.equal(ready.headers['retry-after'], '5');

    await server.start();
    await waitFor(async () => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200, 10_000);
    // A catalog applied after the outage is picked up by the same, never restarted, app.
    const other = new PostgresStore({ url: server.url, poolMax: 1, timeoutMs: 2000 });
    t.after(() => other.close());
    const latest = await other.catalog.latestVersion();
    const next = loadDefaultCatalog();
    next.regions = next.regions.filter((r) => r.slug !== 'syd1');
    const doc = JSON.stringify(next);
    assert.ok(await other.catalog.apply(rev(doc, Date.now()), latest, ev()));
    await waitFor(
      async () => (await app.inject({ method: 'GET', url: '/api/v1/regions/syd1' })).statusCode === 404,
      5000,
    );
  });
});
