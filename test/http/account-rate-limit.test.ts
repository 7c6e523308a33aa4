// The account rate limit on one instance (the embedded default): all the tokens of an
// account share RATE_LIMIT_ACCOUNT (or the account's own `rate_limit`), on top of each
// token's RATE_LIMIT; over it, 429 ACCOUNT_RATE_LIMITED with Retry-After, and the account's
// entry in the RateLimit fields.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/http/types.js';
import { build, mintToken } from '../helpers/app.js';

const OPERATOR_SCOPES = ['accounts:write', 'accounts:read', 'api-tokens:write', 'api-tokens:read'];

type Auth = { authorization: string };

/** A new account and `n` tokens of it (api-tokens:read), made by the operator. */
async function accountWithTokens(app: App, operator: Auth, n: number): Promise<{ id: string; tokens: Auth[] }> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/accounts',
    headers: operator,
    payload: { name: 'Acme' },
  });
  assert.equal(created.statusCode, 201, created.body);
  const id = created.json<{ id: string }>().id;
  const tokens: Auth[] = [];
  for (let i = 0; i < n; i++) {
    const res = await app.inject({
      method: 'POST',
      url: `/api/v1/accounts/${id}/api-tokens`,
      headers: operator,
      payload: { name: `t${i}`, scopes: ['api-tokens:read'] },
    });
    assert.equal(res.statusCode, 201, res.body);
    tokens.push({ authorization: `Bearer ${res.json<{ token: string }>().token}` });
  }
  return { id, tokens };
}

const current = (app: App, auth: Auth) =>
  app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: auth });

const patch = (app: App, operator: Auth, id: string, payload: unknown) =>
  app.inject({ method: 'PATCH', url: `/api/v1/accounts/${id}`, headers: operator, payload: payload as object });

function entries(res: LightMyRequestResponse, field: 'ratelimit' | 'ratelimit-policy'): string[] {
  return String(res.headers[field]).split(', ');
}

