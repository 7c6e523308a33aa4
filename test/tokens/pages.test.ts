// The token lists in pages on both backends: GET /api/v1/api-tokens and GET
// /api/v1/accounts/{id}/api-tokens take `per_page` (1-1000, default 100) and a cursor, answer
// `Link: <...>; rel="next"` only when more follow (keyset pages: no skip, no repeat while
// tokens are created), and refuse what cannot be read exactly. `sort=last_used_at` orders
// the whole list by last use, across every page, with cursors of its own. And the bound on
// stored tokens: an account that creates short-lived tokens without end never holds more
// than TOKEN_MAX_STORED, and creation keeps working.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditEvent } from '../../src/audit/schemas.js';
import type { App } from '../../src/http/types.js';
import type { TokenRecord } from '../../src/storage/types.js';
import { encodeCursor, encodeLastUseCursor } from '../../src/tokens/query.js';
import type { TokenView } from '../../src/tokens/schemas.js';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { auditApp, customer, nextLink, type Auth } from '../helpers/audit-http.js';
import { backends } from '../helpers/backends.js';
import { injectPage, injectWalk } from '../helpers/pages.js';
import { PROBLEM_TYPE } from '../helpers/app.js';

interface Problem {
  code: string;
  detail: string;
  errors?: { pointer: string; detail: string }[];
}

