// GET /api/v1/audit-events on both backends: the scope (read-only), the wire shape,
// tenancy (a customer reads its own trail only; the operator reads all), the filters,
// pagination by Link header (no skip, no repeat, also while events are being written),
// and every refusal of a query that cannot be read exactly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeCursor } from '../../src/audit/query.js';
import type { AuditEvent } from '../../src/audit/schemas.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { allEvents, auditApp, customer, nextLink, page } from '../helpers/audit-http.js';
import { backends } from '../helpers/backends.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';

const T0 = Date.UTC(2027, 0, 1); // the controlled clock starts here
const EVENT_KEYS = [
  'id',
  'action',
  'occurred_at',
  'account_id',
  'actor',
  'actor_credential',
  'target',
  'ip',
  'user_agent',
  'request_id',
  'details',
];

interface Problem {
  code: string;
  detail: string;
  errors?: { pointer: string; detail: string }[];
  valid_scopes?: string[];
  missing_scopes?: string[];
}

for (const backend of backends()) {
  describe(`audit events API on ${backend.name}`, () => {
    it('audit-events has :read only (:write is 422 wherever a scope is named); customers may hold it', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const scopes = (await app.inject({ method: 'GET', url: '/api/v1/scopes' })).json<{ scope: string }[]>();
      assert.ok(scopes.some((s) => s.scope === 'audit-events:read'));
      assert.ok(!scopes.some((s) => s.scope === 'audit-events:write'), 'no scope that grants nothing reachable');

      const own = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: operator.auth,
        payload: { name: 'x', scopes: ['apps:read', 'audit-events:write'] },
      });
      assert.equal(own.statusCode, 422, own.body);
      const problem = own.json<Problem>();
      assert.deepEqual(problem.errors, [{ pointer: '/scopes/1', detail: 'unknown scope "audit-events:write"' }]);
      assert.ok(problem.valid_scopes!.includes('audit-events:read'));
      assert.ok(!problem.valid_scopes!.includes('audit-events:write'));

      const acme = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read']);
      const intoCustomer = await app.inject({
        method: 'POST',
        url: `/api/v1/accounts/${acme.account.id}/api-tokens`,
        headers: operator.auth,
        payload: { name: 'y', scopes: ['audit-events:write'] },
      });
      assert.equal(intoCustomer.statusCode, 422, intoCustomer.body);
      const byCustomer = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: acme.auth,
        payload: { name: 'reader', scopes: ['audit-events:read'] },
      });
      assert.equal(byCustomer.statusCode, 201, 'a customer token may hold and grant audit-events:read');
      const check = await app.inject({
        method: 'GET',
        url: '/api/v1/auth/check?scope=audit-events:write',
        headers: operator.auth,
      });
      assert.equal(check.statusCode, 400, check.body);
      assert.match(check.json<Problem>().detail, /unknown scope audit-events:write/);
    });

    it("the first start's admin token holds audit-events:read, like every scope of the registry", async (t) => {
      const db = await backend.fresh(t);
      const { app } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url } });
      const issued = await app.infracat.tokens.service.bootstrapAdmin(true);
      assert.ok(issued);
      assert.deepEqual(issued.token.scopes, app.infracat.tokens.service.registry.names());
      assert.ok(issued.token.scopes.includes('audit-events:read'));
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/audit-events',
        headers: { authorization: `Bearer ${issued.secret}` },
      });
      assert.equal(res.statusCode, 200, res.body);
      const [event] = res.json<AuditEvent[]>();
      assert.equal(event?.action, 'api_token.created');
      assert.deepEqual(event.actor, { type: 'system', id: null, name: 'infracat' });
      assert.deepEqual(event.details, { scopes: issued.token.scopes, expires_at: null, bootstrap: true });
    });

    it('401 without a token, 403 naming the scope; 200 is a bare array of the wire shape, no-store', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const anonymous = await app.inject({ method: 'GET', url: '/api/v1/audit-events' });
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.headers['content-type'], PROBLEM_TYPE);
      assert.equal(anonymous.headers['cache-control'], 'no-store');
      assert.match(String(anonymous.headers['www-authenticate']), /^Bearer realm="infracat"/);
      const bad = await app.inject({
        method: 'GET',
        url: '/api/v1/audit-events',
        headers: { authorization: `Bearer icat_${'a'.repeat(36)}` },
      });
      assert.equal(bad.statusCode, 401);
      // api-tokens:write and accounts:write grant nothing here: only audit-events:read does.
      const other = await mintToken(app, ['api-tokens:write', 'accounts:write', 'apps:write'], 'no audit');
      const refused = await app.inject({ method: 'GET', url: '/api/v1/audit-events', headers: other.auth });
      assert.equal(refused.statusCode, 403);
      assert.deepEqual(refused.json<Problem>().missing_scopes, ['audit-events:read']);
      assert.match(
        String(refused.headers['www-authenticate']),
        /error="insufficient_scope", scope="audit-events:read"/,
      );

      const res = await app.inject({ method: 'GET', url: '/api/v1/audit-events', headers: operator.auth });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(res.headers.link, undefined, 'one page: no Link');
      const events = res.json<AuditEvent[]>();
      assert.ok(Array.isArray(events) && events.length >= 2);
      for (const e of events) {
        assert.deepEqual(Object.keys(e), EVENT_KEYS);
        assert.match(e.id, /^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
        assert.match(e.occurred_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        assert.deepEqual(Object.keys(e.actor), ['type', 'id', 'name']);
        assert.deepEqual(Object.keys(e.target), ['type', 'id', 'name']);
      }
      const ids = events.map((e) => e.id);
      assert.deepEqual(ids, [...ids].sort().reverse(), 'newest first');
      // HEAD answers like GET, without the body.
      const head = await app.inject({ method: 'HEAD', url: '/api/v1/audit-events', headers: operator.auth });
      assert.equal(head.statusCode, 200);
      assert.equal(head.body, '');
    });

    it("tenancy: a customer reads its own account's trail only; the operator all, or one by account_id", async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read'], 'Acme');
      const globex = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read'], 'Globex');
      for (const c of [acme, globex]) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: c.auth,
          payload: { name: `${c.account.name} ci`, scopes: ['api-tokens:read'] },
        });
        assert.equal(res.statusCode, 201);
      }
      const { catalog } = app.infracat;
      const live = catalog.snapshot.catalog;
      const { baseVersion } = await catalog.plan(live);
      await catalog.apply({ ...live, regions: live.regions.slice(1) }, baseVersion, TEST_CONTEXT);

      const everything = await allEvents(app, operator.auth);
      const acmes = await allEvents(app, acme.auth);
      const globexes = await allEvents(app, globex.auth);
      const targetIds = (list: AuditEvent[]) => new Set(list.map((e) => e.target.id));
      // Acme's trail: its account's creation, the token the operator minted into it, the one it made.
      assert.deepEqual(
        acmes.map((e) => e.action),
        ['api_token.created', 'api_token.created', 'account.created'],
      );
      assert.ok(targetIds(acmes).has(acme.account.id) && targetIds(acmes).has(acme.token.id));
      for (const e of acmes) {
        assert.ok(!targetIds(globexes).has(e.target.id ?? ''), 'nothing of one customer in the other');
        assert.ok(
          everything.some((x) => x.id === e.id),
          'the operator sees it too',
        );
      }
      // Each event names the account whose trail it is in: a customer sees its own account's id only.
      assert.deepEqual(new Set(acmes.map((e) => e.account_id)), new Set([acme.account.id]));
      assert.deepEqual(new Set(globexes.map((e) => e.account_id)), new Set([globex.account.id]));
      for (const e of everything) {
        const own = [...acmes, ...globexes].find((x) => x.id === e.id);
        assert.equal(e.account_id, own?.account_id ?? OPERATOR_ACCOUNT_ID, `${e.action} ${e.id}`);
      }
      assert.ok(!acmes.some((e) => e.action === 'catalog.applied'), 'the catalog is in the operator trail only');
      assert.ok(everything.some((e) => e.action === 'catalog.applied'));
      assert.ok(
        everything.some((e) => e.target.id === operator.id),
        "the operator's own events",
      );
      assert.equal(everything.length, new Set(everything.map((e) => e.id)).size);

      // The operator narrows to one account (a deleted one too: its trail outlives it); it
      // sees its own tokens where the customer sees the operator (operator-view.test.ts).
      const filtered = await allEvents(app, operator.auth, `?account_id=${acme.account.id}`);
      assert.deepEqual(
        filtered.map((e) => e.id),
        acmes.map((e) => e.id),
      );
      const gone = await app.inject({
        method: 'DELETE',
        url: `/api/v1/accounts/${globex.account.id}`,
        headers: operator.auth,
      });
      assert.equal(gone.statusCode, 204);
      const globexAfter = await allEvents(app, operator.auth, `?account_id=${globex.account.id}`);
      assert.deepEqual(
        globexAfter.map((e) => e.action),
        ['account.deleted', ...globexes.map((e) => e.action)],
      );
      assert.deepEqual(await allEvents(app, operator.auth, '?account_id=acc_nobody'), []);

      // A customer naming its own account reads its trail; naming any other is refused alike,
      // whether that account exists, existed or never did.
      assert.deepEqual(await allEvents(app, acme.auth, `?account_id=${acme.account.id}`), acmes);
      assert.deepEqual(
        acmes.map((e) => e.actor.type),
        ['api_token', 'operator', 'operator'],
        'its own token; the operator',
      );
      const refusals = [];
      for (const other of [OPERATOR_ACCOUNT_ID, globex.account.id, 'acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H']) {
        const res = await app.inject({
          method: 'GET',
          url: `/api/v1/audit-events?account_id=${other}`,
          headers: acme.auth,
        });
        assert.equal(res.statusCode, 403, res.body);
        const p = res.json<Problem & { request_id?: string; instance?: string }>();
        refusals.push({ code: p.code, detail: p.detail });
      }
      assert.equal(new Set(refusals.map((r) => JSON.stringify(r))).size, 1, 'one answer for every other account');
      assert.equal(refusals[0]!.code, 'INSUFFICIENT_SCOPE');
    });

    it('filters: action, target_id, since (inclusive), until (exclusive), combined, kept on every page', async (t) => {
      let clock = T0;
      const { app, operator } = await auditApp(backend, t, { now: () => clock });
      const made: { id: string; at: number }[] = [];
      for (let i = 0; i < 6; i++) {
        clock = T0 + (i + 1) * 60_000;
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: operator.auth,
          payload: { name: `t${i}`, scopes: ['apps:read'] },
        });
        assert.equal(res.statusCode, 201);
        made.push({ id: res.json<{ id: string }>().id, at: clock });
      }
      clock = T0 + 10 * 60_000;
      for (const m of made.slice(0, 3)) {
        const res = await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${m.id}`, headers: operator.auth });
        assert.equal(res.statusCode, 204);
      }
      const iso = (ms: number) => new Date(ms).toISOString();
      const actions = async (query: string) => (await allEvents(app, operator.auth, query)).map((e) => e.action);

      assert.deepEqual(await actions('?action=api_token.deleted'), Array(3).fill('api_token.deleted'));
      const one = await allEvents(app, operator.auth, `?target_id=${made[1]!.id}`);
      assert.deepEqual(
        one.map((e) => [e.action, e.target.id]),
        [
          ['api_token.deleted', made[1]!.id],
          ['api_token.created', made[1]!.id],
        ],
      );
      const window = await allEvents(app, operator.auth, `?since=${iso(made[1]!.at)}&until=${iso(made[4]!.at)}`);
      assert.deepEqual(
        window.map((e) => e.target.id),
        [made[3]!.id, made[2]!.id, made[1]!.id],
        'since inclusive, until exclusive',
      );
      // Any RFC 3339 offset names the same instant.
      const offset = await allEvents(app, operator.auth, `?since=${encodeURIComponent('2027-01-01T01:02:00+01:00')}`);
      assert.deepEqual(
        offset.map((e) => e.target.id).sort(),
        [...made.slice(1), ...made.slice(0, 3)].map((m) => m.id).sort(),
      );
      const combined = await allEvents(
        app,
        operator.auth,
        `?action=api_token.created&since=${iso(made[2]!.at)}&per_page=1`,
      );
      assert.deepEqual(
        combined.map((e) => e.target.id),
        [made[5]!.id, made[4]!.id, made[3]!.id, made[2]!.id],
        'every page keeps the filters',
      );
      assert.deepEqual(await actions(`?target_id=${made[1]!.id}&action=account.created`), []);
    });

    it('pagination: per_page (default 30, 1-100), a Link to each next page, no skip or repeat', async (t) => {
      const { app, operator, store } = await auditApp(backend, t);
      for (let i = 0; i < 34; i++) {
        await app.infracat.tokens.service.create(
          { name: `p${i}`, scopes: ['apps:read'] },
          null,
          OPERATOR_ACCOUNT_ID,
          TEST_CONTEXT,
        );
      }
      // With the default catalog's seed and the operator's token: 36.
      const stored = (await store.audit.list({ limit: 1000 })).map((e) => e.id);
      assert.equal(stored.length, 36);

      const first = await app.inject({ method: 'GET', url: '/api/v1/audit-events', headers: operator.auth });
      assert.equal(first.json<AuditEvent[]>().length, 30, 'default per_page');
      const next = nextLink(first.headers.link);
      assert.equal(next, `/api/v1/audit-events?per_page=30&cursor=${encodeCursor(stored[29]!)}`);
      const second = await app.inject({ method: 'GET', url: next, headers: operator.auth });
      assert.deepEqual(
        second.json<AuditEvent[]>().map((e) => e.id),
        stored.slice(30),
      );
      assert.equal(second.headers.link, undefined, 'the last page has no Link');

      for (const perPage of [1, 7, 35, 36, 100]) {
        const walked = await allEvents(app, operator.auth, `?per_page=${perPage}`);
        assert.deepEqual(
          walked.map((e) => e.id),
          stored,
          `per_page=${perPage}: every event once, newest first`,
        );
      }
      // A page exactly filled by the last events: no Link to an empty page.
      const exact = await app.inject({
        method: 'GET',
        url: '/api/v1/audit-events?per_page=36',
        headers: operator.auth,
      });
      assert.equal(exact.json<AuditEvent[]>().length, 36);
      assert.equal(exact.headers.link, undefined);
    });

    it('pagination while events are written: no skip, no repeat of what existed when the walk began', async (t) => {
      const { app, operator, store } = await auditApp(backend, t);
      const service = app.infracat.tokens.service;
      for (let i = 0; i < 25; i++)
        await service.create({ name: `before${i}`, scopes: ['apps:read'] }, null, OPERATOR_ACCOUNT_ID, TEST_CONTEXT);
      const before = (await store.audit.list({ limit: 1000 })).map((e) => e.id);
      let written = 0;
      const write = async () => {
        const { token } = await service.create(
          { name: `during${written}`, scopes: ['apps:read'] },
          null,
          OPERATOR_ACCOUNT_ID,
          TEST_CONTEXT,
        );
        await service.delete(OPERATOR_ACCOUNT_ID, token.id, null, TEST_CONTEXT);
        written += 2;
      };
      // A writer adds events while the pages are read (and between every two pages).
      let writing = true;
      const writer = (async () => {
        for (let n = 0; writing && n < 50; n++) await write();
      })();
      const walked: string[] = [];
      let url: string | null = '/api/v1/audit-events?per_page=4';
      while (url !== null) {
        const { events, next } = await page(app, operator.auth, url);
        walked.push(...events.map((e) => e.id));
        url = next;
        await write();
      }
      writing = false;
      await writer;
      assert.ok(written > 0, 'events were written during the walk');
      assert.equal(new Set(walked).size, walked.length, 'no event twice');
      for (const id of before) assert.ok(walked.includes(id), `${id}, there from the start, was on a page`);
      assert.deepEqual(walked, [...walked].sort().reverse(), 'newest first across pages');
    });

    it('a query that cannot be read exactly is 400 INVALID_QUERY naming the parameter', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const cases: [string, string][] = [
        ['?sort=asc', 'sort'],
        ['?action=api_token.exploded', 'action'],
        ['?action=api_token.created&action=api_token.deleted', 'action'],
        ['?per_page=0', 'per_page'],
        ['?per_page=101', 'per_page'],
        ['?per_page=08', 'per_page'],
        ['?per_page=1e1', 'per_page'],
        ['?per_page=%2B5', 'per_page'],
        ['?per_page=', 'per_page'],
        ['?since=yesterday', 'since'],
        ['?since=2027-02-30T00:00:00Z', 'since'],
        ['?until=2027-01-01', 'until'],
        ['?until=2027-01-01T24:00:00Z', 'until'],
        ['?since=2027-01-02T00:00:00Z&until=2027-01-01T00:00:00Z', 'until'],
        ['?since=2027-01-01T00:00:00Z&until=2027-01-01T00:00:00Z', 'until'],
        ['?cursor=not!base64', 'cursor'],
        ['?cursor=', 'cursor'],
        [`?cursor=${encodeCursor('tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H')}`, 'cursor'],
        [`?cursor=${encodeCursor('evt_01JD3X5Y6Z7A8B9C0D1E2F3G4H')}==`, 'cursor'],
        [`?cursor=${Buffer.from('evt_01JD3X5Y6Z7A8B9C0D1E2F3G4H').toString('base64')}x`, 'cursor'],
        ['?target_id=%00', 'target_id'],
        ['?target_id=tok%20x', 'target_id'],
        [`?target_id=${'a'.repeat(101)}`, 'target_id'],
        ['?account_id=acc%0A', 'account_id'],
      ];
      for (const [query, name] of cases) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/audit-events${query}`, headers: operator.auth });
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        const p = res.json<Problem>();
        assert.equal(p.code, 'INVALID_QUERY', query);
        assert.match(p.detail, new RegExp(`^invalid query parameter .*${name}`), query);
        assert.ok(
          p.errors?.some((e) => e.pointer === `querystring:/${name}`),
          `${query}: ${JSON.stringify(p.errors)}`,
        );
      }
      // The bounds themselves are fine.
      for (const query of [
        '?per_page=1',
        '?per_page=100',
        `?cursor=${encodeCursor('evt_01JD3X5Y6Z7A8B9C0D1E2F3G4H')}`,
      ]) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/audit-events${query}`, headers: operator.auth });
        assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
      }
    });
  });
}
