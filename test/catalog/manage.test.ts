// Catalog management over the API, on both backends: GET /api/v1/catalog (ETag = the
// version), PUT /api/v1/catalog (If-Match: 428/412, 422 with pointers, the removal guard,
// an empty diff stores nothing, operator account only), POST /api/v1/catalog/diff (stores
// nothing) and GET /api/v1/catalog/revisions (newest first, Link paging).
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { formatCatalog } from '../../src/catalog/file.js';
import { MAX_FIELD_ERRORS } from '../../src/errors.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { customer, nextLink, OPERATOR_SCOPES } from '../helpers/audit-http.js';
import { backends, type Backend } from '../helpers/backends.js';
import { rawSql } from '../helpers/raw-sql.js';

type Doc = {
  images: Record<string, unknown>[];
  plans: Record<string, unknown>[];
  regions: Record<string, unknown>[];
  [setting: string]: unknown;
};
type Auth = { authorization: string };

async function setup(backend: Backend, t: TestContext, env: Record<string, string> = {}) {
  const db = await backend.fresh(t);
  const built = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, RATE_LIMIT: '0', ...env } });
  const writer = await mintToken(built.app, ['catalog:write'], 'catalog operator');
  const reader = await mintToken(built.app, ['catalog:read'], 'catalog reader');
  return { ...built, db, writer, reader };
}

async function getDoc(app: Awaited<ReturnType<typeof setup>>['app'], auth: Auth) {
  const res = await app.inject({ method: 'GET', url: '/api/v1/catalog', headers: auth });
  assert.equal(res.statusCode, 200, res.body);
  return { doc: res.json<Doc>(), etag: res.headers.etag as string };
}

const put = (
  app: Awaited<ReturnType<typeof setup>>['app'],
  auth: Auth,
  payload: unknown,
  ifMatch?: string,
  query = '',
) =>
  app.inject({
    method: 'PUT',
    url: `/api/v1/catalog${query}`,
    headers: { ...auth, ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }) },
    payload: payload as object,
  });

const withPrice = (doc: Doc, slug: string, price: number): Doc => ({
  ...doc,
  plans: doc.plans.map((p) => (p.slug === slug ? { ...p, price_monthly: price } : p)),
});