/** The order by last use, from the stored tokens: the most recent first, never-used last, ties by id. */
function byLastUse(tokens: readonly TokenRecord[]): string[] {
  const key = (t: TokenRecord) => (t.lastUsedAt === null ? Number.POSITIVE_INFINITY : -t.lastUsedAt);
  return [...tokens].sort((a, b) => key(a) - key(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((t) => t.id);
}

/** One page: its tokens and the path of the next one (null on the last). */
const page = (app: App, auth: Auth, url: string) => injectPage<TokenView>(app, auth, url);
const walk = (app: App, auth: Auth, url: string, between?: () => Promise<void>) =>
  injectWalk<TokenView>(app, auth, url, between);

for (const backend of backends()) {
  describe(`token lists in pages on ${backend.name}`, () => {
    // Both lists of one account's tokens: its own token's view and the operator's.
    const lists = (accountId: string) => [
      { name: 'GET /api/v1/api-tokens', path: '/api/v1/api-tokens', own: true },
      { name: 'GET /api/v1/accounts/{id}/api-tokens', path: `/api/v1/accounts/${accountId}/api-tokens`, own: false },
    ];

    it('per_page defaults to 100; Link names the next page only when more follow', async (t) => {
      const { app, operator, store } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:write']);
      const service = app.infracat.tokens.service;
      // With the customer's own token: 105.
      for (let i = 0; i < 104; i++)
        await service.create({ name: `t${i}`, scopes: ['apps:read'] }, null, acme.account.id, TEST_CONTEXT);
      for (const list of lists(acme.account.id)) {
        const auth = list.own ? acme.auth : operator.auth;
        const first = await app.inject({ method: 'GET', url: list.path, headers: auth });
        assert.equal(first.statusCode, 200, first.body);
        const tokens = first.json<TokenView[]>();
        assert.equal(tokens.length, 100, `${list.name}: default per_page`);
        assert.equal(tokens[0]!.id, acme.token.id, 'oldest first');
        const last = (await store.tokens.get(acme.account.id, tokens[99]!.id))!;
        assert.equal(
          nextLink(first.headers.link),
          `${list.path}?per_page=100&cursor=${encodeCursor({ createdAt: last.createdAt, id: last.id })}`,
        );
        const second = await page(app, auth, nextLink(first.headers.link)!);
        assert.equal(second.items.length, 5);
        assert.equal(second.next, null, `${list.name}: the last page has no Link`);
        // A page exactly filled by the last tokens: no Link to an empty page.
        const exact = await app.inject({ method: 'GET', url: `${list.path}?per_page=105`, headers: auth });
        assert.equal(exact.json<TokenView[]>().length, 105);
        assert.equal(exact.headers.link, undefined);
        assert.equal(exact.headers['cache-control'], 'no-store');
        for (const perPage of [1, 7, 104, 1000]) {
          const walked = await walk(app, auth, `${list.path}?per_page=${perPage}`);
          assert.deepEqual(
            walked.map((x) => x.id),
            tokens.concat(second.items).map((x) => x.id),
            `${list.name}, per_page=${perPage}: every token once, oldest first`,
          );
        }
      }
    });

    it('walking the links while tokens are created and deleted: every token there at the start, once', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:write']);
      const service = app.infracat.tokens.service;
      for (let i = 0; i < 30; i++)
        await service.create({ name: `before${i}`, scopes: ['apps:read'] }, null, acme.account.id, TEST_CONTEXT);
      for (const list of lists(acme.account.id)) {
        const auth = list.own ? acme.auth : operator.auth;
        const before = (await walk(app, auth, list.path)).map((x) => x.id);
        let n = 0;
        const churn = async () => {
          // One created (it comes after everything listed so far) and one deleted (never listed later).
          await service.create({ name: `during${n++}`, scopes: ['apps:read'] }, null, acme.account.id, TEST_CONTEXT);
          const { token } = await service.create(
            { name: 'brief', scopes: ['apps:read'] },
            null,
            acme.account.id,
            TEST_CONTEXT,
          );
          await service.delete(acme.account.id, token.id, null, TEST_CONTEXT);
        };
        const walked = (await walk(app, auth, `${list.path}?per_page=4`, churn)).map((x) => x.id);
        assert.ok(n >= 8, 'tokens were created during the walk');
        assert.equal(new Set(walked).size, walked.length, `${list.name}: no token twice`);
        for (const id of before) assert.ok(walked.includes(id), `${list.name}: ${id} was on a page`);
        const now = (await walk(app, auth, list.path)).map((x) => x.id);
        assert.deepEqual(
          walked,
          now.filter((id) => walked.includes(id)),
          'oldest first across pages',
        );
      }
    });

    it('sort=last_used_at: the whole list by last use across its pages, never-used last, ties by id', async (t) => {
      const { app, operator, store } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:read']);
      const service = app.infracat.tokens.service;
      const made: string[] = [];
      for (let i = 0; i < 57; i++) {
        const { token } = await service.create(
          { name: `t${i}`, scopes: ['apps:read'] },
          null,
          acme.account.id,
          TEST_CONTEXT,
        );
        made.push(token.id);
      }
      // Two in three used, in an order unrelated to creation; every fifth use shares its
      // millisecond with another token's (ties); the rest never used.
      const base = Date.now() - 3_600_000;
      await store.tokens.touch(
        made.flatMap((id, i) =>
          i % 3 === 2 ? [] : [{ id, at: base + (i % 5 === 0 ? 777 : ((i * 37) % 57) * 1000), ip: '203.0.113.9' }],
        ),
      );
      // The customer's own token: used by these requests, the most recent of all once written.
      await page(app, acme.auth, '/api/v1/api-tokens?per_page=1');
      await app.infracat.tokens.lastUsed.flush();
      const stored = await store.tokens.list(acme.account.id, 0, { limit: 1000 });
      const expected = byLastUse(stored);
      assert.equal(expected[0], acme.token.id, 'the token making the requests is the most recently used');
      assert.ok(stored.filter((x) => x.lastUsedAt === null).length >= 19, 'never-used tokens, a tie of their own');
      for (const list of lists(acme.account.id)) {
        const auth = list.own ? acme.auth : operator.auth;
        for (const perPage of [1, 4, 7, 58, 100]) {
          const links: string[] = [];
          const walked: TokenView[] = [];
          let next: string | null = `${list.path}?sort=last_used_at&per_page=${perPage}`;
          while (next !== null) {
            const got = await page(app, auth, next);
            walked.push(...got.items);
            next = got.next;
            if (next !== null) links.push(next);
          }
          assert.deepEqual(
            walked.map((x) => x.id),
            expected,
            `${list.name}, per_page=${perPage}: every token once, by last use`,
          );
          for (const link of links)
            assert.match(link, new RegExp(`^${list.path}\\?sort=last_used_at&per_page=${perPage}&cursor=[\\w-]+$`));
          // What each token shows agrees with the order: times never increase, nulls last.
          const times = walked.map((x) => (x.last_used_at === null ? null : Date.parse(x.last_used_at)));
          const firstNever = times.indexOf(null);
          assert.ok(
            times.slice(firstNever).every((x) => x === null),
            'never-used last',
          );
          const used = times.slice(0, firstNever) as number[];
          assert.ok(
            used.every((x, i) => i === 0 || x <= used[i - 1]!),
            'the most recent first',
          );
        }
        // The link names the last token's place by last use: a page exactly filled has none.
        const first = await app.inject({
          method: 'GET',
          url: `${list.path}?sort=last_used_at&per_page=3`,
          headers: auth,
        });
        const last = stored.find((x) => x.id === first.json<TokenView[]>()[2]!.id)!;
        const cursor = encodeLastUseCursor({ lastUsedAt: last.lastUsedAt, id: last.id });
        assert.equal(nextLink(first.headers.link), `${list.path}?sort=last_used_at&per_page=3&cursor=${cursor}`);
        const exact = await app.inject({
          method: 'GET',
          url: `${list.path}?sort=last_used_at&per_page=${expected.length}`,
          headers: auth,
        });
        assert.equal(exact.json<TokenView[]>().length, expected.length);
        assert.equal(exact.headers.link, undefined);
        // sort=created_at is the default order, and its links keep it as written.
        const created = await walk(app, auth, `${list.path}?sort=created_at&per_page=9`);
        assert.deepEqual(
          created.map((x) => x.id),
          (await walk(app, auth, list.path)).map((x) => x.id),
        );
        const createdFirst = await page(app, auth, `${list.path}?sort=created_at&per_page=9`);
        assert.match(createdFirst.next!, new RegExp(`^${list.path}\\?sort=created_at&per_page=9&cursor=`));
      }
    });

    it('sort=last_used_at, tokens used during the walk: none listed twice, the others each once', async (t) => {
      const { app, operator, store } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:read']);
      const service = app.infracat.tokens.service;
      const made: string[] = [];
      for (let i = 0; i < 30; i++) {
        const { token } = await service.create(
          { name: `u${i}`, scopes: ['apps:read'] },
          null,
          acme.account.id,
          TEST_CONTEXT,
        );
        made.push(token.id);
      }
      let clock = Date.now() - 3_600_000;
      await store.tokens.touch(made.filter((_, i) => i % 2 === 0).map((id) => ({ id, at: (clock += 1000) })));
      const usedMeanwhile = new Set<string>();
      let n = 0;
      // After each page, two tokens are used: one from the end of the list (not listed yet)
      // and one already listed; both move to the front.
      const churn = async () => {
        const all = byLastUse(await store.tokens.list(acme.account.id, 0, { limit: 1000 }));
        const picks = [all.at(-1 - n)!, all[3 + n]!];
        n += 1;
        for (const id of picks) usedMeanwhile.add(id);
        await store.tokens.touch(picks.map((id) => ({ id, at: (clock += 1000) })));
      };
      const walked = (
        await walk(
          app,
          operator.auth,
          `/api/v1/accounts/${acme.account.id}/api-tokens?sort=last_used_at&per_page=4`,
          churn,
        )
      ).map((x) => x.id);
      assert.ok(n >= 5, 'tokens were used during the walk');
      assert.equal(new Set(walked).size, walked.length, 'no token twice');
      for (const id of [...made, acme.token.id])
        if (!usedMeanwhile.has(id)) assert.ok(walked.includes(id), `${id}, not used meanwhile, was on a page`);
    });

    it('a cursor of one order is refused by the other; a last-use cursor is read exactly', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:read']);
      const service = app.infracat.tokens.service;
      for (let i = 0; i < 4; i++)
        await service.create({ name: `c${i}`, scopes: ['apps:read'] }, null, acme.account.id, TEST_CONTEXT);
      const cursorOf = (link: string | null) => new URL(link!, 'http://x').searchParams.get('cursor')!;
      for (const list of lists(acme.account.id)) {
        const auth = list.own ? acme.auth : operator.auth;
        const byCreation = cursorOf((await page(app, auth, `${list.path}?per_page=2`)).next);
        const byUse = cursorOf((await page(app, auth, `${list.path}?sort=last_used_at&per_page=2`)).next);
        const lastUse = (text: string) => Buffer.from(text).toString('base64url');
        for (const [query, name] of [
          [`?sort=last_used_at&cursor=${byCreation}`, 'cursor'],
          [`?cursor=${byUse}`, 'cursor'],
          [`?sort=created_at&cursor=${byUse}`, 'cursor'],
          [`?sort=last_used_at&cursor=${lastUse('last_used.-5.tok_a')}`, 'cursor'],
          [`?sort=last_used_at&cursor=${lastUse('last_used.05.tok_a')}`, 'cursor'],
          [`?sort=last_used_at&cursor=${lastUse('last_used.99999999999999999.tok_a')}`, 'cursor'],
          [`?sort=last_used_at&cursor=${lastUse('last_used.never.tok a')}`, 'cursor'],
          [`?sort=last_used_at&cursor=${lastUse('last_used.null.tok_a')}`, 'cursor'],
          [`?sort=last_used_at&cursor=${encodeLastUseCursor({ lastUsedAt: 1, id: 'tok_a' })}==`, 'cursor'],
          ['?sort=LAST_USED_AT', 'sort'],
          ['?sort=last_used', 'sort'],
          ['?sort=', 'sort'],
          ['?sort=last_used_at&sort=created_at', 'sort'],
        ] as const) {
          const res = await app.inject({ method: 'GET', url: `${list.path}${query}`, headers: auth });
          assert.equal(res.statusCode, 400, `${list.name}${query}: ${res.body}`);
          assert.equal(res.headers['content-type'], PROBLEM_TYPE);
          const p = res.json<Problem>();
          assert.equal(p.code, 'INVALID_QUERY', query);
          assert.ok(
            p.errors?.some((e) => e.pointer === `querystring:/${name}`),
            `${query}: ${JSON.stringify(p.errors)}`,
          );
        }
        // A cursor names a place, not a row that must exist: used or never used.
        for (const position of [
          { lastUsedAt: 0, id: 'tok_x' },
          { lastUsedAt: Date.now(), id: 'tok_x' },
          { lastUsedAt: null, id: 'tok_x' },
        ]) {
          const res = await app.inject({
            method: 'GET',
            url: `${list.path}?sort=last_used_at&cursor=${encodeLastUseCursor(position)}`,
            headers: auth,
          });
          assert.equal(res.statusCode, 200, `${JSON.stringify(position)}: ${res.body}`);
        }
      }
    });

    it('a page query that cannot be read exactly is 400 INVALID_QUERY naming the parameter', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:read']);
      const cases: [string, string][] = [
        ['?per_page=0', 'per_page'],
        ['?per_page=1001', 'per_page'],
        ['?per_page=08', 'per_page'],
        ['?per_page=1e2', 'per_page'],
        ['?per_page=%2B5', 'per_page'],
        ['?per_page=-1', 'per_page'],
        ['?per_page=', 'per_page'],
        ['?per_page=10&per_page=20', 'per_page'],
        ['?cursor=not!base64', 'cursor'],
        ['?cursor=', 'cursor'],
        [`?cursor=${Buffer.from('tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H').toString('base64url')}`, 'cursor'],
        [`?cursor=${Buffer.from('x.tok_a').toString('base64url')}`, 'cursor'],
        [`?cursor=${Buffer.from('-0.tok_a').toString('base64url')}`, 'cursor'],
        [`?cursor=${Buffer.from('1.tok a').toString('base64url')}`, 'cursor'],
        [`?cursor=${Buffer.from('99999999999999999.tok_a').toString('base64url')}`, 'cursor'],
        [`?cursor=${encodeCursor({ createdAt: 1, id: 'tok_a' })}==`, 'cursor'],
        ['?sort=desc', 'sort'],
      ];
      for (const list of lists(acme.account.id)) {
        const auth = list.own ? acme.auth : operator.auth;
        for (const [query, name] of cases) {
          const res = await app.inject({ method: 'GET', url: `${list.path}${query}`, headers: auth });
          assert.equal(res.statusCode, 400, `${list.name}${query}: ${res.body}`);
          assert.equal(res.headers['content-type'], PROBLEM_TYPE);
          const p = res.json<Problem>();
          assert.equal(p.code, 'INVALID_QUERY', query);
          assert.match(p.detail, new RegExp(`^invalid query parameter .*${name}`), query);
          assert.ok(
            p.errors?.some((e) => e.pointer === `querystring:/${name}`),
            `${query}: ${JSON.stringify(p.errors)}`,
          );
        }
        // The bounds themselves are fine, and a cursor names a position, not a row that must exist.
        for (const query of [
          '?per_page=1',
          '?per_page=1000',
          `?cursor=${encodeCursor({ createdAt: 0, id: 'tok_x' })}`,
        ]) {
          const res = await app.inject({ method: 'GET', url: `${list.path}${query}`, headers: auth });
          assert.equal(res.statusCode, 200, `${list.name}${query}: ${res.body}`);
        }
      }
      // An unknown account stays 404 whatever the page asked.
      const unknown = await app.inject({
        method: 'GET',
        url: '/api/v1/accounts/acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H/api-tokens?per_page=5',
        headers: operator.auth,
      });
      assert.equal(unknown.statusCode, 404);
    });

    it('an account creating two-second tokens without end never holds more than TOKEN_MAX_STORED', async (t) => {
      let clock = Date.UTC(2027, 0, 1);
      const { app, operator, store } = await auditApp(backend, t, {
        env: { TOKEN_MAX_LIVE: '3', TOKEN_MAX_STORED: '6' },
        now: () => clock,
      });
      const acme = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read']);
      const created: string[] = [];
      for (let i = 0; i < 25; i++) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: acme.auth,
          payload: { name: `ci ${i}`, scopes: ['api-tokens:read'], expires_at: new Date(clock + 2000).toISOString() },
        });
        assert.equal(res.statusCode, 201, `creation ${i} keeps working: ${res.body}`);
        created.push(res.json<{ id: string }>().id);
        clock += 3000;
        const stored = await store.tokens.list(acme.account.id, 0, { limit: 1000 });
        assert.ok(stored.length <= 6, `after ${i + 1} creations the account stores ${stored.length}`);
      }
      // The admin token and the five latest stay; the earlier ones were purged, oldest expiry first.
      const listed = await walk(app, acme.auth, '/api/v1/api-tokens?per_page=2');
      assert.deepEqual(
        listed.map((x) => x.id),
        [acme.token.id, ...created.slice(-5)],
      );
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/audit-events?action=api_token.expired_purged&per_page=100',
        headers: acme.auth,
      });
      assert.equal(res.statusCode, 200, res.body);
      const events = res.json<AuditEvent[]>();
      assert.deepEqual(events.map((e) => e.target.id).sort(), created.slice(0, -5).sort(), 'each purge audited');
      for (const e of events) {
        assert.deepEqual(e.actor, { type: 'system', id: null, name: 'infracat' });
        assert.equal(e.details.reason, 'max_stored');
      }
      // The live cap still answers 409 when the live tokens alone reach it.
      for (let i = 0; i < 2; i++) {
        const ok = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: acme.auth,
          payload: { name: `live ${i}`, scopes: ['api-tokens:read'] },
        });
        assert.equal(ok.statusCode, 201, ok.body);
      }
      const over = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: acme.auth,
        payload: { name: 'one too many', scopes: ['api-tokens:read'] },
      });
      assert.equal(over.statusCode, 409, over.body);
      assert.equal(over.json<Problem>().code, 'TOKEN_LIMIT_REACHED');
    });
  });
}
