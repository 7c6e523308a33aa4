// Security properties in one place (the per-feature suites test them too): secrets
// never come back, unlisted fields are never serialised, a deleted token is refused by
// every kind of endpoint on every instance within the bound.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadDefaultCatalog } from '../../src/catalog/default.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { ev, rev } from '../helpers/audit.js';

describe('secrets in error bodies', () => {
  it('a token pasted into a wrong field is not echoed in the problem', async (t) => {
    const { app } = await build(t);
    const admin = await mintToken(app, ['api-tokens:write']);
    const leaked = generateSecret('icat');
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: admin.auth,
      payload: { name: 'x', scopes: [leaked] },
    });
    assert.equal(res.statusCode, 422);
    assert.ok(!res.body.includes(leaked), res.body);
    assert.ok(!res.body.includes(leaked.slice(5)), 'not even the random part');
    assert.match(res.body, /icat_\[REDACTED\]/);
    const check = await app.inject({ method: 'GET', url: `/api/v1/auth/check?scope=${leaked}`, headers: admin.auth });
    assert.equal(check.statusCode, 400);
    assert.ok(!check.body.includes(leaked.slice(5)));
  });
});

describe('unlisted fields are never serialised', () => {
  it('extra fields in a stored catalog document never reach the API', async (t) => {
    const { app, store } = await build(t, { env: { CATALOG_REFRESH_MS: '100000' } });
    await app.inject({ method: 'GET', url: '/readyz' });
    const c = loadDefaultCatalog() as unknown as Record<string, Record<string, unknown>[]>;
    c.plans![0]!.internal_cost_cents = 123;
    c.images![0]!.build_host = 'ci-7.internal';
    c.regions![0]!.datacenter_contract = 'secret';
    const latest = await store.catalog.latestVersion();
    assert.ok(await store.catalog.apply(rev(JSON.stringify(c), Date.now()), latest, ev()));
    await app.infracat.catalog.load();
    for (const url of [
      '/api/v1/plans',
      '/api/v1/images',
      '/api/v1/regions',
      `/api/v1/plans/${String(c.plans![0]!.slug)}`,
    ]) {
      const body = (await app.inject({ method: 'GET', url })).body;
      for (const leak of ['internal_cost_cents', 'build_host', 'ci-7.internal', 'datacenter_contract'])
        assert.ok(!body.includes(leak), `${url} shows ${leak}`);
    }
  });

  it('token responses carry no hash, no secret, no internal field', async (t) => {
    const { app } = await build(t);
    const admin = await mintToken(app, ['api-tokens:write']);
    for (const url of ['/api/v1/api-tokens', `/api/v1/api-tokens/${admin.id}`, '/api/v1/api-tokens/current']) {
      const body = (await app.inject({ method: 'GET', url, headers: admin.auth })).body;
      for (const leak of ['secret', 'hash', admin.secret, 'secretHash', 'createdAt'])
        assert.ok(!body.includes(leak), `${url} shows ${leak}`);
    }
  });
});

for (const backend of backends()) {
  describe(`a deleted token, everywhere (${backend.name})`, () => {
    it(
      'is refused at once where deleted, and by every endpoint kind on another instance within ' + 'TOKEN_CACHE_TTL_MS',
      async (t) => {
        const db = await backend.fresh(t);
        const env = { DATABASE_URL: db.url, TOKEN_CACHE_TTL_MS: '500' };
        const a = await build(t, { store: db.open(), env });
        const b = await build(t, { store: db.open(), env });
        // Holds the victim's scopes, so may delete it.
        const admin = await mintToken(a.app, ['api-tokens:write', 'apps:read', 'plans:read']);
        const victim = await mintToken(a.app, ['api-tokens:read', 'apps:read', 'plans:read']);
        const service = await mintToken(b.app, ['api-tokens:read']);
        const probes = [
          () => b.app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: victim.auth }),
          () => b.app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: victim.auth }),
          () =>
            b.app.inject({
              method: 'GET',
              url: '/api/v1/auth/check',
              headers: { ...victim.auth, 'x-original-method': 'GET', 'x-original-uri': '/apps/1' },
            }),
          () => b.app.inject({ method: 'GET', url: '/api/v1/plans', headers: victim.auth }),
        ];
        for (const probe of probes)
          assert.equal((await probe()).statusCode, 200, 'works before the delete (and is cached)');
        const introspect = () =>
          b.app.inject({
            method: 'POST',
            url: '/api/v1/api-tokens/introspect',
            headers: service.auth,
            payload: { token: victim.secret },
          });
        assert.equal((await introspect()).json<{ active: boolean }>().active, true);

        assert.equal(
          (await a.app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: victim.auth })).statusCode,
          200,
          'cached where it will be deleted too',
        );
        assert.equal(
          (await a.app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${victim.id}`, headers: admin.auth }))
            .statusCode,
          204,
        );
        const deletedAt = Date.now();
        assert.equal(
          (await a.app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: victim.auth })).statusCode,
          401,
          'refused at once where deleted',
        );
        await new Promise((r) => setTimeout(r, 500 + 100));
        for (const probe of probes) assert.equal((await probe()).statusCode, 401, 'refused after the bound');
        assert.equal((await introspect()).body, '{"active":false}');
        assert.ok(Date.now() - deletedAt < 2000);
      },
    );
  });
}
