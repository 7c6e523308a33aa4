// GET /api/v1/accounts in pages on both backends: `per_page` (1-1000, default 100), a cursor,
// `Link: <...>; rel="next"` only when more follow and with the filters kept (status,
// external_id), no skip or repeat while accounts are created, and refusals of what cannot
// be read exactly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Account } from '../../src/accounts/schemas.js';
import type { App } from '../../src/http/types.js';
import { encodeCursor } from '../../src/tokens/query.js';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { auditApp, nextLink, type Auth } from '../helpers/audit-http.js';
import { backends } from '../helpers/backends.js';
import { injectPage, injectWalk } from '../helpers/pages.js';
import { PROBLEM_TYPE } from '../helpers/app.js';

interface Problem {
  code: string;
  detail: string;
  errors?: { pointer: string; detail: string }[];
}

const page = (app: App, auth: Auth, url: string) => injectPage<Account>(app, auth, url);
const walk = (app: App, auth: Auth, url: string, between?: () => Promise<void>) =>
  injectWalk<Account>(app, auth, url, between);

for (const backend of backends()) {
  describe(`accounts in pages on ${backend.name}`, () => {
    it('per_page defaults to 100; Link only when more follow; walking returns every account once', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      for (let i = 0; i < 104; i++) await app.infracat.accounts.create({ name: `a${i}` }, TEST_CONTEXT);
      // With the operator account: 105.
      const first = await app.inject({ method: 'GET', url: '/api/v1/accounts', headers: operator.auth });
      assert.equal(first.statusCode, 200, first.body);
      const accounts = first.json<Account[]>();
      assert.equal(accounts.length, 100, 'default per_page');
      const last = accounts[99]!;
      assert.equal(
        nextLink(first.headers.link),
        `/api/v1/accounts?per_page=100&cursor=${encodeCursor({ createdAt: Date.parse(last.created_at), id: last.id })}`,
      );
      const second = await page(app, operator.auth, nextLink(first.headers.link)!);
      assert.equal(second.items.length, 5);
      assert.equal(second.next, null, 'the last page has no Link');
      const all = [...accounts, ...second.items].map((a) => a.id);
      assert.equal(new Set(all).size, 105);
      for (const perPage of [1, 10, 104, 105, 1000]) {
        const walked = await walk(app, operator.auth, `/api/v1/accounts?per_page=${perPage}`);
        assert.deepEqual(
          walked.map((a) => a.id),
          all,
          `per_page=${perPage}`,
        );
      }
      const exact = await app.inject({ method: 'GET', url: '/api/v1/accounts?per_page=105', headers: operator.auth });
      assert.equal(exact.headers.link, undefined, 'a page exactly filled by the last accounts: no Link');
    });

    it('the filters travel on every next link; accounts created mid-walk never make one skip or repeat', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const service = app.infracat.accounts;
      for (let i = 0; i < 20; i++) {
        const a = await service.create({ name: `a${i}`, external_id: i === 13 ? 'cus_13' : null }, TEST_CONTEXT);
        if (i % 3 === 0) await service.update(a.id, { status: 'suspended' }, TEST_CONTEXT);
      }
      const before = await walk(app, operator.auth, '/api/v1/accounts?status=suspended');
      assert.equal(before.length, 7);
      let n = 0;
      const churn = async () => {
        const a = await service.create({ name: `during${n++}` }, TEST_CONTEXT);
        if (n % 2 === 0) await service.update(a.id, { status: 'suspended' }, TEST_CONTEXT);
      };
      const links: string[] = [];
      const walked: Account[] = [];
      let next: string | null = '/api/v1/accounts?status=suspended&per_page=2';
      while (next !== null) {
        const got = await page(app, operator.auth, next);
        walked.push(...got.items);
        next = got.next;
        if (next !== null) links.push(next);
        await churn();
      }
      assert.ok(links.length >= 3);
      for (const link of links) assert.match(link, /^\/api\/v1\/accounts\?status=suspended&per_page=2&cursor=/);
      assert.ok(
        walked.every((a) => a.status === 'suspended'),
        'every page keeps the filter',
      );
      const ids = walked.map((a) => a.id);
      assert.equal(new Set(ids).size, ids.length, 'no account twice');
      for (const a of before) assert.ok(ids.includes(a.id), `${a.id} was on a page`);
      // external_id with status and a page size: kept too (one account at most).
      const one = await app.inject({
        method: 'GET',
        url: '/api/v1/accounts?external_id=cus_13&per_page=1',
        headers: operator.auth,
      });
      assert.equal(one.json<Account[]>().length, 1);
      assert.equal(one.headers.link, undefined);
      const encoded = await app.inject({
        method: 'GET',
        url: '/api/v1/accounts?status=active&per_page=1',
        headers: operator.auth,
      });
      assert.match(nextLink(encoded.headers.link)!, /^\/api\/v1\/accounts\?status=active&per_page=1&cursor=[\w-]+$/);
    });

    it('a page query that cannot be read exactly is 400 INVALID_QUERY naming the parameter', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      for (const [query, name] of [
        ['?per_page=0', 'per_page'],
        ['?per_page=1001', 'per_page'],
        ['?per_page=007', 'per_page'],
        ['?per_page=ten', 'per_page'],
        ['?per_page=', 'per_page'],
        ['?cursor=%%%', 'cursor'],
        [`?cursor=${Buffer.from('12.acc a').toString('base64url')}`, 'cursor'],
        [`?status=active&cursor=${encodeCursor({ createdAt: 5, id: 'acc_x' })}x`, 'cursor'],
      ] as const) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/accounts${query}`, headers: operator.auth });
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        const p = res.json<Problem>();
        assert.equal(p.code, 'INVALID_QUERY');
        assert.ok(
          p.errors?.some((e) => e.pointer === `querystring:/${name}`),
          `${query}: ${JSON.stringify(p)}`,
        );
      }
      const fine = await app.inject({ method: 'GET', url: '/api/v1/accounts?per_page=1000', headers: operator.auth });
      assert.equal(fine.statusCode, 200);
    });
  });
}
