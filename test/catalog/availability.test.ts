// What is offered where, on both backends: the ?region=, ?plan= and ?image= filters over a
// catalog with uneven availability (AND with the other filters), the deployability rule of
// ?image= on plans, 400s naming the parameter and value, and no storage query per request.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { describe, it } from 'node:test';
import { build, changeFeedSettled } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { applyDocument } from '../helpers/catalog-apply.js';
import { image, plan, region } from '../helpers/catalog-entries.js';
import { parseExposition, value } from '../helpers/prometheus.js';

const PAST = { deprecated_at: '2020-01-01T00:00:00Z', sunset_at: '2021-01-01T00:00:00Z' };

const img = (distribution: string, version: string, min_disk_gb: number, over: Record<string, unknown> = {}) =>
  image({
    slug: `${distribution}-${version}`.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
    name: `${distribution} ${version}`,
    distribution,
    version,
    min_disk_gb,
    ...over,
  });

/**
 * Uneven: every region lists what it offers. alpine-3-20 is offered only in old1, which is
 * sunset, so nowhere live; c-2vcpu-4gb has the disk for fedora-42 but no region in common.
 */
const UNEVEN = {
  currency: 'USD',
  images: [
    img('Ubuntu', '24.04', 10),
    img('Debian', '12', 10),
    img('Fedora', '42', 40),
    img('Alpine', '3.20', 1),
    img('CentOS', '7', 10, PAST),
  ],
  plans: [
    plan(), // s-1vcpu-1gb, 25 GB, 6.00
    plan({ id: 's-2vcpu-4gb', slug: 's-2vcpu-4gb', vcpus: 2, memory_mb: 4096, disk_gb: 80, price_monthly: 24 }),
    plan({
      id: 'c-2vcpu-4gb',
      slug: 'c-2vcpu-4gb',
      vcpus: 2,
      memory_mb: 4096,
      disk_gb: 50,
      type: 'cpu-optimized',
      price_monthly: 42,
    }),
    plan({
      id: 'm-2vcpu-16gb',
      slug: 'm-2vcpu-16gb',
      vcpus: 2,
      memory_mb: 16384,
      disk_gb: 50,
      type: 'memory-optimized',
      price_monthly: 84,
    }),
  ],
  regions: [
    region({
      slug: 'ams3',
      name: 'Amsterdam 3',
      available: false,
      plans: ['s-2vcpu-4gb', 'm-2vcpu-16gb'],
      images: ['debian-12', 'fedora-42'],
    }),
    region({
      slug: 'fra1',
      name: 'Frankfurt 1',
      plans: ['s-1vcpu-1gb', 'm-2vcpu-16gb'],
      images: ['ubuntu-24-04', 'fedora-42', 'centos-7'],
    }),
    region({
      slug: 'nyc3',
      plans: ['s-1vcpu-1gb', 's-2vcpu-4gb', 'c-2vcpu-4gb'],
      images: ['ubuntu-24-04', 'debian-12'],
    }),
    region({ slug: 'old1', name: 'Old 1', plans: ['c-2vcpu-4gb'], images: ['alpine-3-20'], ...PAST }),
  ],
};

