// The catalog file format: every validation rule, the shipped default, round trips
// through export, and the diff.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { DEFAULT_CATALOG_FILE, loadDefaultCatalog } from '../../src/catalog/default.js';
import { diffCatalogs, formatDiff, isEmptyDiff } from '../../src/catalog/diff.js';
import { formatCatalog, parseCatalogText, validateCatalog, type CatalogProblem } from '../../src/catalog/file.js';
import { imageSlug } from '../../src/catalog/model.js';
import { formatMoney } from '../../src/catalog/money.js';
import { image, plan, region } from '../helpers/catalog-entries.js';

const doc = (over: Record<string, unknown> = {}) => ({
  currency: 'USD',
  images: [image()],
  plans: [plan()],
  regions: [region()],
  ...over,
});

function problems(data: unknown): CatalogProblem[] {
  const r = validateCatalog(data);
  assert.equal(r.ok, false, 'expected problems');
  return r.ok ? [] : r.problems;
}

function expectProblem(data: unknown, entry: string, field: string | undefined, message: RegExp): void {
  const found = problems(data);
  assert.ok(
    found.some((p) => p.entry === entry && p.field === field && message.test(p.message)),
    `expected ${entry}.${String(field)} ~ ${message}; got ${JSON.stringify(found)}`,
  );
}

