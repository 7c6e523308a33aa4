// Money and the forms of a catalog derived from its one declaration (schemas.ts): every
// price the file format accepts is held in cents exactly and written back with two
// fraction digits on the wire and in both file formats; a price that could not be is
// refused; and the conversions follow the schema alone, so a new field needs no code.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Type } from 'typebox';
import { formatCatalog, parseCatalogText, validateCatalog } from '../../src/catalog/file.js';
import { jsonText, toModel, toWire } from '../../src/catalog/forms.js';
import { formatMoney, MAX_CENTS, Money, parseMoney } from '../../src/catalog/money.js';
import { CatalogFile, Plan } from '../../src/catalog/schemas.js';
import { decodeCatalog, EMPTY_CATALOG } from '../../src/catalog/service.js';
import { buildSnapshot } from '../../src/catalog/snapshot.js';
import { plan } from '../helpers/catalog-entries.js';

const doc = (plans: unknown[]) => ({ images: [], plans, regions: [] });
const priceProblems = (price: unknown) => {
  const r = validateCatalog(doc([plan({ price_monthly: price })]));
  return r.ok ? [] : r.problems.filter((p) => p.field === 'price_monthly').map((p) => p.message);
};

describe('money', () => {
  it('every price up to the maximum survives file -> cents -> wire, YAML and JSON, exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_CENTS }), (cents) => {
        const text = formatMoney(cents);
        assert.match(text, /^\d+\.\d{2}$/);
        assert.equal(parseMoney(Number(text)), cents);
        assert.equal(parseMoney(text), cents);
        const r = validateCatalog(doc([plan({ price_monthly: Number(text) })]));
        assert.ok(r.ok, JSON.stringify(!r.ok && r.problems));
        assert.equal(r.catalog.plans[0]!.price_cents, cents);
        const wire = buildSnapshot(r.catalog, 1).lists.plans.toString();
        assert.ok(wire.endsWith(`"price_monthly":${text}}]`), wire);
        for (const format of ['yaml', 'json'] as const) {
          const again = parseCatalogText(formatCatalog(r.catalog, format));
          assert.ok(again.ok && again.catalog.plans[0]!.price_cents === cents, format);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a price that cannot be held in cents and written back exactly is refused, not mangled', () => {
    // 1e21 held as cents would be served as `1e+19.00`: not JSON.
    for (const price of [1e21, 1e12, MAX_CENTS / 100 + 0.01])
      assert.match(priceProblems(price).join(), /<= 99999999\.99/, String(price));
    for (const text of ['price_monthly: .inf', 'price_monthly: -.inf', 'price_monthly: .nan']) {
      const r = parseCatalogText(
        'images: []\nregions: []\nplans:\n' +
          '  - { id: s-1vcpu-1gb, slug: s-1vcpu-1gb, vcpus: 1, memory_mb: 1024, disk_gb: 25, transfer_tb: 1, ' +
          `type: general, ${text} }\n`,
      );
      assert.ok(!r.ok && r.problems.some((p) => p.field === 'price_monthly'), text);
    }
    assert.deepEqual(priceProblems(MAX_CENTS / 100), []);
  });

  it('the parser refuses what is not an amount, in text and in numbers', () => {
    for (const text of ['', '-1', '1.234', '1.', '.5', '1e3', '0x10', ' 5', '5 ', '+5', '1234567890', '1,5'])
      assert.equal(parseMoney(text), undefined, text);
    for (const n of [-0.01, 5.999, NaN, Infinity, 1e21]) assert.equal(parseMoney(n), undefined, String(n));
    assert.equal(parseMoney('999999999.99'), 99_999_999_999);
    assert.equal(parseMoney('0.29'), 29);
    assert.equal(parseMoney(0.1 + 0.2), 30, 'float noise below a cent is tolerated');
  });
});

describe('forms derived from the schema', () => {
  it("the wire bytes of an entry are its schema's fields, in the schema's order", () => {
    const r = validateCatalog(doc([plan()]));
    assert.ok(r.ok);
    const served = JSON.parse(buildSnapshot(r.catalog, 1).lists.plans.toString()) as Record<string, unknown>[];
    assert.deepEqual(Object.keys(served[0]!), Object.keys(Plan.properties));
    assert.deepEqual(
      Object.keys(toWire(CatalogFile, r.catalog) as object),
      ['currency', 'images', 'plans', 'regions'],
      'empty optional lists are left out',
    );
  });

  it('a field added to an entity schema needs no code: its model form and wire text follow, a second price too', () => {
    const Bigger = Type.Object({
      ...Plan.properties,
      gpus: Type.Integer({ minimum: 0 }),
      price_hourly: Money('price_hourly_cents'),
    });
    const wire = { ...plan(), gpus: 2, price_hourly: 0.01 };
    const model = toModel(Bigger, wire) as Record<string, unknown>;
    const { price_monthly: _monthly, price_hourly: _hourly, ...rest } = wire;
    assert.deepEqual(model, { ...rest, price_cents: 600, price_hourly_cents: 1 });
    assert.deepEqual(Object.keys(model), [
      'id',
      'slug',
      'vcpus',
      'memory_mb',
      'disk_gb',
      'transfer_tb',
      'type',
      'price_cents',
      'gpus',
      'price_hourly_cents',
    ]);
    assert.equal(
      jsonText(toWire(Bigger, model)),
      '{"id":"s-1vcpu-1gb","slug":"s-1vcpu-1gb","vcpus":1,"memory_mb":1024,"disk_gb":25,"transfer_tb":1,' +
        '"type":"general","price_monthly":6.00,"gpus":2,"price_hourly":0.01}',
    );
  });

  it('the JSON writer lays out text exactly as JSON.stringify does, prices aside', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom('', '  ', '\t'), (value, indent) => {
        assert.equal(jsonText(value, indent), JSON.stringify(value, null, indent));
      }),
      { numRuns: 300 },
    );
  });
});

describe('settings defaults come from the schema', () => {
  it('the empty catalog is what an empty file means; old stored documents take the defaults', () => {
    const empty = validateCatalog({ images: [], plans: [], regions: [] });
    assert.ok(empty.ok);
    assert.deepEqual(empty.catalog, EMPTY_CATALOG);
    assert.deepEqual(decodeCatalog('{"images":[],"plans":[],"regions":[]}'), EMPTY_CATALOG);
  });
});

describe('plan types come from the schema', () => {
  it('names inherited by every object are not plan types', () => {
    for (const type of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      const r = validateCatalog(doc([plan({ type })]));
      assert.ok(!r.ok, type);
      assert.deepEqual(
        r.problems,
        [
          {
            entry: 'plans[0] (s-1vcpu-1gb)',
            field: 'type',
            pointer: '/plans/0/type',
            message: 'must be one of general, cpu-optimized, memory-optimized',
          },
        ],
        type,
      );
    }
  });
});