describe('the account rate limit (one instance)', () => {
  it(
    "two tokens of one account share the account's limit; over it 429 ACCOUNT_RATE_LIMITED with Retry-After; " +
      'other accounts are not affected',
    async (t) => {
      const { app } = await build(t, { env: { RATE_LIMIT: '5', RATE_LIMIT_ACCOUNT: '8', RATE_LIMIT_WINDOW_S: '60' } });
      const operator = await mintToken(app, OPERATOR_SCOPES);
      const acme = await accountWithTokens(app, operator.auth, 2);
      const other = await accountWithTokens(app, operator.auth, 1);
      const [a, b] = acme.tokens as [Auth, Auth];
      const first = await current(app, a);
      assert.equal(first.statusCode, 200);
      assert.deepEqual(entries(first, 'ratelimit-policy'), ['"token";q=5;w=60', '"account";q=8;w=60']);
      assert.match(String(first.headers.ratelimit), /^"token";r=4;t=\d+, "account";r=7;t=\d+$/);
      for (let i = 1; i < 5; i++) assert.equal((await current(app, a)).statusCode, 200);
      const tokenRefused = await current(app, a);
      assert.equal(tokenRefused.statusCode, 429);
      assert.equal(tokenRefused.json<{ code: string }>().code, 'RATE_LIMITED', "the token's own limit first");
      // 5 of the account's 8 are spent (the refusal took none): the other token gets 3.
      for (let i = 0; i < 3; i++) assert.equal((await current(app, b)).statusCode, 200, `b #${i}`);
      const refused = await current(app, b);
      assert.equal(refused.statusCode, 429);
      const problem = refused.json<{ code: string; detail: string; status: number }>();
      assert.equal(problem.code, 'ACCOUNT_RATE_LIMITED');
      assert.equal(problem.status, 429);
      assert.match(problem.detail, /account's rate limit .* of 8 requests per 60 s/);
      assert.match(String(refused.headers['retry-after']), /^\d+$/);
      assert.match(String(refused.headers.ratelimit), /^"token";r=2;t=\d+, "account";r=0;t=\d+$/);
      const retryAfter = Number(refused.headers['retry-after']);
      const t2 = Number(/"account";r=0;t=(\d+)/.exec(String(refused.headers.ratelimit))![1]);
      assert.equal(retryAfter, t2, "Retry-After is the end of the account's window");
      assert.equal((await current(app, other.tokens[0]!)).statusCode, 200, 'another account has its own limit');
    },
  );

  it('RATE_LIMIT_ACCOUNT unset: 10 x RATE_LIMIT; 0: no account entry', async (t) => {
    const unset = await build(t, { env: { RATE_LIMIT: '7' } });
    const tok = await mintToken(unset.app, ['api-tokens:read']);
    assert.equal(
      (await current(unset.app, tok.auth)).headers['ratelimit-policy'],
      '"token";q=7;w=60, "account";q=70;w=60',
    );
    const off = await build(t, { env: { RATE_LIMIT: '7', RATE_LIMIT_ACCOUNT: '0' } });
    const tok2 = await mintToken(off.app, ['api-tokens:read']);
    assert.equal((await current(off.app, tok2.auth)).headers['ratelimit-policy'], '"token";q=7;w=60');
  });

  it(
    "an account's own rate_limit (PATCH): shown by GET, applied at once, 0 turns the account limit off, " +
      'null returns to the default; audited; bad values 422',
    async (t) => {
      const { app } = await build(t, { env: { RATE_LIMIT: '100', RATE_LIMIT_ACCOUNT: '50' } });
      const operator = await mintToken(app, OPERATOR_SCOPES);
      const acme = await accountWithTokens(app, operator.auth, 1);
      const token = acme.tokens[0]!;
      const got = await app.inject({ method: 'GET', url: `/api/v1/accounts/${acme.id}`, headers: operator.auth });
      assert.equal(got.json<{ rate_limit: unknown }>().rate_limit, null, 'the default');
      assert.equal((await current(app, token)).statusCode, 200, 'cached with the default limit');

      const set = await patch(app, operator.auth, acme.id, { rate_limit: 2 });
      assert.equal(set.statusCode, 200, set.body);
      assert.equal(set.json<{ rate_limit: unknown }>().rate_limit, 2);
      const again = await app.inject({ method: 'GET', url: `/api/v1/accounts/${acme.id}`, headers: operator.auth });
      assert.equal(again.json<{ rate_limit: unknown }>().rate_limit, 2);
      const next = await current(app, token);
      assert.deepEqual(entries(next, 'ratelimit-policy'), ['"token";q=100;w=60', '"account";q=2;w=60']);
      // The request before the PATCH counted too: this one is the second of 2.
      assert.equal(next.statusCode, 200);
      const over = await current(app, token);
      assert.equal(over.statusCode, 429);
      assert.equal(over.json<{ code: string }>().code, 'ACCOUNT_RATE_LIMITED');

      assert.equal((await patch(app, operator.auth, acme.id, { rate_limit: 0 })).statusCode, 200);
      const unlimited = await current(app, token);
      assert.equal(unlimited.statusCode, 200, '0: no account limit');
      assert.equal(unlimited.headers['ratelimit-policy'], '"token";q=100;w=60');

      const reset = await patch(app, operator.auth, acme.id, { rate_limit: null });
      assert.equal(reset.statusCode, 200);
      assert.equal(reset.json<{ rate_limit: unknown }>().rate_limit, null);
      assert.deepEqual(entries(await current(app, token), 'ratelimit-policy'), [
        '"token";q=100;w=60',
        '"account";q=50;w=60',
      ]);

      for (const bad of [-1, 1.5, '10', 10_000_001, true]) {
        const res = await patch(app, operator.auth, acme.id, { rate_limit: bad });
        assert.equal(res.statusCode, 422, `${JSON.stringify(bad)}: ${res.body}`);
        assert.equal(res.json<{ code: string }>().code, 'VALIDATION_FAILED');
      }
      const trail = await app.inject({
        method: 'GET',
        url: `/api/v1/audit-events?target_id=${acme.id}&action=account.updated`,
        headers: (await mintToken(app, ['audit-events:read'])).auth,
      });
      assert.equal(trail.statusCode, 200, trail.body);
      const changes = trail
        .json<{ details: { changes: { rate_limit?: unknown } } }[]>()
        .map((e) => e.details.changes.rate_limit)
        .reverse();
      assert.deepEqual(changes, [
        { from: null, to: 2 },
        { from: 2, to: 0 },
        { from: 0, to: null },
      ]);
    },
  );
});
