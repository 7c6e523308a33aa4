// The console's deprecation badges (web/src/lifecycle.ts), run in Node: which entries of
// the catalog document (GET /api/v1/catalog) get one, and what it says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadDefaultCatalog } from '../../src/catalog/default.js';
import { formatCatalog } from '../../src/catalog/file.js';
import { deprecationBadge, lifecyclesOf, noLifecycles } from '../../web/src/lifecycle.js';

const NOW = Date.parse('2026-11-21T12:00:00Z');

describe('console deprecation badges', () => {
  it('say Deprecated, then the successor and the sunset date, each only when set', () => {
    const e = { slug: 'ubuntu-22-04' };
    assert.equal(deprecationBadge(undefined, NOW), null);
    assert.equal(deprecationBadge(e, NOW), null, 'no deprecated_at: no badge');
    assert.equal(deprecationBadge({ ...e, deprecated_at: '2026-10-01T00:00:00Z' }, NOW), 'Deprecated');
    assert.equal(
      deprecationBadge(
        { ...e, deprecated_at: '2026-10-01T00:00:00Z', successor: 'ubuntu-24-04', sunset_at: '2027-03-01T00:00:00Z' },
        NOW,
      ),
      'Deprecated · replaced by ubuntu-24-04 · sunset 1 Mar 2027',
    );
    assert.equal(
      deprecationBadge({ ...e, deprecated_at: '2026-10-01T00:00:00Z', sunset_at: '2027-03-01T23:30:00Z' }, NOW),
      'Deprecated · sunset 1 Mar 2027',
      'dates are UTC days, whatever the viewer’s zone',
    );
  });

  it('a deprecation still ahead says from when', () => {
    assert.equal(
      deprecationBadge({ slug: 'x', deprecated_at: '2027-01-15T00:00:00Z', successor: 'y' }, NOW),
      'Deprecated from 15 Jan 2027 · replaced by y',
    );
    assert.equal(deprecationBadge({ slug: 'x', deprecated_at: new Date(NOW).toISOString() }, NOW), 'Deprecated');
  });

  it('reads the lifecycle of every kind from the document the server formats', () => {
    const c = loadDefaultCatalog();
    const [image, successor] = c.images;
    const [plan] = c.plans;
    const [region] = c.regions;
    assert.ok(image && successor && plan && region);
    c.images = c.images.map((i) =>
      i.slug === image.slug
        ? {
            ...i,
            deprecated_at: '2026-10-01T00:00:00Z',
            sunset_at: '2027-03-01T00:00:00Z',
            successor: successor.slug,
          }
        : i,
    );
    c.plans = c.plans.map((p) => (p.slug === plan.slug ? { ...p, deprecated_at: '2026-11-01T00:00:00Z' } : p));
    c.regions = c.regions.map((r) => (r.slug === region.slug ? { ...r, deprecated_at: '2026-11-01T00:00:00Z' } : r));
    const found = lifecyclesOf(JSON.parse(formatCatalog(c, 'json')));
    // The shipped catalog deprecates an image of its own (ubuntu-22-04): found too.
    const shipped = loadDefaultCatalog()
      .images.filter((i) => i.deprecated_at !== undefined)
      .map((i) => i.slug);
    assert.ok(shipped.length > 0);
    assert.deepEqual([...found.images.keys()].sort(), [image.slug, ...shipped].sort());
    assert.equal(
      deprecationBadge(found.images.get(image.slug), NOW),
      `Deprecated · replaced by ${successor.slug} · sunset 1 Mar 2027`,
    );
    assert.deepEqual([...found.plans.keys()], [plan.slug]);
    assert.deepEqual([...found.regions.keys()], [region.slug]);
    assert.equal(deprecationBadge(found.images.get(successor.slug), NOW), null, 'the successor has no badge');
  });

  it('anything it cannot read exactly gives no badge rather than a wrong one', () => {
    for (const doc of [null, 'catalog', 42, [], {}, { images: 'x' }, { images: [null, 'a', 3] }]) {
      assert.deepEqual(lifecyclesOf(doc), noLifecycles(), JSON.stringify(doc));
    }
    const d = '2026-10-01T00:00:00Z';
    const found = lifecyclesOf({
      images: [
        { slug: 'ok', deprecated_at: d },
        { deprecated_at: d },
        { slug: 7, deprecated_at: d },
        { slug: 'bad-date', deprecated_at: 'soon' },
        { slug: 'bad-sunset', deprecated_at: d, sunset_at: 'never' },
        { slug: 'bad-successor', deprecated_at: d, successor: ['y'] },
        { slug: 'not-deprecated', sunset_at: d },
      ],
    });
    assert.deepEqual([...found.images.keys()], ['ok']);
  });
});
