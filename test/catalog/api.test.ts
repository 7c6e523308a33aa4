// The catalog endpoints on both backends: exact fields, order, two-digit prices, one
// entry by slug, ETag/304, Cache-Control, filters, access modes, and no storage reads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadDefaultCatalog } from '../../src/catalog/default.js';
import { KINDS } from '../../src/catalog/model.js';
import { ENTITIES, REGION_SLUG_PATTERN } from '../../src/catalog/schemas.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

const FIELDS = {
  images: ['distribution', 'min_disk_gb', 'name', 'slug', 'type', 'version'],
  plans: ['disk_gb', 'id', 'memory_mb', 'price_monthly', 'slug', 'transfer_tb', 'type', 'vcpus'],
  regions: ['available', 'features', 'name', 'slug'],
} as const;

const shipped = loadDefaultCatalog();

for (const backend of backends()) {
  describe(`catalog endpoints on ${backend.name}`, () => {
    async function setup(t: Parameters<typeof backend.fresh>[0], env: Record<string, string> = {}) {
      const db = await backend.fresh(t);
      return build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...env } });
    }

    it("each list is a bare array of objects with exactly the spec's fields and types", async (t) => {
      const { app } = await setup(t);
      for (const kind of ['images', 'plans', 'regions'] as const) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/${kind}` });
        assert.equal(res.statusCode, 200, kind);
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        const list = res.json<Record<string, unknown>[]>();
        assert.ok(Array.isArray(list) && list.length > 0);
        for (const item of list) assert.deepEqual(Object.keys(item).sort(), [...FIELDS[kind]], kind);
      }
      const plans = (await app.inject({ method: 'GET', url: '/api/v1/plans' })).json<Record<string, unknown>[]>();
      for (const p of plans) {
        for (const f of ['vcpus', 'memory_mb', 'disk_gb', 'transfer_tb']) assert.ok(Number.isInteger(p[f]), f);
        assert.equal(p.id, p.slug);
        assert.equal(typeof p.price_monthly, 'number');
      }
      const regions = (await app.inject({ method: 'GET', url: '/api/v1/regions' })).json<Record<string, unknown>[]>();
      for (const r of regions) {
        assert.equal(typeof r.available, 'boolean');
        assert.ok(Array.isArray(r.features));
      }
      const images = (await app.inject({ method: 'GET', url: '/api/v1/images' })).json<Record<string, unknown>[]>();
      for (const i of images) {
        assert.equal(typeof i.version, 'string');
        assert.ok(Number.isInteger(i.min_disk_gb));
      }
    });

    it('prices are written with exactly two fraction digits', async (t) => {
      const { app } = await setup(t);
      const text = (await app.inject({ method: 'GET', url: '/api/v1/plans' })).body;
      const prices = [...text.matchAll(/"price_monthly":([^,}]+)/g)].map((m) => m[1]);
      assert.equal(prices.length, shipped.plans.length);
      for (const p of prices) assert.match(p!, /^\d+\.\d{2}$/);
      assert.ok(text.includes('"price_monthly":6.00}'));
      assert.ok(text.includes('"price_monthly":42.50}'));
      const one = (await app.inject({ method: 'GET', url: '/api/v1/plans/s-1vcpu-1gb' })).body;
      assert.ok(one.endsWith('"price_monthly":6.00}'));
    });

    it('lists come in the documented order', async (t) => {
      const { app } = await setup(t);
      const plans = (await app.inject({ method: 'GET', url: '/api/v1/plans' })).json<{ price_monthly: number }[]>();
      assert.deepEqual(
        plans.map((p) => p.price_monthly),
        [...plans.map((p) => p.price_monthly)].sort((a, b) => a - b),
        'plans by price',
      );
      const regions = (await app.inject({ method: 'GET', url: '/api/v1/regions' })).json<{ slug: string }[]>();
      assert.deepEqual(
        regions.map((r) => r.slug),
        [...regions.map((r) => r.slug)].sort(),
        'regions by slug',
      );
      const images = (await app.inject({ method: 'GET', url: '/api/v1/images' })).json<{ slug: string }[]>();
      const ubuntu = images.filter((i) => i.slug.startsWith('ubuntu-')).map((i) => i.slug);
      // ubuntu-22-04 is deprecated in the shipped file: from its sunset_at on, it is not listed.
      const live = (slug: string) => {
        const sunset = shipped.images.find((i) => i.slug === slug)?.sunset_at;
        return sunset === undefined || Date.parse(sunset) > Date.now();
      };
      assert.deepEqual(ubuntu, ['ubuntu-26-04', 'ubuntu-24-04', 'ubuntu-22-04'].filter(live), 'newest version first');
      assert.equal(images[0]!.slug.split('-')[0], 'almalinux', 'distributions A-Z');
    });

    it('GET /{kind}/{slug} returns one object, or a 404 problem', async (t) => {
      const { app } = await setup(t);
      const img = await app.inject({ method: 'GET', url: '/api/v1/images/debian-12' });
      assert.equal(img.statusCode, 200);
      assert.deepEqual(img.json(), {
        slug: 'debian-12',
        name: 'Debian 12 (bookworm)',
        distribution: 'Debian',
        version: '12',
        type: 'base',
        min_disk_gb: 10,
      });
      const region = await app.inject({ method: 'GET', url: '/api/v1/regions/syd1' });
      assert.deepEqual(region.json(), { slug: 'syd1', name: 'Sydney 1', available: false, features: ['ipv6'] });
      for (const url of ['/api/v1/images/windows-11', '/api/v1/plans/x', '/api/v1/regions/mars1']) {
        const res = await app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 404, url);
        assert.equal(res.json<{ code: string }>().code, 'NOT_FOUND');
      }
    });

    it(
      'a strong ETag per snapshot; If-None-Match answers 304 without a body; Cache-Control is ' + 'configurable',
      async (t) => {
        const { app } = await setup(t);
        const first = await app.inject({ method: 'GET', url: '/api/v1/images' });
        const etag = String(first.headers.etag);
        assert.match(etag, /^"v1-[0-9a-f]{20}"$/);
        assert.equal(first.headers['cache-control'], 'public, max-age=60');
        for (const header of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
          const again = await app.inject({
            method: 'GET',
            url: '/api/v1/images',
            headers: { 'if-none-match': header },
          });
          assert.equal(again.statusCode, 304, header);
          assert.equal(again.body, '');
          assert.equal(again.headers.etag, etag);
          assert.equal(again.headers['cache-control'], 'public, max-age=60');
        }
        const stale = await app.inject({
          method: 'GET',
          url: '/api/v1/images',
          headers: { 'if-none-match': '"v0-old"' },
        });
        assert.equal(stale.statusCode, 200);
        const item = await app.inject({
          method: 'GET',
          url: '/api/v1/plans/s-1vcpu-1gb',
          headers: { 'if-none-match': etag },
        });
        assert.equal(item.statusCode, 304);

        const custom = await setup(t, { CATALOG_CACHE_CONTROL: 'no-cache' });
        assert.equal(
          (await custom.app.inject({ method: 'GET', url: '/api/v1/regions' })).headers['cache-control'],
          'no-cache',
        );
      },
    );

    it('plan filters: type, min_vcpus, min_memory_mb, max_price_monthly', async (t) => {
      const { app } = await setup(t);
      const get = async (q: string) =>
        (await app.inject({ method: 'GET', url: `/api/v1/plans?${q}` })).json<
          { slug: string; type: string; vcpus: number; memory_mb: number; price_monthly: number }[]
        >();
      const mem = await get('type=memory-optimized');
      assert.deepEqual(
        mem.map((p) => p.slug),
        shipped.plans.filter((p) => p.type === 'memory-optimized').map((p) => p.slug),
      );
      assert.ok((await get('min_vcpus=8')).every((p) => p.vcpus >= 8));
      assert.equal((await get('min_vcpus=8')).length, shipped.plans.filter((p) => p.vcpus >= 8).length);
      assert.equal((await get('min_memory_mb=16384')).length, shipped.plans.filter((p) => p.memory_mb >= 16384).length);
      assert.deepEqual(
        (await get('max_price_monthly=18')).map((p) => p.slug),
        ['s-1vcpu-1gb', 's-1vcpu-2gb', 's-2vcpu-2gb'],
      );
      assert.deepEqual((await get('max_price_monthly=42.49')).map((p) => p.slug).includes('c-2vcpu-4gb'), false);
      assert.deepEqual((await get('max_price_monthly=42.50')).map((p) => p.slug).includes('c-2vcpu-4gb'), true);
      const combined = await get('type=general&min_vcpus=2&max_price_monthly=50');
      assert.deepEqual(
        combined.map((p) => p.slug),
        ['s-2vcpu-2gb', 's-2vcpu-4gb', 's-4vcpu-8gb'],
      );
      assert.deepEqual(await get('min_vcpus=1000'), [], 'no match: an empty array');
    });

    it('image and region filters', async (t) => {
      const { app } = await setup(t);
      const images = async (q: string) =>
        (await app.inject({ method: 'GET', url: `/api/v1/images?${q}` })).json<{ slug: string }[]>();
      assert.deepEqual(
        (await images('distribution=debian')).map((i) => i.slug),
        ['debian-13', 'debian-12'],
        'case-insensitive',
      );
      assert.deepEqual(
        (await images('distribution=Rocky%20Linux')).map((i) => i.slug),
        ['rocky-linux-10', 'rocky-linux-9'],
      );
      assert.equal((await images('type=base')).length, shipped.images.length);
      const regions = async (q: string) =>
        (await app.inject({ method: 'GET', url: `/api/v1/regions?${q}` })).json<
          { slug: string; available: boolean; features: string[] }[]
        >();
      assert.deepEqual(
        (await regions('available=false')).map((r) => r.slug),
        ['nyc1', 'syd1'],
      );
      const storage = await regions('feature=storage');
      assert.ok(storage.length > 0 && storage.every((r) => r.features.includes('storage')));
      const both = await regions('feature=storage&feature=ipv6&available=true');
      assert.ok(both.every((r) => r.available && r.features.includes('ipv6') && r.features.includes('storage')));
      assert.ok(!both.some((r) => r.slug === 'blr1'));
    });

    it('an unknown query parameter or a bad value answers 400 naming the parameter', async (t) => {
      const { app } = await setup(t);
      const cases: [string, string][] = [
        ['/api/v1/plans?min_vcpus=two', 'min_vcpus'],
        ['/api/v1/plans?min_vcpus=0', 'min_vcpus'],
        ['/api/v1/plans?max_price_monthly=5.999', 'max_price_monthly'],
        ['/api/v1/plans?max_price_monthly=-1', 'max_price_monthly'],
        ['/api/v1/plans?type=gpu', 'type'],
        ['/api/v1/plans?sort=price', 'sort'],
        ['/api/v1/images?page=2', 'page'],
        ['/api/v1/regions?available=maybe', 'available'],
        ['/api/v1/regions?features=ipv6', 'features'],
      ];
      for (const [url, param] of cases) {
        const res = await app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 400, url);
        const body = res.json<{ code: string; detail: string; errors: { pointer: string }[] }>();
        assert.equal(body.code, 'INVALID_QUERY', url);
        assert.match(body.detail, new RegExp(`\\b${param}\\b`), url);
        assert.ok(
          body.errors.some((e) => e.pointer === `querystring:/${param}`),
          url,
        );
      }
    });

    it('public access: anonymous reads work, a valid token counts as use, an invalid one is refused', async (t) => {
      const { app } = await setup(t, { LAST_USED_FLUSH_MS: '600000' });
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/images' })).statusCode, 200);
      const bad = await app.inject({
        method: 'GET',
        url: '/api/v1/images',
        headers: { authorization: `Bearer ${generateSecret('icat')}` },
      });
      assert.equal(bad.statusCode, 401);
      assert.match(String(bad.headers['www-authenticate']), /error="invalid_token"/);
      const malformed = await app.inject({
        method: 'GET',
        url: '/api/v1/regions',
        headers: { authorization: 'Bearer nope' },
      });
      assert.equal(malformed.statusCode, 401);
      const tok = await mintToken(app, ['apps:read']);
      assert.equal(app.infracat.tokens.lastUsed.pending(tok.id), undefined);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/plans', headers: tok.auth })).statusCode,
        200,
        'any valid token may read in public mode',
      );
      assert.notEqual(app.infracat.tokens.lastUsed.pending(tok.id), undefined, 'the read counted as a use');
    });

    it('token access: each catalog needs its read scope', async (t) => {
      const { app } = await setup(t, { CATALOG_ACCESS: 'token' });
      const anon = await app.inject({ method: 'GET', url: '/api/v1/plans' });
      assert.equal(anon.statusCode, 401);
      assert.equal(anon.headers['www-authenticate'], 'Bearer realm="infracat"');
      const images = await mintToken(app, ['images:read', 'regions:read']);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/images', headers: images.auth })).statusCode, 200);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/regions/nyc3', headers: images.auth })).statusCode,
        200,
      );
      const denied = await app.inject({ method: 'GET', url: '/api/v1/plans', headers: images.auth });
      assert.equal(denied.statusCode, 403);
      assert.equal(
        denied.headers['www-authenticate'],
        'Bearer realm="infracat", error="insufficient_scope", scope="plans:read"',
      );
      const ok = await app.inject({ method: 'GET', url: '/api/v1/images', headers: images.auth });
      assert.equal(
        ok.headers['cache-control'],
        'private, max-age=60',
        'authenticated responses are not for shared caches',
      );
    });

    it('a list answers exactly these headers, in this order, each request with its own id and RateLimit', async (t) => {
      const { app } = await setup(t, { RATE_LIMIT_ANONYMOUS: '1000' });
      const tok = await mintToken(app, ['plans:read']);
      const names = [
        'x-content-type-options',
        'x-frame-options',
        'referrer-policy',
        'cross-origin-resource-policy',
        'strict-transport-security',
        'content-security-policy',
        'x-request-id',
        'ratelimit-policy',
        'ratelimit',
        'etag',
        'cache-control',
        'content-type',
        'content-length',
      ];
      const ids = new Set<string>();
      for (const [kind, headers, policy, remaining] of [
        ['plans', {}, '"anonymous";q=1000;w=60', 999],
        ['images', {}, '"anonymous";q=1000;w=60', 998],
        ['plans', tok.auth, '"token";q=600;w=60, "account";q=6000;w=60', 5999],
        ['plans', tok.auth, '"token";q=600;w=60, "account";q=6000;w=60', 5998],
      ] as const) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/${kind}`, headers });
        assert.equal(res.statusCode, 200);
        const sent = Object.keys(res.headers).filter((h) => h !== 'date' && h !== 'connection');
        assert.deepEqual(sent, names, kind);
        assert.equal(res.headers['x-content-type-options'], 'nosniff');
        assert.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
        assert.equal(res.headers['ratelimit-policy'], policy);
        assert.match(String(res.headers.ratelimit), new RegExp(`;r=${remaining};t=\\d+$`));
        assert.match(String(res.headers.etag), /^"v1-[0-9a-f]+"$/);
        assert.equal(res.headers['cache-control'], 'public, max-age=60');
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        assert.equal(Number(res.headers['content-length']), res.rawPayload.length);
        ids.add(String(res.headers['x-request-id']));
      }
      assert.equal(ids.size, 4, 'each answer its own request id');
    });

    it('a cached token on a catalog read is verified and used once per request', async (t) => {
      const { app } = await setup(t, { LAST_USED_FLUSH_MS: '600000' });
      const { service, cache, lastUsed } = app.infracat.tokens;
      const tok = await mintToken(app, ['plans:read']);
      await app.inject({ method: 'GET', url: '/api/v1/plans', headers: tok.auth }); // now cached
      lastUsed.forget(tok.id);
      const before = { verifications: { ...service.verifications }, hits: cache.hits, misses: cache.misses };
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/plans', headers: tok.auth })).statusCode, 200);
      assert.deepEqual(service.verifications, { ...before.verifications, ok: before.verifications.ok + 1 });
      assert.equal(cache.hits, before.hits + 1);
      assert.equal(cache.misses, before.misses);
      assert.notEqual(lastUsed.pending(tok.id), undefined, 'the use is recorded for last_used_at');
    });

    it('catalog reads never query storage', async (t) => {
      const { app, store } = await setup(t, { CATALOG_REFRESH_MS: '600000' });
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/images' })).statusCode, 200);
      // Close the store under the app: any storage access from here on would fail.
      await store.close();
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 503, 'storage really is gone');
      for (const url of [
        '/api/v1/images',
        '/api/v1/plans?type=general',
        '/api/v1/regions/nyc3',
        '/api/v1/plans/s-1vcpu-1gb',
      ]) {
        assert.equal((await app.inject({ method: 'GET', url })).statusCode, 200, url);
      }
    });
  });
}

