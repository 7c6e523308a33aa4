// Deprecation and successors on both backends: single-item GETs carry Deprecation (RFC
// 9745), Sunset (RFC 8594) and the successor Link; lists carry none; past sunset_at the
// entry leaves the lists and its GET is 410 Gone, by the clock alone (no apply, no storage).
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { describe, it } from 'node:test';
import { build, changeFeedSettled } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { applyDocument } from '../helpers/catalog-apply.js';
import { image, plan, region } from '../helpers/catalog-entries.js';
import { parseExposition, value } from '../helpers/prometheus.js';

const T0 = Date.parse('2027-03-01T12:00:00Z');
const DEPRECATED = '2027-01-15T00:00:00Z';
const SUNSET = '2027-06-01T00:00:00Z';

const old = image({
  slug: 'ubuntu-22-04',
  name: 'Ubuntu 22.04 LTS',
  version: '22.04',
  deprecated_at: DEPRECATED,
  sunset_at: SUNSET,
  successor: 'ubuntu-24-04',
});

const DOCUMENT = {
  currency: 'USD',
  images: [image(), old],
  plans: [
    plan(),
    // Deprecated with neither sunset nor successor: only the Deprecation header.
    plan({
      id: 's-2vcpu-2gb',
      slug: 's-2vcpu-2gb',
      vcpus: 2,
      memory_mb: 2048,
      price_monthly: 18,
      deprecated_at: '2027-02-01T00:00:00Z',
    }),
  ],
  regions: [
    region(),
    region({
      slug: 'nyc1',
      name: 'New York 1',
      deprecated_at: DEPRECATED,
      sunset_at: SUNSET,
      successor: 'nyc3',
    }),
  ],
};

const LIFECYCLE = ['deprecation', 'sunset', 'link'] as const;