for (const backend of backends()) {
  describe(`catalog management API on ${backend.name}`, () => {
    it('GET /api/v1/catalog: the document in the file format, ETag = version, 304 on If-None-Match', async (t) => {
      const { app, reader, writer } = await setup(backend, t);
      const res = await app.inject({ method: 'GET', url: '/api/v1/catalog', headers: reader.auth });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers.etag, '"1"', 'the seeded catalog is version 1');
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.body, formatCatalog(app.infracat.catalog.snapshot.catalog, 'json'));
      assert.match(res.body, /"price_monthly": 6\.00/, 'prices with two decimals');
      const doc = res.json<Doc>();
      assert.ok(doc.plans.length > 0 && doc.images.length > 0 && doc.regions.length > 0);
      assert.equal(typeof doc.currency, 'string');
      // catalog:write implies catalog:read
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/catalog', headers: writer.auth })).statusCode, 200);
      const cached = await app.inject({
        method: 'GET',
        url: '/api/v1/catalog',
        headers: { ...reader.auth, 'if-none-match': '"1"' },
      });
      assert.equal(cached.statusCode, 304);
      assert.equal(cached.body, '');
    });

    it('every route needs a token (401) with catalog:read, or catalog:write for PUT and diff (403)', async (t) => {
      const { app } = await setup(backend, t);
      const plansOnly = await mintToken(app, ['plans:read', 'images:read', 'regions:read']);
      const reader = await mintToken(app, ['catalog:read']);
      const routes = [
        ['GET', '/api/v1/catalog', 'catalog:read'],
        ['GET', '/api/v1/catalog/revisions', 'catalog:read'],
        ['POST', '/api/v1/catalog/diff', 'catalog:write'],
        ['PUT', '/api/v1/catalog', 'catalog:write'],
      ] as const;
      for (const [method, url, scope] of routes) {
        const payload = method === 'GET' ? undefined : {};
        const anon = await app.inject({ method, url, ...(payload ? { payload } : {}) });
        assert.equal(anon.statusCode, 401, `${method} ${url}`);
        assert.equal(anon.headers['content-type'], PROBLEM_TYPE);
        const res = await app.inject({ method, url, headers: plansOnly.auth, ...(payload ? { payload } : {}) });
        assert.equal(res.statusCode, 403, `${method} ${url}`);
        assert.deepEqual(res.json<{ missing_scopes: string[] }>().missing_scopes, [scope]);
      }
      const refused = await put(app, reader.auth, {}, '"1"');
      assert.equal(refused.statusCode, 403, 'catalog:read may not PUT');
      assert.deepEqual(refused.json<{ missing_scopes: string[] }>().missing_scopes, ['catalog:write']);
      // The diff is the PUT's dry run: an operator's action, as the PUT is.
      const { doc } = await getDoc(app, reader.auth);
      const diff = (auth: Auth) =>
        app.inject({ method: 'POST', url: '/api/v1/catalog/diff', headers: auth, payload: doc });
      const readerDiff = await diff(reader.auth);
      assert.equal(readerDiff.statusCode, 403, 'catalog:read may not diff');
      assert.equal(readerDiff.headers['content-type'], PROBLEM_TYPE);
      assert.deepEqual(readerDiff.json<{ missing_scopes: string[] }>().missing_scopes, ['catalog:write']);
      const writer = await mintToken(app, ['catalog:write']);
      assert.equal((await diff(writer.auth)).statusCode, 200, 'catalog:write may');
    });

    it("PUT: only the operator account's tokens, whatever a customer's token holds", async (t) => {
      const { app, db, writer } = await setup(backend, t);
      const operator = await mintToken(app, [...OPERATOR_SCOPES, 'catalog:read'], 'operator');
      const c = await customer(app, operator.auth, ['catalog:read']);
      const { doc } = await getDoc(app, c.auth);
      const changed = withPrice(doc, 's-1vcpu-1gb', 7);
      const asReader = await put(app, c.auth, changed, '"1"');
      assert.equal(asReader.statusCode, 403);
      // Told that only the operator account's tokens may, not sent after catalog:write.
      assert.match(asReader.json<{ detail: string }>().detail, /only tokens of the operator account/);
      assert.equal(asReader.json<{ missing_scopes?: string[] }>().missing_scopes, undefined);
      const diffAsReader = await app.inject({
        method: 'POST',
        url: '/api/v1/catalog/diff',
        headers: c.auth,
        payload: changed,
      });
      assert.equal(diffAsReader.statusCode, 403, 'a customer may not diff either');
      // A customer token that holds catalog:write anyway (scopes the API never grants it,
      // written into the database): still refused, before its body is read.
      const planted = await mintToken(app, ['catalog:read'], 'planted');
      await rawSql(backend, db, 'UPDATE api_tokens SET account_id = ?, scopes = ? WHERE id = ?', [
        c.account.id,
        JSON.stringify(['catalog:write']),
        planted.id,
      ]);
      for (const payload of [changed, { not: 'a catalog' }]) {
        for (const res of [
          await put(app, planted.auth, payload, '"1"'),
          await app.inject({ method: 'POST', url: '/api/v1/catalog/diff', headers: planted.auth, payload }),
        ]) {
          assert.equal(res.statusCode, 403, res.body);
          assert.equal(res.json<{ code: string }>().code, 'INSUFFICIENT_SCOPE');
          assert.match(res.json<{ detail: string }>().detail, /operator account/);
        }
      }
      assert.equal(app.infracat.catalog.snapshot.version, 1, 'nothing applied');
      assert.equal((await put(app, writer.auth, changed, '"1"')).statusCode, 200, 'the operator may');
    });

    it('PUT: If-Match required (428), stale or unreadable (412), current or * (200)', async (t) => {
      const { app, writer } = await setup(backend, t);
      const { doc, etag } = await getDoc(app, writer.auth);
      const changed = withPrice(doc, 's-1vcpu-1gb', 6.5);
      const missing = await put(app, writer.auth, changed);
      assert.equal(missing.statusCode, 428);
      assert.equal(missing.headers['content-type'], PROBLEM_TYPE);
      assert.equal(missing.json<{ code: string }>().code, 'PRECONDITION_REQUIRED');
      for (const stale of ['"0"', '"2"', '1', 'W/"1"', '"1', '', '"1" junk', '"x", "y"']) {
        const res = await put(app, writer.auth, changed, stale);
        assert.equal(res.statusCode, 412, `If-Match ${stale}: ${res.body}`);
        assert.equal(res.json<{ code: string }>().code, 'PRECONDITION_FAILED');
      }
      assert.equal(app.infracat.catalog.snapshot.version, 1, 'nothing applied');
      const ok = await put(app, writer.auth, changed, `"0", ${etag}`);
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal(ok.headers.etag, '"2"');
      // The ETag the PUT was made from is stale now.
      const again = await put(app, writer.auth, withPrice(doc, 's-1vcpu-1gb', 7), etag);
      assert.equal(again.statusCode, 412);
      assert.match(again.json<{ detail: string }>().detail, /version 2/);
      const star = await put(app, writer.auth, withPrice(doc, 's-1vcpu-1gb', 7), '*');
      assert.equal(star.statusCode, 200, star.body);
      assert.equal(star.json<{ version: number }>().version, 3);
    });

    it('PUT: 200 with version and diff; served at once, recorded (applied_by, summary), audited', async (t) => {
      const { app, store, writer } = await setup(backend, t);
      const { doc, etag } = await getDoc(app, writer.auth);
      const image = doc.images[0]!;
      const next = {
        ...withPrice(doc, 's-1vcpu-1gb', 6.5),
        images: doc.images.map((i) => (i === image ? { ...i, deprecated_at: '2030-01-01T00:00:00Z' } : i)),
        regions: [...doc.regions, { ...doc.regions[0]!, slug: 'tst1', name: 'Test 1' }],
      };
      const res = await put(app, writer.auth, next, etag);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers.etag, '"2"');
      assert.equal(res.headers['cache-control'], 'no-store');
      const body = res.json<{ version: number; diff: Record<string, Record<string, unknown>> }>();
      assert.equal(body.version, 2);
      assert.deepEqual(body.diff.added, { images: [], plans: [], regions: ['tst1'] });
      assert.deepEqual(body.diff.removed, { images: [], plans: [], regions: [] });
      assert.deepEqual(body.diff.changed!.plans, [
        { slug: 's-1vcpu-1gb', changes: [{ field: 'price_monthly', from: '6.00', to: '6.50' }] },
      ]);
      assert.deepEqual(body.diff.changed!.images, [
        { slug: image.slug, changes: [{ field: 'deprecated_at', from: null, to: '2030-01-01T00:00:00Z' }] },
      ]);
      const plan = await app.inject({ method: 'GET', url: '/api/v1/plans/s-1vcpu-1gb' });
      assert.ok(plan.body.endsWith('"price_monthly":6.50}'), 'this instance serves it at once');
      const after = await getDoc(app, writer.auth);
      assert.equal(after.etag, '"2"');
      assert.equal(after.doc.images.find((i) => i.slug === image.slug)!.deprecated_at, '2030-01-01T00:00:00Z');

      const revs = await app.inject({ method: 'GET', url: '/api/v1/catalog/revisions', headers: writer.auth });
      const [latest] = revs.json<{ version: number; applied_at: string; applied_by: unknown; summary: string }[]>();
      assert.deepEqual(latest, {
        version: 2,
        applied_at: latest!.applied_at,
        applied_by: { type: 'api_token', id: writer.id, name: 'catalog operator' },
        summary: '1 added, 2 changed, 0 removed',
        // What it changed, counted per kind.
        changes: {
          settings: 0,
          added: { images: 0, plans: 0, regions: 1 },
          removed: { images: 0, plans: 0, regions: 0 },
          changed: { images: 1, plans: 1, regions: 0 },
        },
      });
      const [event] = await store.audit.list({ action: 'catalog.applied', limit: 1 });
      assert.equal(event?.targetId, '2');
      assert.equal(event?.actorId, writer.id);
      assert.deepEqual((event?.details as { added: unknown }).added, { images: [], plans: [], regions: ['tst1'] });
    });

    it('PUT, POST diff: 422 with a JSON pointer per problem, at most MAX_FIELD_ERRORS, nothing stored', async (t) => {
      const { app, writer } = await setup(backend, t);
      const { doc, etag } = await getDoc(app, writer.auth);
      const bad = {
        ...withPrice(doc, doc.plans[1]!.slug as string, 5.999),
        regions: doc.regions.map((r, i) => (i === 0 ? { ...r, plans: ['no-such-plan'] } : r)),
      };
      for (const [method, url] of [
        ['PUT', '/api/v1/catalog'],
        ['POST', '/api/v1/catalog/diff'],
      ] as const) {
        const res = await app.inject({ method, url, headers: { ...writer.auth, 'if-match': etag }, payload: bad });
        assert.equal(res.statusCode, 422, res.body);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        const problem = res.json<{
          code: string;
          errors: { pointer: string; detail: string }[];
          errors_truncated?: boolean;
        }>();
        assert.equal(problem.code, 'VALIDATION_FAILED');
        const pointers = problem.errors.map((e) => e.pointer).sort();
        assert.deepEqual(pointers, ['/plans/1/price_monthly', '/regions/0/plans/0'], res.body);
        assert.match(problem.errors.find((e) => e.pointer === '/plans/1/price_monthly')!.detail, /two decimals/);
        // Not an object at all: one problem about the whole document.
        const notDoc = await app.inject({
          method,
          url,
          headers: { ...writer.auth, 'if-match': etag, 'content-type': 'application/json' },
          payload: '[1, 2]',
        });
        assert.equal(notDoc.statusCode, 422);
        assert.equal(notDoc.json<{ errors: { pointer: string }[] }>().errors[0]!.pointer, '');
        // Many problems: validation stops after the first MAX_FIELD_ERRORS, and says more were cut.
        assert.ok(doc.plans.length * 2 > MAX_FIELD_ERRORS);
        const many = { ...doc, plans: doc.plans.map((p) => ({ ...p, price_monthly: 1.001, vcpus: 0 })) };
        const capped = await app.inject({ method, url, headers: { ...writer.auth, 'if-match': etag }, payload: many });
        assert.equal(capped.statusCode, 422);
        const cappedBody = capped.json<{ detail: string; errors: unknown[]; errors_truncated?: boolean }>();
        assert.equal(cappedBody.errors.length, MAX_FIELD_ERRORS);
        assert.equal(cappedBody.errors_truncated, true);
        assert.match(cappedBody.detail, new RegExp(`has ${MAX_FIELD_ERRORS} problems and more`));
        assert.equal(problem.errors_truncated, undefined, 'absent when every problem is listed');
        // Not JSON: the app's strict parser.
        const broken = await app.inject({
          method,
          url,
          headers: { ...writer.auth, 'if-match': etag, 'content-type': 'application/json' },
          payload: '{"plans": [',
        });
        assert.equal(broken.statusCode, 400);
        assert.equal(broken.json<{ code: string }>().code, 'MALFORMED_JSON');
        const poisoned = await app.inject({
          method,
          url,
          headers: { ...writer.auth, 'if-match': etag, 'content-type': 'application/json' },
          payload: '{"__proto__": {"x": 1}, "images": [], "plans": [], "regions": []}',
        });
        assert.equal(poisoned.statusCode, 400, poisoned.body);
      }
      assert.equal(app.infracat.catalog.snapshot.version, 1, 'nothing applied');
    });

    it('PUT and POST diff take a realistic catalog (hundreds of entries, > 16 KiB); past the limit: 413', async (t) => {
      const { app, config, writer } = await setup(backend, t);
      const { doc, etag } = await getDoc(app, writer.auth);
      const taken = new Set(doc.plans.map((p) => p.slug));
      const plans = Array.from({ length: 20 * 20 }, (_, i) => [1 + (i % 20), 1 + Math.floor(i / 20)] as const)
        .map(([vcpus, gb]) => ({ ...doc.plans[0]!, vcpus, memory_mb: gb * 1024, id: `s-${vcpus}vcpu-${gb}gb` }))
        .map((p) => ({ ...p, slug: p.id }))
        .filter((p) => !taken.has(p.slug))
        .slice(0, 380);
      const big = { ...doc, plans: [...doc.plans, ...plans] };
      assert.ok(JSON.stringify(big).length > 48 * 1024, 'well over the 16 KiB of other bodies');
      const diff = await app.inject({
        method: 'POST',
        url: '/api/v1/catalog/diff',
        headers: writer.auth,
        payload: big,
      });
      assert.equal(diff.statusCode, 200, diff.body);
      assert.equal(diff.json<{ diff: { added: { plans: string[] } } }>().diff.added.plans.length, 380);
      const res = await put(app, writer.auth, big, etag);
      assert.equal(res.statusCode, 200, res.body);
      const limit = config.catalogBodyLimitBytes;
      const huge = { ...doc, plans: [...doc.plans, { ...doc.plans[0]!, description: 'x'.repeat(limit) }] };
      const tooBig = await put(app, writer.auth, huge, '"2"');
      assert.equal(tooBig.statusCode, 413);
      assert.match(tooBig.json<{ detail: string }>().detail, new RegExp(`${limit} bytes`));
      // Other routes keep the app's limit.
      const minter = await mintToken(app, ['api-tokens:write']);
      const token = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: minter.auth,
        payload: { name: 'x'.repeat(20 * 1024), scopes: [] },
      });
      assert.equal(token.statusCode, 413);
      assert.match(token.json<{ detail: string }>().detail, /16384 bytes/);
    });

    it('PUT: removals need ?allow_removals=true (409 naming them, nothing stored)', async (t) => {
      const { app, store, writer } = await setup(backend, t);
      const { doc, etag } = await getDoc(app, writer.auth);
      const region = doc.regions.at(-1)!.slug as string;
      const plan = doc.plans.at(-1)!.slug as string;
      // Regions that offered the removed plan by name would no longer validate: offers stay "everything" here.
      const next = { ...doc, regions: doc.regions.slice(0, -1), plans: doc.plans.slice(0, -1) };
      for (const query of ['', '?allow_removals=false']) {
        const res = await put(app, writer.auth, next, etag, query);
        if (res.statusCode === 422) assert.fail(`the test document must be valid: ${res.body}`);
        assert.equal(res.statusCode, 409, res.body);
        const problem = res.json<{ code: string; detail: string; removals: unknown }>();
        assert.equal(problem.code, 'CONFLICT');
        assert.deepEqual(problem.removals, { images: [], plans: [plan], regions: [region] });
        assert.ok(problem.detail.includes(plan) && problem.detail.includes(region), problem.detail);
        assert.match(problem.detail, /allow_removals=true/);
      }
      assert.equal(await store.catalog.latestVersion(), 1, 'nothing stored');
      const bad = await put(app, writer.auth, next, etag, '?allow_removals=yes');
      assert.equal(bad.statusCode, 400);
      assert.equal((await put(app, writer.auth, next, etag, '?other=1')).statusCode, 400);
      const ok = await put(app, writer.auth, next, etag, '?allow_removals=true');
      assert.equal(ok.statusCode, 200, ok.body);
      assert.deepEqual(ok.json<{ diff: { removed: unknown } }>().diff.removed, {
        images: [],
        plans: [plan],
        regions: [region],
      });
      const gone = await app.inject({ method: 'GET', url: `/api/v1/regions/${region}` });
      assert.equal(gone.statusCode, 404);
    });

    it('PUT of the live document: 200, the current version, an empty diff; nothing stored or audited', async (t) => {
      const { app, store, writer } = await setup(backend, t);
      const { doc, etag } = await getDoc(app, writer.auth);
      const events = (await store.audit.list({ limit: 100 })).length;
      const res = await put(app, writer.auth, doc, etag);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers.etag, '"1"');
      assert.deepEqual(res.json(), {
        version: 1,
        diff: {
          settings: [],
          added: { images: [], plans: [], regions: [] },
          removed: { images: [], plans: [], regions: [] },
          changed: { images: [], plans: [], regions: [] },
        },
      });
      assert.equal(await store.catalog.latestVersion(), 1);
      assert.equal((await store.audit.list({ limit: 100 })).length, events);
    });

    it('POST /api/v1/catalog/diff: base_version, diff, removals_need_allow; stores nothing', async (t) => {
      const { app, store, writer } = await setup(backend, t);
      const { doc } = await getDoc(app, writer.auth);
      const diff = (payload: unknown) =>
        app.inject({ method: 'POST', url: '/api/v1/catalog/diff', headers: writer.auth, payload: payload as object });
      const changed = await diff(withPrice(doc, 's-1vcpu-1gb', 9));
      assert.equal(changed.statusCode, 200, changed.body);
      const body = changed.json<{
        base_version: number;
        diff: { changed: { plans: unknown[] } };
        removals_need_allow: boolean;
      }>();
      assert.equal(body.base_version, 1);
      assert.equal(body.removals_need_allow, false);
      assert.deepEqual(body.diff.changed.plans, [
        { slug: 's-1vcpu-1gb', changes: [{ field: 'price_monthly', from: '6.00', to: '9.00' }] },
      ]);
      const removing = await diff({ ...doc, images: doc.images.slice(1) });
      assert.equal(removing.json<{ removals_need_allow: boolean }>().removals_need_allow, true);
      // Everything removed: an empty document is valid, and the diff says so.
      const empty = await diff({ images: [], plans: [], regions: [] });
      assert.equal(empty.statusCode, 200, empty.body);
      assert.equal(empty.json<{ removals_need_allow: boolean }>().removals_need_allow, true);
      assert.equal(await store.catalog.latestVersion(), 1, 'nothing stored');
      assert.equal((await store.audit.list({ action: 'catalog.applied', limit: 10 })).length, 1, 'the seed only');
    });

    it('GET /api/v1/catalog/revisions: newest first, per_page and the before cursor, Link rel=next', async (t) => {
      const { app, reader } = await setup(backend, t);
      const svc = app.infracat.catalog;
      for (let cents = 700; cents < 1200; cents += 100) {
        const next = structuredClone(svc.snapshot.catalog);
        next.plans = next.plans.map((p) => (p.slug === 's-1vcpu-1gb' ? { ...p, price_cents: cents } : p));
        const { baseVersion } = await svc.plan(next);
        await svc.apply(next, baseVersion, { ...(await import('../helpers/audit.js')).TEST_CONTEXT });
      }
      const all = await app.inject({ method: 'GET', url: '/api/v1/catalog/revisions', headers: reader.auth });
      assert.equal(all.statusCode, 200);
      assert.equal(all.headers.link, undefined, 'one page holds all');
      assert.equal(all.headers['cache-control'], 'no-store');
      const revs = all.json<{ version: number; applied_at: string; applied_by: unknown; summary: string }[]>();
      assert.deepEqual(
        revs.map((r) => r.version),
        [6, 5, 4, 3, 2, 1],
      );
      assert.ok(revs.every((r) => !Number.isNaN(Date.parse(r.applied_at)) && r.applied_at.endsWith('Z')));
      assert.match(revs.at(-1)!.summary, /^initial catalog: \d+ added, 0 changed, 0 removed/);
      assert.deepEqual(revs.at(-1)!.applied_by, { type: 'system', id: null, name: 'infracat' });
      assert.equal(revs[0]!.summary, '0 added, 1 changed, 0 removed');

      const seen: number[] = [];
      let url: string | null = '/api/v1/catalog/revisions?per_page=4';
      const links: string[] = [];
      while (url !== null) {
        const res: { statusCode: number; body: string; json<T>(): T; headers: Record<string, unknown> } =
          await app.inject({ method: 'GET', url, headers: reader.auth });
        assert.equal(res.statusCode, 200, res.body);
        seen.push(...res.json<{ version: number }[]>().map((r) => r.version));
        url = nextLink(res.headers.link as string | undefined);
        if (url !== null) links.push(url);
      }
      assert.deepEqual(seen, [6, 5, 4, 3, 2, 1]);
      assert.deepEqual(links, ['/api/v1/catalog/revisions?before=3&per_page=4']);
      const exact = await app.inject({
        method: 'GET',
        url: '/api/v1/catalog/revisions?per_page=3',
        headers: reader.auth,
      });
      assert.equal(nextLink(exact.headers.link), '/api/v1/catalog/revisions?before=4&per_page=3');
      const last = await app.inject({
        method: 'GET',
        url: '/api/v1/catalog/revisions?before=4&per_page=3',
        headers: reader.auth,
      });
      assert.deepEqual(
        last.json<{ version: number }[]>().map((r) => r.version),
        [3, 2, 1],
      );
      assert.equal(last.headers.link, undefined, 'no empty page follows');
      for (const q of ['per_page=0', 'per_page=101', 'per_page=1e1', 'before=0', 'before=-1', 'before=x', 'x=1']) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/catalog/revisions?${q}`, headers: reader.auth });
        assert.equal(res.statusCode, 400, q);
        assert.equal(res.json<{ code: string }>().code, 'INVALID_QUERY');
      }
      const first = await app.inject({
        method: 'GET',
        url: '/api/v1/catalog/revisions?per_page=100',
        headers: reader.auth,
      });
      assert.equal(first.statusCode, 200);
    });

    it('PUT: a race lost at storage (another instance applied meanwhile) is 412; the winner stays', async (t) => {
      const db = await backend.fresh(t);
      const env = { DATABASE_URL: db.url, RATE_LIMIT: '0' };
      const store = db.open();
      const a = await build(t, { store, env });
      const b = await build(t, { store: db.open(), env });
      const writer = await mintToken(a.app, ['catalog:write']);
      const { doc, etag } = await getDoc(a.app, writer.auth);
      // Between this instance's check of If-Match and its insert, instance b applies version 2.
      const original = store.catalog.apply.bind(store.catalog);
      let raced = false;
      store.catalog.apply = async (...args) => {
        if (!raced) {
          raced = true;
          const other = structuredClone(b.app.infracat.catalog.snapshot.catalog);
          other.plans = other.plans.map((p) => (p.slug === 's-1vcpu-1gb' ? { ...p, price_cents: 4200 } : p));
          await b.app.infracat.catalog.apply(other, 1, (await import('../helpers/audit.js')).TEST_CONTEXT);
        }
        return original(...args);
      };
      const res = await put(a.app, writer.auth, withPrice(doc, 's-1vcpu-1gb', 6.5), etag);
      assert.ok(raced, 'the race happened');
      assert.equal(res.statusCode, 412, res.body);
      assert.equal(res.json<{ code: string }>().code, 'PRECONDITION_FAILED');
      assert.equal(await store.catalog.latestVersion(), 2);
      const live = await getDoc(a.app, writer.auth);
      assert.equal(live.doc.plans.find((p) => p.slug === 's-1vcpu-1gb')!.price_monthly, 42);
    });

    it('a PUT through one instance is served by another (GET /api/v1/catalog and the catalogs)', async (t) => {
      const db = await backend.fresh(t);
      const env = { DATABASE_URL: db.url, RATE_LIMIT: '0', CATALOG_REFRESH_MS: '100' };
      const a = await build(t, { store: db.open(), env });
      const b = await build(t, { store: db.open(), env });
      const writer = await mintToken(a.app, ['catalog:write']);
      const { doc, etag } = await getDoc(a.app, writer.auth);
      assert.equal((await put(a.app, writer.auth, withPrice(doc, 's-1vcpu-1gb', 6.5), etag)).statusCode, 200);
      for (let i = 0; ; i++) {
        const res = await b.app.inject({ method: 'GET', url: '/api/v1/catalog', headers: writer.auth });
        if (res.headers.etag === '"2"') {
          assert.ok(res.body.includes('"price_monthly": 6.50'));
          break;
        }
        assert.ok(i < 150, 'picked up by the other instance');
        await new Promise((r) => setTimeout(r, 20));
      }
      const plan = await b.app.inject({ method: 'GET', url: '/api/v1/plans/s-1vcpu-1gb' });
      assert.ok(plan.body.endsWith('"price_monthly":6.50}'));
    });
  });
}