for (const backend of backends()) {
  describe(`catalog availability filters on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}) {
      const db = await backend.fresh(t);
      const built = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...env } });
      await applyDocument(built.app, UNEVEN);
      const slugs = async (url: string) => {
        const res = await built.app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
        return res.json<{ slug: string }[]>().map((x) => x.slug);
      };
      return { ...built, slugs };
    }

    it('?region= lists the plans and images that region offers, in the documented order', async (t) => {
      const { slugs } = await setup(t);
      assert.deepEqual(await slugs('/api/v1/plans?region=fra1'), ['s-1vcpu-1gb', 'm-2vcpu-16gb']);
      assert.deepEqual(await slugs('/api/v1/plans?region=ams3'), ['s-2vcpu-4gb', 'm-2vcpu-16gb'], 'unavailable too');
      assert.deepEqual(await slugs('/api/v1/plans?region=nyc3'), ['s-1vcpu-1gb', 's-2vcpu-4gb', 'c-2vcpu-4gb']);
      // centos-7 is listed by fra1 but sunset: not offered any more.
      assert.deepEqual(await slugs('/api/v1/images?region=fra1'), ['fedora-42', 'ubuntu-24-04']);
      assert.deepEqual(await slugs('/api/v1/images?region=ams3'), ['debian-12', 'fedora-42']);
    });

    it('?plan= and ?image= list the live regions offering it; available=true still narrows', async (t) => {
      const { slugs } = await setup(t);
      assert.deepEqual(await slugs('/api/v1/regions?plan=m-2vcpu-16gb'), ['ams3', 'fra1']);
      assert.deepEqual(await slugs('/api/v1/regions?plan=m-2vcpu-16gb&available=true'), ['fra1']);
      assert.deepEqual(await slugs('/api/v1/regions?plan=c-2vcpu-4gb'), ['nyc3'], 'old1 is sunset');
      assert.deepEqual(await slugs('/api/v1/regions?image=fedora-42'), ['ams3', 'fra1']);
      assert.deepEqual(await slugs('/api/v1/regions?image=alpine-3-20'), [], 'offered nowhere live: empty');
      assert.deepEqual(await slugs('/api/v1/regions?image=debian-12&plan=s-2vcpu-4gb'), ['ams3', 'nyc3']);
      assert.deepEqual(await slugs('/api/v1/regions?image=debian-12&plan=s-1vcpu-1gb'), ['nyc3']);
      assert.deepEqual(await slugs('/api/v1/regions?image=debian-12&available=false'), ['ams3']);
      assert.deepEqual(await slugs('/api/v1/regions?plan=s-1vcpu-1gb&feature=ipv6'), ['fra1', 'nyc3']);
    });

    it("plans?image= needs disk_gb >= the image's min_disk_gb and a region offering both", async (t) => {
      const { slugs } = await setup(t);
      // s-1vcpu-1gb shares fra1 but its 25 GB disk is too small; c-2vcpu-4gb has the disk
      // but is only in nyc3, where fedora-42 is not offered.
      assert.deepEqual(await slugs('/api/v1/plans?image=fedora-42'), ['s-2vcpu-4gb', 'm-2vcpu-16gb']);
      assert.deepEqual(await slugs('/api/v1/plans?image=ubuntu-24-04'), [
        's-1vcpu-1gb',
        's-2vcpu-4gb',
        'c-2vcpu-4gb',
        'm-2vcpu-16gb',
      ]);
      assert.deepEqual(await slugs('/api/v1/plans?image=alpine-3-20'), [], 'an image offered nowhere fits nothing');
    });

    it('the new filters combine (AND) with each other and with the existing ones', async (t) => {
      const { slugs } = await setup(t);
      assert.deepEqual(await slugs('/api/v1/plans?image=fedora-42&region=fra1'), ['m-2vcpu-16gb']);
      assert.deepEqual(await slugs('/api/v1/plans?region=fra1&type=memory-optimized'), ['m-2vcpu-16gb']);
      assert.deepEqual(await slugs('/api/v1/plans?region=nyc3&max_price_monthly=30'), ['s-1vcpu-1gb', 's-2vcpu-4gb']);
      assert.deepEqual(await slugs('/api/v1/plans?region=nyc3&min_vcpus=2&type=general'), ['s-2vcpu-4gb']);
      assert.deepEqual(await slugs('/api/v1/images?region=ams3&distribution=debian'), ['debian-12']);
      assert.deepEqual(await slugs('/api/v1/images?region=fra1&type=base'), ['fedora-42', 'ubuntu-24-04']);
      assert.deepEqual(await slugs('/api/v1/plans?region=ams3&type=cpu-optimized'), []);
    });

    it('a region without lists offers every live plan and image', async (t) => {
      const { app, slugs } = await setup(t);
      const regions = UNEVEN.regions.map((r) =>
        r.slug === 'nyc3' ? region({ slug: 'nyc3' }) : r.slug === 'fra1' ? { ...r, images: undefined } : r,
      );
      await applyDocument(app, { ...UNEVEN, regions: JSON.parse(JSON.stringify(regions)) as unknown });
      const live = ['s-1vcpu-1gb', 's-2vcpu-4gb', 'c-2vcpu-4gb', 'm-2vcpu-16gb'];
      assert.deepEqual(await slugs('/api/v1/plans?region=nyc3'), live);
      assert.deepEqual(await slugs('/api/v1/plans?region=fra1'), ['s-1vcpu-1gb', 'm-2vcpu-16gb'], 'plans still listed');
      assert.deepEqual(
        await slugs('/api/v1/images?region=fra1'),
        ['alpine-3-20', 'debian-12', 'fedora-42', 'ubuntu-24-04'],
        'images: all live ones (not centos-7)',
      );
      assert.deepEqual(await slugs('/api/v1/regions?image=alpine-3-20'), ['fra1', 'nyc3']);
      assert.deepEqual(await slugs('/api/v1/plans?image=alpine-3-20'), live);
    });

    it('an unknown, sunset or wrong-kind slug answers 400 naming the parameter and the value', async (t) => {
      const { app } = await setup(t);
      const current = String((await app.inject({ method: 'GET', url: '/api/v1/plans' })).headers.etag);
      const cases: [string, string, string, RegExp][] = [
        ['/api/v1/plans?region=mars1', 'region', 'mars1', /not a region/],
        ['/api/v1/plans?region=old1', 'region', 'old1', /sunset on Fri, 01 Jan 2021 00:00:00 GMT/],
        ['/api/v1/images?region=xx9', 'region', 'xx9', /not a region/],
        ['/api/v1/images?region=FRA1', 'region', 'FRA1', /not a region/],
        ['/api/v1/regions?plan=s-64vcpu-1gb', 'plan', 's-64vcpu-1gb', /not a plan/],
        ['/api/v1/regions?plan=ubuntu-24-04', 'plan', 'ubuntu-24-04', /not a plan/],
        ['/api/v1/regions?image=centos-7', 'image', 'centos-7', /sunset/],
        ['/api/v1/regions?image=ubuntu-24-04&plan=nope', 'plan', 'nope', /not a plan/],
        ['/api/v1/plans?image=windows-11', 'image', 'windows-11', /not an? image/],
        ['/api/v1/plans?image=centos-7&region=fra1', 'image', 'centos-7', /sunset/],
        ['/api/v1/plans?type=general&region=nyc3&image=%22x%22', 'image', '"x"', /not an? image/],
      ];
      for (const [url, param, slug, why] of cases) {
        // A current If-None-Match does not turn the refusal into a 304.
        for (const headers of [{}, { 'if-none-match': current }, { 'if-none-match': '*' }]) {
          const res = await app.inject({ method: 'GET', url, headers });
          assert.equal(res.statusCode, 400, url);
          assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8', url);
          const body = res.json<{ code: string; detail: string; errors: { pointer: string; detail: string }[] }>();
          assert.equal(body.code, 'INVALID_QUERY', url);
          assert.ok(body.detail.includes(`invalid query parameter ${param}: ${JSON.stringify(slug)}`), body.detail);
          assert.match(body.detail, why, url);
          assert.deepEqual(
            body.errors.map((e) => e.pointer),
            [`querystring:/${param}`],
            url,
          );
        }
      }
      for (const url of ['/api/v1/plans?region=', '/api/v1/regions?plan=', '/api/v1/plans?region=fra1&region=nyc3']) {
        const res = await app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 400, url);
        assert.equal(res.json<{ code: string }>().code, 'INVALID_QUERY', url);
      }
    });

    it('filtered GETs send no query to storage (the metric stays put)', async (t) => {
      const { app } = await setup(t, { CATALOG_REFRESH_MS: '600000', INSTANCE_HEARTBEAT_MS: '60000' });
      await changeFeedSettled(app);
      const queries = async () =>
        value(
          parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body),
          'infracat_storage_queries_total',
        )!;
      const before = await queries();
      for (const url of [
        '/api/v1/plans?region=fra1',
        '/api/v1/plans?image=fedora-42&type=general',
        '/api/v1/images?region=nyc3',
        '/api/v1/regions?plan=s-1vcpu-1gb&available=true',
        '/api/v1/regions?image=debian-12',
        '/api/v1/plans?region=mars1',
        '/api/v1/images/centos-7',
      ]) {
        for (let i = 0; i < 5; i++) await app.inject({ method: 'GET', url });
      }
      assert.equal(await queries(), before);
      await app.inject({ method: 'GET', url: '/readyz' });
      assert.ok((await queries()) > before, 'the counter does count');
    });
  });
}

describe('the shipped default catalog', () => {
  it('has uneven availability and one deprecated image with its successor', async (t) => {
    // Before the shipped sunset_at (2027-06-01), whatever today is.
    const { app } = await build(t, { now: () => Date.parse('2027-01-01T00:00:00Z') });
    const slugs = async (url: string) => {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      return res.json<{ slug: string }[]>().map((x) => x.slug);
    };
    const plans = await slugs('/api/v1/plans');
    const images = await slugs('/api/v1/images');
    assert.deepEqual(await slugs('/api/v1/plans?region=nyc3'), plans, 'nyc3 offers everything');
    assert.deepEqual(await slugs('/api/v1/images?region=fra1'), images, 'fra1 offers everything');
    const legacy = await slugs('/api/v1/plans?region=nyc1');
    assert.ok(legacy.length > 0 && legacy.length < plans.length, 'nyc1: fewer plans');
    assert.ok(!legacy.some((p) => p.startsWith('m-')), 'nyc1: no memory-optimized plans');
    assert.deepEqual(await slugs('/api/v1/regions?plan=m-32vcpu-256gb'), ['fra1', 'nyc3', 'sfo3']);
    assert.ok(!(await slugs('/api/v1/regions?image=ubuntu-26-04')).includes('syd1'), 'newest image not everywhere');
    // The broadly used slugs stay offered everywhere.
    const regions = await slugs('/api/v1/regions');
    assert.deepEqual(await slugs('/api/v1/regions?plan=s-1vcpu-1gb'), regions);
    assert.deepEqual(await slugs('/api/v1/regions?image=ubuntu-24-04'), regions);
    // Every plan and image is deployable somewhere available.
    for (const p of plans) assert.ok((await slugs(`/api/v1/regions?plan=${p}&available=true`)).length > 0, p);
    for (const i of images) assert.ok((await slugs(`/api/v1/regions?image=${i}&available=true`)).length > 0, i);

    const deprecated: string[] = [];
    for (const i of images) {
      const res = await app.inject({ method: 'GET', url: `/api/v1/images/${i}` });
      if (res.headers.deprecation !== undefined) deprecated.push(i);
    }
    assert.deepEqual(deprecated, ['ubuntu-22-04']);
    const old = await app.inject({ method: 'GET', url: '/api/v1/images/ubuntu-22-04' });
    assert.equal(old.headers.link, '</api/v1/images/ubuntu-24-04>; rel="successor-version"');
    assert.equal(old.headers.sunset, 'Tue, 01 Jun 2027 00:00:00 GMT');
  });
});
