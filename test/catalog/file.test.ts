// The catalog file format: every validation rule, the shipped default, round trips
// through export, and the diff.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse as parseYaml, stringify } from 'yaml';
import { DEFAULT_CATALOG_FILE, loadDefaultCatalog } from '../../src/catalog/default.js';
import { diffCatalogs, formatDiff, isEmptyDiff } from '../../src/catalog/diff.js';
import {
  duplicateJsonKey,
  formatCatalog,
  parseCatalogText,
  validateCatalog,
  type CatalogProblem,
} from '../../src/catalog/file.js';
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

  it('a JSON file reads as its YAML reading does, duplicate keys refused too (spelt alike or escaped)', () => {
    const yamlText = readFileSync(DEFAULT_CATALOG_FILE, 'utf8');
    const json = JSON.stringify(parseYaml(yamlText), null, 2);
    assert.deepEqual(parseCatalogText(json), parseCatalogText(yamlText));
    const empty = '"images": [], "plans": [], "regions": []';
    for (const [text, key] of [
      [`{"currency": "USD", "currency": "EUR", ${empty}}`, 'currency'],
      [`{"currency": "USD", ${empty.replace('"plans": []', `"plans": [{"slug": "a", "\\u0073lug": "b"}]`)}}`, 'slug'],
    ] as const) {
      const refused = parseCatalogText(text);
      assert.ok(!refused.ok);
      assert.deepEqual(refused.problems, [
        { entry: 'file', pointer: '', message: `Map keys must be unique: "${key}" appears twice in one object` },
      ]);
    }
    // A YAML flow mapping is not JSON: read as YAML, as before.
    assert.ok(parseCatalogText(`{currency: USD, images: [], plans: [], regions: []}`).ok);
  });

  it('duplicateJsonKey: per object, through nesting, arrays and escapes', () => {
    assert.equal(duplicateJsonKey('{"a": 1, "b": {"a": 2}, "c": [{"a": 3}, "a", {}], "d": "a"}'), null);
    assert.equal(duplicateJsonKey('[{}, "x", {"k": "v,\\"k\\": 1"}]'), null);
    assert.equal(duplicateJsonKey('{"a": [1, {"b": 1, "b": 2}]}'), 'b');
    assert.equal(duplicateJsonKey('{"a": {"x": 1}, "a": 2}'), 'a');
    assert.equal(duplicateJsonKey('{"\\u0061": 1, "a": 2}'), 'a');
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

describe('catalog availability and lifecycle rules (file only fields)', () => {
  const NOW = Date.parse('2027-03-01T00:00:00Z');
  const img = (version: string, over: Record<string, unknown> = {}) =>
    image({ slug: `ubuntu-${version.replace('.', '-')}`, name: `Ubuntu ${version}`, version, ...over });
  const at = (data: unknown, pointer: string, entry: string, field: string, message: RegExp): void => {
    const r = validateCatalog(data, NOW);
    const found = r.ok ? [] : r.problems;
    assert.ok(
      found.some((p) => p.pointer === pointer && p.entry === entry && p.field === field && message.test(p.message)),
      `expected ${pointer} (${entry}.${field}) ~ ${message}; got ${JSON.stringify(found)}`,
    );
  };
  const accepted = (data: unknown) => {
    const r = validateCatalog(data, NOW);
    assert.ok(r.ok, JSON.stringify(r.ok ? null : r.problems));
    return r.catalog;
  };

  it('offers name existing plans and images; each unknown one is reported with entry, field and pointer', () => {
    const data = doc({
      regions: [region({ plans: ['s-1vcpu-1gb', 's-9vcpu-1gb'], images: ['windows-11'] })],
    });
    at(data, '/regions/0/plans/1', 'regions[0] (nyc3)', 'plans', /unknown plan "s-9vcpu-1gb"/);
    at(data, '/regions/0/images/0', 'regions[0] (nyc3)', 'images', /unknown image "windows-11"/);
    assert.equal(problems(data).length, 2, 'the known slug is fine');
    // An image slug is not a plan.
    at(
      doc({ regions: [region({ plans: ['ubuntu-24-04'] })] }),
      '/regions/0/plans/0',
      'regions[0] (nyc3)',
      'plans',
      /unknown plan "ubuntu-24-04"/,
    );
    const ok = accepted(doc({ regions: [region({ plans: ['s-1vcpu-1gb'], images: ['ubuntu-24-04'] })] }));
    assert.deepEqual(ok.regions[0]!.plans, ['s-1vcpu-1gb']);
    assert.equal(accepted(doc()).regions[0]!.plans, undefined, 'absent: everything');
  });

  it('an offer list is non-empty, of unique slugs', () => {
    at(doc({ regions: [region({ plans: [] })] }), '/regions/0/plans', 'regions[0] (nyc3)', 'plans', /non-empty list/);
    at(
      doc({ regions: [region({ images: ['ubuntu-24-04', 'ubuntu-24-04'] })] }),
      '/regions/0/images',
      'regions[0] (nyc3)',
      'images',
      /lists "ubuntu-24-04" twice/,
    );
    at(doc({ regions: [region({ plans: 's-1vcpu-1gb' })] }), '/regions/0/plans', 'regions[0] (nyc3)', 'plans', /list/);
    // Offers are for regions only: a plan does not offer anything.
    assert.ok(problems(doc({ plans: [plan({ images: ['ubuntu-24-04'] })] })).length > 0);
  });

  it('timestamps are RFC 3339 on the calendar', () => {
    for (const [bad, why] of [
      ['2027-02-30T00:00:00Z', /no day 30/],
      ['2027-13-01T00:00:00Z', /month 13/],
      ['yesterday', /RFC 3339/],
      ['2027-01-01', /RFC 3339/],
      ['2027-01-01T25:00:00Z', /hour 25/],
    ] as const) {
      at(
        doc({ images: [image({ deprecated_at: bad })] }),
        '/images/0/deprecated_at',
        'images[0] (ubuntu-24-04)',
        'deprecated_at',
        why,
      );
      at(
        doc({ plans: [plan({ deprecated_at: '2027-01-01T00:00:00Z', sunset_at: bad })] }),
        '/plans/0/sunset_at',
        'plans[0] (s-1vcpu-1gb)',
        'sunset_at',
        why,
      );
    }
    at(
      doc({ regions: [region({ deprecated_at: 20270101 })] }),
      '/regions/0/deprecated_at',
      'regions[0] (nyc3)',
      'deprecated_at',
      /RFC 3339/,
    );
    const ok = accepted(doc({ images: [image({ deprecated_at: '2027-01-01T01:00:00+01:00' })] }));
    assert.equal(ok.images[0]!.deprecated_at, '2027-01-01T01:00:00+01:00');
  });

  it('sunset_at needs deprecated_at and is not before it; equal is fine', () => {
    at(
      doc({ images: [image({ sunset_at: '2027-06-01T00:00:00Z' })] }),
      '/images/0/sunset_at',
      'images[0] (ubuntu-24-04)',
      'sunset_at',
      /needs deprecated_at/,
    );
    at(
      doc({ plans: [plan({ deprecated_at: '2027-06-01T00:00:00Z', sunset_at: '2027-05-31T23:59:59Z' })] }),
      '/plans/0/sunset_at',
      'plans[0] (s-1vcpu-1gb)',
      'sunset_at',
      /must not be before deprecated_at \(2027-06-01T00:00:00Z\)/,
    );
    // Offsets are honoured: 02:00+02:00 is midnight UTC.
    accepted(doc({ plans: [plan({ deprecated_at: '2027-06-01T00:00:00Z', sunset_at: '2027-06-01T02:00:00+02:00' })] }));
  });

  it('a successor needs deprecated_at, exists in the same kind, is not the entry itself, not sunset', () => {
    const dep = { deprecated_at: '2027-01-01T00:00:00Z' };
    at(
      doc({ images: [img('22.04', { successor: 'ubuntu-24-04' }), image()] }),
      '/images/0/successor',
      'images[0] (ubuntu-22-04)',
      'successor',
      /needs deprecated_at/,
    );
    at(
      doc({ images: [img('22.04', { ...dep, successor: 'ubuntu-26-04' }), image()] }),
      '/images/0/successor',
      'images[0] (ubuntu-22-04)',
      'successor',
      /unknown image "ubuntu-26-04"/,
    );
    // Same kind: a plan slug is no image's successor.
    at(
      doc({ images: [img('22.04', { ...dep, successor: 's-1vcpu-1gb' }), image()] }),
      '/images/0/successor',
      'images[0] (ubuntu-22-04)',
      'successor',
      /unknown image "s-1vcpu-1gb"/,
    );
    at(
      doc({ regions: [region({ ...dep, successor: 'nyc3' })] }),
      '/regions/0/successor',
      'regions[0] (nyc3)',
      'successor',
      /must not be the region itself/,
    );
    const sunsetSuccessor = doc({
      images: [
        img('20.04', { ...dep, successor: 'ubuntu-22-04' }),
        img('22.04', { ...dep, sunset_at: '2027-02-01T00:00:00Z' }),
      ],
    });
    at(
      sunsetSuccessor,
      '/images/0/successor',
      'images[0] (ubuntu-20-04)',
      'successor',
      /"ubuntu-22-04" is itself sunset/,
    );
    // ... judged at `now`: a sunset still to come is fine.
    assert.ok(validateCatalog(sunsetSuccessor, Date.parse('2027-01-31T23:59:59Z')).ok);
  });

  it('successors form no cycle; a chain is fine', () => {
    const dep = { deprecated_at: '2027-01-01T00:00:00Z' };
    const cycle = doc({
      images: [img('22.04', { ...dep, successor: 'ubuntu-24-04' }), image({ ...dep, successor: 'ubuntu-22-04' })],
    });
    at(
      cycle,
      '/images/0/successor',
      'images[0] (ubuntu-22-04)',
      'successor',
      /cycle: ubuntu-22-04 -> ubuntu-24-04 -> ubuntu-22-04/,
    );
    at(cycle, '/images/1/successor', 'images[1] (ubuntu-24-04)', 'successor', /cycle/);
    const three = doc({
      plans: [
        plan({ ...dep, successor: 's-1vcpu-2gb' }),
        plan({ id: 's-1vcpu-2gb', slug: 's-1vcpu-2gb', memory_mb: 2048, ...dep, successor: 's-2vcpu-2gb' }),
        plan({ id: 's-2vcpu-2gb', slug: 's-2vcpu-2gb', vcpus: 2, memory_mb: 2048, ...dep, successor: 's-1vcpu-1gb' }),
      ],
    });
    at(three, '/plans/0/successor', 'plans[0] (s-1vcpu-1gb)', 'successor', /cycle/);
    // A -> B -> C, each deprecated but C not: accepted, and kept.
    const chain = accepted(
      doc({
        images: [
          img('20.04', { ...dep, successor: 'ubuntu-22-04' }),
          img('22.04', { ...dep, sunset_at: '2027-09-01T00:00:00Z', successor: 'ubuntu-24-04' }),
          image(),
        ],
      }),
    );
    assert.deepEqual(
      chain.images.map((i) => [i.slug, i.successor]),
      [
        ['ubuntu-24-04', undefined],
        ['ubuntu-22-04', 'ubuntu-24-04'],
        ['ubuntu-20-04', 'ubuntu-22-04'],
      ],
    );
  });
});