for (const backend of backends()) {
  describe(`catalog deprecation on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}) {
      const clock = { now: T0 };
      const db = await backend.fresh(t);
      const built = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, CATALOG_REFRESH_MS: '600000', INSTANCE_HEARTBEAT_MS: '60000', ...env },
        now: () => clock.now,
      });
      await applyDocument(built.app, DOCUMENT);
      await changeFeedSettled(built.app);
      const get = (url: string, headers: Record<string, string> = {}) =>
        built.app.inject({ method: 'GET', url, headers });
      return { ...built, clock, get };
    }

    it('a deprecated entry answers Deprecation, Sunset and the successor Link; others and lists none', async (t) => {
      const { get } = await setup(t);
      const res = await get('/api/v1/images/ubuntu-22-04');
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers.deprecation, `@${Date.parse(DEPRECATED) / 1000}`);
      assert.equal(res.headers.deprecation, '@1799971200');
      assert.equal(res.headers.sunset, 'Tue, 01 Jun 2027 00:00:00 GMT');
      assert.equal(res.headers.link, '</api/v1/images/ubuntu-24-04>; rel="successor-version"');
      assert.deepEqual(Object.keys(res.json<object>()).sort(), [
        'distribution',
        'min_disk_gb',
        'name',
        'slug',
        'type',
        'version',
      ]);
      // A 304 still says it: the headers describe the entry, not the bytes.
      const again = await get('/api/v1/images/ubuntu-22-04', { 'if-none-match': String(res.headers.etag) });
      assert.equal(again.statusCode, 304);
      assert.equal(again.headers.deprecation, '@1799971200');
      assert.equal(again.headers.link, '</api/v1/images/ubuntu-24-04>; rel="successor-version"');

      const region = await get('/api/v1/regions/nyc1');
      assert.equal(region.headers.link, '</api/v1/regions/nyc3>; rel="successor-version"');
      const onlyDeprecated = await get('/api/v1/plans/s-2vcpu-2gb');
      assert.equal(onlyDeprecated.headers.deprecation, `@${Date.parse('2027-02-01T00:00:00Z') / 1000}`);
      assert.equal(onlyDeprecated.headers.sunset, undefined);
      assert.equal(onlyDeprecated.headers.link, undefined);

      for (const url of ['/api/v1/images/ubuntu-24-04', '/api/v1/plans/s-1vcpu-1gb', '/api/v1/regions/nyc3']) {
        const plain = await get(url);
        for (const h of LIFECYCLE) assert.equal(plain.headers[h], undefined, `${url} ${h}`);
      }
      for (const url of ['/api/v1/images', '/api/v1/plans', '/api/v1/regions', '/api/v1/images?region=nyc1']) {
        const list = await get(url);
        assert.equal(list.statusCode, 200, url);
        for (const h of LIFECYCLE) assert.equal(list.headers[h], undefined, `${url} ${h}`);
      }
      const images = (await get('/api/v1/images')).json<{ slug: string }[]>().map((i) => i.slug);
      assert.deepEqual(images, ['ubuntu-24-04', 'ubuntu-22-04'], 'listed until its sunset');
    });

    it('at sunset_at it leaves the lists, its GET is 410 with the successor Link: no apply needed', async (t) => {
      const { app, clock, get } = await setup(t);
      const queries = async () =>
        value(parseExposition((await get('/metrics')).body), 'infracat_storage_queries_total')!;
      const versions = async () => (await app.infracat.catalog.revisions(100)).length;
      const before = {
        images: await get('/api/v1/images'),
        regions: await get('/api/v1/regions'),
        plans: await get('/api/v1/plans'),
        revisions: await versions(),
        queries: await queries(),
      };

      clock.now = Date.parse(SUNSET) - 1;
      assert.equal((await get('/api/v1/images/ubuntu-22-04')).statusCode, 200, 'the last millisecond before');
      assert.equal((await get('/api/v1/images')).headers.etag, before.images.headers.etag);

      clock.now = Date.parse(SUNSET);
      const gone = await get('/api/v1/images/ubuntu-22-04');
      assert.equal(gone.statusCode, 410);
      assert.equal(gone.headers['content-type'], 'application/problem+json; charset=utf-8');
      const problem = gone.json<{ code: string; title: string; detail: string }>();
      assert.equal(problem.code, 'GONE');
      assert.equal(problem.title, 'Gone');
      assert.match(problem.detail, /ubuntu-22-04 was sunset on Tue, 01 Jun 2027 00:00:00 GMT/);
      assert.equal(gone.headers.link, '</api/v1/images/ubuntu-24-04>; rel="successor-version"');
      assert.equal(gone.headers.deprecation, '@1799971200');
      assert.equal(gone.headers.sunset, 'Tue, 01 Jun 2027 00:00:00 GMT');
      // Even a client holding a current copy learns it is gone.
      const cached = await get('/api/v1/images/ubuntu-22-04', { 'if-none-match': '*' });
      assert.equal(cached.statusCode, 410);
      assert.equal((await get('/api/v1/regions/nyc1')).statusCode, 410);
      assert.equal((await get('/api/v1/regions/nyc1')).headers.link, '</api/v1/regions/nyc3>; rel="successor-version"');

      const images = await get('/api/v1/images');
      assert.deepEqual(
        images.json<{ slug: string }[]>().map((i) => i.slug),
        ['ubuntu-24-04'],
      );
      assert.notEqual(images.headers.etag, before.images.headers.etag, 'the lists ETag changes at sunset');
      const stale = await get('/api/v1/images', { 'if-none-match': String(before.images.headers.etag) });
      assert.equal(stale.statusCode, 200, 'the copy from before sunset is no longer current');
      assert.deepEqual(
        (await get('/api/v1/regions')).json<{ slug: string }[]>().map((r) => r.slug),
        ['nyc3'],
      );
      assert.equal((await get('/api/v1/plans')).body, before.plans.body, 'plans did not change');
      // Filters no longer know the sunset entries.
      assert.equal((await get('/api/v1/plans?image=ubuntu-22-04')).statusCode, 400);
      assert.equal((await get('/api/v1/plans?region=nyc1')).statusCode, 400);

      assert.equal(await versions(), before.revisions, 'no apply');
      assert.equal(await queries(), before.queries + 1, 'one storage query: the revisions() call above');
    });

    it('long after sunset_at the entry is still 410; its successor is unaffected', async (t) => {
      const { clock, get } = await setup(t);
      clock.now = Date.parse(SUNSET) + 86_400_000;
      assert.equal((await get('/api/v1/images/ubuntu-22-04')).statusCode, 410);
      assert.equal((await get('/api/v1/images/ubuntu-24-04')).statusCode, 200);
      for (const h of LIFECYCLE) assert.equal((await get('/api/v1/images/ubuntu-24-04')).headers[h], undefined);
    });

    it('CORS exposes Deprecation, Sunset and Link to browser clients', async (t) => {
      const { get } = await setup(t, { CORS_ORIGINS: 'https://console.example.com' });
      const res = await get('/api/v1/images/ubuntu-22-04', { origin: 'https://console.example.com' });
      const exposed = String(res.headers['access-control-expose-headers']).split(/\s*,\s*/);
      for (const h of ['Deprecation', 'Sunset', 'Link', 'ETag']) assert.ok(exposed.includes(h), h);
    });
  });
}

describe('the single-item catalog routes in the OpenAPI document', () => {
  it('document 410 Gone and the lifecycle headers', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<
        string,
        {
          get: {
            description?: string;
            responses: Record<string, { description: string }>;
            parameters: { name: string; in: string; description?: string }[];
          };
        }
      >;
    }>();
    for (const kind of ['images', 'plans', 'regions']) {
      const item = doc.paths[`/api/v1/${kind}/{slug}`]!.get;
      assert.match(item.responses['410']!.description, /GONE/, kind);
      assert.match(item.description ?? '', /Deprecation: @<unix seconds>/, kind);
      assert.match(item.description ?? '', /successor-version/, kind);
    }
    const params = (path: string) =>
      doc.paths[path]!.get.parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.description ?? '']);
    const documented = (path: string, name: string) => params(path).find(([n]) => n === name)?.[1] ?? '';
    assert.match(documented('/api/v1/plans', 'region'), /offered in this region/);
    assert.match(documented('/api/v1/plans', 'image'), /min_disk_gb/);
    assert.match(documented('/api/v1/images', 'region'), /offered in this region/);
    assert.match(documented('/api/v1/regions', 'plan'), /offering this plan/);
    assert.match(documented('/api/v1/regions', 'image'), /offering this image/);
  });
});