describe('catalog validation rules', () => {
  it('a correct document is accepted; prices become cents', () => {
    const r = validateCatalog(doc({ plans: [plan({ price_monthly: 5.99 })] }));
    assert.ok(r.ok);
    assert.equal(r.catalog.plans[0]!.price_cents, 599);
    assert.equal(r.catalog.currency, 'USD');
  });

  it('slugs are unique per kind', () => {
    expectProblem(
      doc({ images: [image(), image({ name: 'again' })] }),
      'images[1] (ubuntu-24-04)',
      'slug',
      /duplicate image slug "ubuntu-24-04" \(first at images\[0\]/,
    );
    expectProblem(doc({ plans: [plan(), plan()] }), 'plans[1] (s-1vcpu-1gb)', 'slug', /duplicate plan slug/);
    expectProblem(doc({ regions: [region(), region()] }), 'regions[1] (nyc3)', 'slug', /duplicate region slug/);
  });

  it('plan id equals slug', () => {
    expectProblem(
      doc({ plans: [plan({ id: 'plan-1' })] }),
      'plans[0] (s-1vcpu-1gb)',
      'id',
      /must equal slug "s-1vcpu-1gb"/,
    );
  });

  it('plan slug is <prefix>-<vcpus>vcpu-<GB>gb with the prefix of its type', () => {
    expectProblem(
      doc({ plans: [plan({ type: 'cpu-optimized' })] }),
      'plans[0] (s-1vcpu-1gb)',
      'slug',
      /must be "c-1vcpu-1gb"/,
    );
    expectProblem(doc({ plans: [plan({ vcpus: 2 })] }), 'plans[0] (s-1vcpu-1gb)', 'slug', /must be "s-2vcpu-1gb"/);
    expectProblem(
      doc({ plans: [plan({ memory_mb: 2048 })] }),
      'plans[0] (s-1vcpu-1gb)',
      'slug',
      /must be "s-1vcpu-2gb"/,
    );
    expectProblem(
      doc({ plans: [plan({ memory_mb: 1536 })] }),
      'plans[0] (s-1vcpu-1gb)',
      'memory_mb',
      /multiple of 1024/,
    );
    const m = validateCatalog(
      doc({
        plans: [
          plan({ id: 'm-2vcpu-16gb', slug: 'm-2vcpu-16gb', vcpus: 2, memory_mb: 16384, type: 'memory-optimized' }),
        ],
      }),
    );
    assert.ok(m.ok, 'memory-optimized uses m-');
    expectProblem(
      doc({ plans: [plan({ type: 'gpu' })] }),
      'plans[0] (s-1vcpu-1gb)',
      'type',
      /general, cpu-optimized, memory-optimized/,
    );
  });

  it('integers are positive integers', () => {
    for (const field of ['vcpus', 'memory_mb', 'disk_gb', 'transfer_tb']) {
      for (const bad of [0, -1, 1.5, '2', null]) {
        expectProblem(doc({ plans: [plan({ [field]: bad })] }), 'plans[0] (s-1vcpu-1gb)', field, /positive integer/);
      }
    }
    expectProblem(
      doc({ images: [image({ min_disk_gb: 0 })] }),
      'images[0] (ubuntu-24-04)',
      'min_disk_gb',
      /positive integer/,
    );
    expectProblem(
      doc({ images: [image({ min_disk_gb: undefined })] }),
      'images[0] (ubuntu-24-04)',
      'min_disk_gb',
      /required/,
    );
  });

  it('price is >= 0 with at most two decimals', () => {
    expectProblem(doc({ plans: [plan({ price_monthly: -1 })] }), 'plans[0] (s-1vcpu-1gb)', 'price_monthly', />= 0/);
    expectProblem(
      doc({ plans: [plan({ price_monthly: 5.999 })] }),
      'plans[0] (s-1vcpu-1gb)',
      'price_monthly',
      /at most two decimals/,
    );
    expectProblem(
      doc({ plans: [plan({ price_monthly: '6.00' })] }),
      'plans[0] (s-1vcpu-1gb)',
      'price_monthly',
      /must be a number/,
    );
    for (const ok of [0, 0.01, 6, 19.99, 1344.99, 0.1 + 0.2 - 0.3 + 4.1]) {
      assert.ok(validateCatalog(doc({ plans: [plan({ price_monthly: ok })] })).ok, String(ok));
    }
  });

  it('image slug is derived from distribution and version; version is a string', () => {
    assert.equal(imageSlug('Ubuntu', '24.04'), 'ubuntu-24-04');
    assert.equal(imageSlug('Rocky Linux', '9.4'), 'rocky-linux-9-4');
    assert.equal(imageSlug('openSUSE Leap', '15.6 (SP)'), 'opensuse-leap-15-6-sp');
    expectProblem(
      doc({ images: [image({ slug: 'ubuntu-2404' })] }),
      'images[0] (ubuntu-2404)',
      'slug',
      /must be "ubuntu-24-04"/,
    );
    expectProblem(
      doc({ images: [image({ version: 24.1, slug: 'ubuntu-24-1' })] }),
      'images[0] (ubuntu-24-1)',
      'version',
      /must be a string/,
    );
  });

  it('image type and region features come from known sets the file may extend', () => {
    expectProblem(
      doc({ images: [image({ type: 'snapshot' })] }),
      'images[0] (ubuntu-24-04)',
      'type',
      /must be one of base/,
    );
    assert.ok(validateCatalog(doc({ extra_image_types: ['snapshot'], images: [image({ type: 'snapshot' })] })).ok);
    expectProblem(
      doc({ regions: [region({ features: ['gpu'] })] }),
      'regions[0] (nyc3)',
      'features',
      /unknown feature "gpu"; known: backups, ipv6, storage/,
    );
    assert.ok(
      validateCatalog(doc({ extra_region_features: ['gpu'], regions: [region({ features: ['gpu', 'ipv6'] })] })).ok,
    );
    expectProblem(
      doc({ regions: [region({ features: ['ipv6', 'ipv6'] })] }),
      'regions[0] (nyc3)',
      'features',
      /duplicate feature/,
    );
    expectProblem(doc({ extra_region_features: ['Not OK'] }), 'file', 'extra_region_features', /lowercase words/);
  });

  it('region slug is a short lowercase code; available is a boolean', () => {
    for (const bad of ['NYC3', 'new-york-3', 'n', 'nyc123', 'nyc 3']) {
      expectProblem(doc({ regions: [region({ slug: bad })] }), `regions[0] (${bad})`, 'slug', /short lowercase code/);
    }
    expectProblem(doc({ regions: [region({ available: 'yes' })] }), 'regions[0] (nyc3)', 'available', /true or false/);
  });

  it('strings are required and non-empty; unknown fields are reported', () => {
    expectProblem(doc({ images: [image({ name: '' })] }), 'images[0] (ubuntu-24-04)', 'name', /non-empty/);
    expectProblem(doc({ regions: [region({ name: undefined })] }), 'regions[0] (nyc3)', 'name', /required/);
    expectProblem(doc({ plans: [plan({ gpus: 1 })] }), 'plans[0] (s-1vcpu-1gb)', 'gpus', /unknown field/);
    expectProblem(doc({ zones: [] }), 'file', 'zones', /unknown top-level field/);
    expectProblem({ images: [], plans: [] }, 'file', 'regions', /required/);
    expectProblem(doc({ currency: 'usd' }), 'file', 'currency', /ISO 4217/);
  });

  it('every problem of a file is listed, not just the first', () => {
    const found = problems(
      doc({ plans: [plan({ price_monthly: 1.234, vcpus: 0 }), plan({ id: 'x' })], regions: [region({ slug: 'BAD' })] }),
    );
    assert.ok(found.length >= 4, JSON.stringify(found));
  });

  it('YAML syntax errors and duplicate keys are reported with the file as location', () => {
    const bad = parseCatalogText('images: [\n');
    assert.ok(!bad.ok && bad.problems[0]!.entry === 'file');
    const dup = parseCatalogText('currency: USD\ncurrency: EUR\nimages: []\nplans: []\nregions: []\n');
    assert.ok(!dup.ok);
  });
});

describe('the shipped default catalog', () => {
  it(
    'is valid and realistic: 8-12 images of several distributions, 10-20 plans of all three types, 8-12 ' + 'regions',
    () => {
      const c = loadDefaultCatalog();
      assert.ok(c.images.length >= 8 && c.images.length <= 12);
      const distributions = new Set(c.images.map((i) => i.distribution));
      for (const d of ['Ubuntu', 'Debian', 'Fedora']) assert.ok(distributions.has(d), d);
      assert.ok(distributions.has('Rocky Linux') || distributions.has('AlmaLinux'));
      assert.ok(c.plans.length >= 10 && c.plans.length <= 20);
      assert.deepEqual(new Set(c.plans.map((p) => p.type)), new Set(['general', 'cpu-optimized', 'memory-optimized']));
      assert.ok(c.regions.length >= 8 && c.regions.length <= 12);
      assert.ok(c.regions.some((r) => !r.available) && c.regions.some((r) => r.available));
      assert.equal(c.currency, 'USD');
    },
  );
});

describe('catalog export format', () => {
  const c = loadDefaultCatalog();

  it('YAML and JSON exports parse back to the same catalog', () => {
    for (const format of ['yaml', 'json'] as const) {
      const again = parseCatalogText(formatCatalog(c, format));
      assert.ok(again.ok, format);
      assert.deepEqual(again.catalog, c);
    }
  });

  it('prices keep two fraction digits in both formats', () => {
    assert.match(formatCatalog(c, 'yaml'), /price_monthly: 6\.00$/m);
    assert.match(formatCatalog(c, 'json'), /"price_monthly": 6\.00,?$/m);
    assert.equal(formatMoney(5), '0.05');
    assert.equal(formatMoney(134499), '1344.99');
  });

  it('the shipped file and its JSON twin describe the same catalog', () => {
    const yamlText = readFileSync(DEFAULT_CATALOG_FILE, 'utf8');
    const fromYaml = parseCatalogText(yamlText);
    const fromStringified = parseCatalogText(stringify(JSON.parse(formatCatalog(c, 'json'))));
    assert.ok(fromYaml.ok && fromStringified.ok);
    assert.deepEqual(fromStringified.catalog, fromYaml.catalog);
  });
});

describe('catalog diff', () => {
  const base = validateCatalog(doc());
  assert.ok(base.ok);

  it('lists added, removed and changed entries field by field', () => {
    const next = validateCatalog(
      doc({
        images: [],
        plans: [
          plan({ price_monthly: 7 }),
          plan({ id: 's-2vcpu-2gb', slug: 's-2vcpu-2gb', vcpus: 2, memory_mb: 2048 }),
        ],
        regions: [region({ available: false })],
        currency: 'EUR',
      }),
    );
    assert.ok(next.ok);
    const d = diffCatalogs(base.catalog, next.catalog);
    assert.deepEqual(d.added.plans, ['s-2vcpu-2gb']);
    assert.deepEqual(d.removed.images, ['ubuntu-24-04']);
    assert.deepEqual(d.changed.plans, [
      { slug: 's-1vcpu-1gb', changes: [{ field: 'price_monthly', from: '6.00', to: '7.00' }] },
    ]);
    assert.deepEqual(d.changed.regions, [{ slug: 'nyc3', changes: [{ field: 'available', from: true, to: false }] }]);
    assert.deepEqual(d.settings, [{ field: 'currency', from: 'USD', to: 'EUR' }]);
    const text = formatDiff(d);
    assert.match(text, /^\+ plans s-2vcpu-2gb$/m);
    assert.match(text, /^- images ubuntu-24-04$/m);
    assert.match(text, /^~ plans s-1vcpu-1gb: price_monthly "6\.00" -> "7\.00"$/m);
    assert.match(text, /1 added, 2 changed, 1 removed, 1 setting\(s\) changed/);
  });

  it('is empty for the same catalog', () => {
    assert.ok(isEmptyDiff(diffCatalogs(base.catalog, base.catalog)));
    assert.equal(formatDiff(diffCatalogs(base.catalog, base.catalog)), 'no changes\n');
  });
});

describe('catalog text fields', () => {
  it('refuse control characters (PostgreSQL cannot even store NUL)', () => {
    expectProblem(
      doc({ regions: [region({ name: 'New\u0000York' })] }),
      'regions[0] (nyc3)',
      'name',
      /control characters/,
    );
    expectProblem(
      doc({ images: [image({ name: 'Ubuntu\n24.04' })] }),
      'images[0] (ubuntu-24-04)',
      'name',
      /control characters/,
    );
  });
});