describe('the catalog endpoints in the OpenAPI document', () => {
  it('document each entity with the schema the catalog file is validated with (rules included)', async (t) => {
    const { app } = await build(t);
    type Responses = Record<string, { content: Record<string, { schema: Record<string, unknown> }> }>;
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, { get: { responses: Responses } }>;
      components: { schemas: Record<string, Record<string, unknown>> };
    }>();
    const served = (path: string) => doc.paths[path]!.get.responses['200']!.content['application/json']!.schema;
    const NAMES = { images: 'Image', plans: 'Plan', regions: 'Region' } as const;
    for (const kind of KINDS) {
      // As JSON; @fastify/swagger writes a const as a one-value enum.
      const constAsEnum = (_key: string, v: unknown) => {
        if (typeof v !== 'object' || v === null || !('const' in v)) return v;
        const { const: c, ...rest } = v;
        return { ...rest, enum: [c] };
      };
      const declared = JSON.parse(JSON.stringify(ENTITIES[kind], constAsEnum)) as unknown;
      const ref = { $ref: `#/components/schemas/${NAMES[kind]}` };
      assert.deepEqual(served(`/api/v1/${kind}/{slug}`), ref, kind);
      assert.deepEqual(served(`/api/v1/${kind}`).items, ref, kind);
      assert.deepEqual(doc.components.schemas[NAMES[kind]], { title: NAMES[kind], ...(declared as object) }, kind);
    }
    const region = doc.components.schemas.Region as { properties: Record<string, { pattern?: string }> };
    const documented = region.properties.slug!.pattern;
    assert.equal(documented, REGION_SLUG_PATTERN.source, 'the documented slug is the one the file accepts');
  });
});
