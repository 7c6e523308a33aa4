// Forward auth's signed access tokens (AUTH_CHECK_JWT, `X-Token-Jwt`) on both backends
// (PostgreSQL with JWT_SIGNING_KEY_FILES): verified with jose against the served JWKS, made
// once per token and handed out again (not signed per check), renewed near their end, made
// anew when the token's scopes or expiry change, forgotten with the token's verification,
// bounded.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { App } from '../../src/http/types.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { changeFeedSettled, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { parseExposition, value } from '../helpers/prometheus.js';
import { buildSigning, verifyJwt } from '../helpers/signing-keys.js';
import { until } from '../helpers/until.js';

for (const backend of backends()) {
  describe(`forward auth with signed access tokens on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}, now?: () => number) {
      const { startAdmin, ...built } = await buildSigning(t, backend, { AUTH_CHECK_JWT: 'true', ...env }, now);
      // On PostgreSQL the change feed connects after start and resyncs then: settled first, so
      // that resync does not fall between the checks a test compares.
      await changeFeedSettled(built.app);
      return { ...built, admin: await startAdmin() };
    }

    const check = (app: App, secret: string, url = '/api/v1/auth/check?scope=apps:read') =>
      app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${secret}` } });
    const signedCount = (app: App) => app.infracat.signed!.signer.signed.forward_auth;

    it('an allowed check carries X-Token-Jwt, verified against the JWKS; the same one each check', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read', 'plans:read'], 'ci');
      const first = await check(app, tok.secret);
      assert.equal(first.statusCode, 200);
      const jwt = first.headers['x-token-jwt'] as string;
      const { payload, protectedHeader } = await verifyJwt(app, jwt);
      assert.equal(protectedHeader.typ, 'at+jwt');
      assert.equal(payload.sub, tok.id);
      assert.equal(payload.client_id, tok.id);
      assert.equal(payload.scope, 'apps:read plans:read', "all of the token's scopes");
      assert.equal(payload.account_id, OPERATOR_ACCOUNT_ID);
      assert.equal(payload.aud, 'http://localhost:8080');
      assert.equal(payload.exp! - payload.iat!, 300);

      // Every form of the check; none signs again.
      const forms = [
        { url: '/api/v1/auth/check?scope=apps:read', headers: {} },
        { url: '/api/v1/auth/check', headers: { 'x-original-method': 'GET', 'x-original-uri': '/apps/1' } },
        { url: '/api/v1/auth/check', headers: { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/apps/1' } },
        { url: '/api/v1/auth/check/apps/1', headers: {} },
      ];
      for (let i = 0; i < 25; i++) {
        const form = forms[i % forms.length]!;
        const res = await app.inject({ method: 'GET', url: form.url, headers: { ...tok.auth, ...form.headers } });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers['x-token-jwt'], jwt);
      }
      assert.equal(signedCount(app), 1, 'signed once, not per check');
      const metrics = parseExposition((await app.inject({ url: '/metrics' })).body);
      assert.equal(value(metrics, 'infracat_jwt_signed_total', { via: 'forward_auth' }), 1);
      assert.equal(value(metrics, 'infracat_jwt_signed_total', { via: 'exchange' }), 0);
      assert.equal(value(metrics, 'infracat_jwt_forward_auth_reused_total'), 25);

      // Checks that do not allow carry none.
      const narrow = await mintToken(app, ['plans:read']);
      const denied = await check(app, narrow.secret);
      assert.equal(denied.statusCode, 403);
      assert.equal(denied.headers['x-token-jwt'], undefined);
      const unknown = await check(app, 'icat_4lTzT0rbd6mWl2Ka7dM1yQ5o8kRxJc3H0000aB');
      assert.equal(unknown.statusCode, 401);
      assert.equal(unknown.headers['x-token-jwt'], undefined);
      // Another token, another signed token.
      const other = await mintToken(app, ['apps:read']);
      const theirs = (await check(app, other.secret)).headers['x-token-jwt'] as string;
      assert.equal((await verifyJwt(app, theirs)).payload.sub, other.id);
    });

    it('a resync drops verifications, not signed tokens: the next check verifies again, hands the same', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read']);
      const first = (await check(app, tok.secret)).headers['x-token-jwt'];
      const misses = app.infracat.tokens.cache.misses;
      app.infracat.tokens.cache.clear();
      const again = await check(app, tok.secret);
      assert.equal(again.statusCode, 200);
      assert.equal(app.infracat.tokens.cache.misses, misses + 1, 'verified from storage again');
      assert.equal(again.headers['x-token-jwt'], first);
      assert.equal(signedCount(app), 1);
    });

    it('concurrent first checks of a token share one signature', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read']);
      const answers = await Promise.all(Array.from({ length: 20 }, () => check(app, tok.secret)));
      assert.equal(new Set(answers.map((r) => r.headers['x-token-jwt'])).size, 1);
      assert.equal(signedCount(app), 1);
    });

    it('a new one once a fifth of its life is left, unless the token ends first; never past the token', async (t) => {
      let offset = 0;
      const { app, admin } = await setup(t, { JWT_TTL_S: '100' }, () => Date.now() + offset);
      const tok = await mintToken(app, ['apps:read']);
      const jwtAt = async (ms: number) => {
        offset = ms;
        return (await check(app, tok.secret)).headers['x-token-jwt'] as string;
      };
      const first = await jwtAt(0);
      assert.equal(await jwtAt(70_000), first, 'at 70 % of its life: the same');
      const renewed = await jwtAt(85_000);
      assert.notEqual(renewed, first, 'at 85 %: a new one');
      assert.equal(signedCount(app), 2);
      await verifyJwt(app, renewed, { now: Date.now() + offset });

      // A token that ends in 60 s: its signed token ends with it, and is not re-signed for nothing.
      offset = 0;
      const soon = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: admin.auth,
        payload: { name: 'soon', scopes: ['apps:read'], expires_at: new Date(Date.now() + 60_000).toISOString() },
      });
      const short = soon.json<{ token: string }>().token;
      const capped = (await check(app, short)).headers['x-token-jwt'] as string;
      const { payload } = await verifyJwt(app, capped);
      assert.ok(payload.exp! <= Math.floor((Date.now() + 60_000) / 1000), "capped at the token's expiry");
      const before = signedCount(app);
      offset = 55_000;
      assert.equal((await check(app, short)).headers['x-token-jwt'], capped, 'a new one would not last longer');
      assert.equal(signedCount(app), before);
    });

    it("a previous secret's signed token ends with its grace period; both secrets' kept alike", async (t) => {
      const { app, admin } = await setup(t);
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: admin.auth,
        payload: { name: 'ci', scopes: ['apps:read'] },
      });
      const { id, token: old } = created.json<{ id: string; token: string }>();
      const heard = app.changeFeed.heard.token;
      const rotated = await app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${id}/rotate`,
        headers: admin.auth,
        payload: { grace_period_s: 60 },
      });
      const current = rotated.json<{ token: string }>().token;
      // On PostgreSQL the instance also hears its own changes, and hearing the rotation drops
      // the token's kept signed tokens: the checks compared below begin once it is heard.
      if (backend.name === 'postgres') await until(() => app.changeFeed.heard.token > heard, 'the rotation heard');
      const byOld = (await check(app, old)).headers['x-token-jwt'] as string;
      const byNew = (await check(app, current)).headers['x-token-jwt'] as string;
      const graceEnd = Math.floor((Date.now() + 60_000) / 1000);
      assert.ok((await verifyJwt(app, byOld)).payload.exp! <= graceEnd, 'not past the grace period');
      const fresh = await verifyJwt(app, byNew);
      assert.equal(fresh.payload.exp! - fresh.payload.iat!, 300, 'the current secret: the whole lifetime');
      for (let i = 0; i < 4; i++) {
        assert.equal((await check(app, old)).headers['x-token-jwt'], byOld);
        assert.equal((await check(app, current)).headers['x-token-jwt'], byNew);
      }
      assert.equal(signedCount(app), 2, 'one for each, alternating checks sign nothing more');
    });

    it('made anew when the scopes or expiry change; forgotten when the token or its account goes', async (t) => {
      const { app, admin } = await setup(t);
      const { phantom } = app.infracat.signed!;
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: admin.auth,
        payload: { name: 'ci', scopes: ['apps:read'] },
      });
      const { id, token } = created.json<{ id: string; token: string }>();
      const first = (await check(app, token)).headers['x-token-jwt'] as string;

      assert.equal(phantom.size, 1);

      // Edited: forgotten with its verification; the next check makes a new one.
      const rename = await app.inject({
        method: 'PATCH',
        url: `/api/v1/api-tokens/${id}`,
        headers: admin.auth,
        payload: { name: 'ci 2' },
      });
      assert.equal(rename.statusCode, 200);
      assert.equal(phantom.size, 0, 'an edited token is forgotten');
      const afterRename = (await check(app, token)).headers['x-token-jwt'] as string;
      assert.notEqual(afterRename, first);
      assert.equal((await verifyJwt(app, afterRename)).payload.scope, 'apps:read');

      // Widened: a new one with the new scopes.
      await app.inject({
        method: 'PATCH',
        url: `/api/v1/api-tokens/${id}`,
        headers: admin.auth,
        payload: { scopes: ['apps:read', 'apps:write'] },
      });
      const widened = (await check(app, token)).headers['x-token-jwt'] as string;
      assert.equal((await verifyJwt(app, widened)).payload.scope, 'apps:read apps:write');

      // Changed on another instance (heard through the change feed): forgotten with the verification.
      app.infracat.tokens.cache.evictChanged(id, OPERATOR_ACCOUNT_ID);
      assert.equal(phantom.size, 0);
      assert.equal((await check(app, token)).statusCode, 200);
      assert.equal(phantom.size, 1);

      // Deleted: refused, and its signed token forgotten.
      await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${id}`, headers: admin.auth });
      assert.equal(phantom.size, 0);
      assert.equal((await check(app, token)).statusCode, 401);

      // A suspended account's tokens: refused, forgotten.
      const account = (
        await app.inject({ method: 'POST', url: '/api/v1/accounts', headers: admin.auth, payload: { name: 'Acme' } })
      ).json<{ id: string }>().id;
      const customer = (
        await app.inject({
          method: 'POST',
          url: `/api/v1/accounts/${account}/api-tokens`,
          headers: admin.auth,
          payload: { name: 'acme', scopes: ['apps:read'] },
        })
      ).json<{ token: string }>().token;
      const theirs = (await check(app, customer)).headers['x-token-jwt'] as string;
      assert.equal((await verifyJwt(app, theirs)).payload.account_id, account);
      assert.equal(phantom.size, 1);
      await app.inject({
        method: 'PATCH',
        url: `/api/v1/accounts/${account}`,
        headers: admin.auth,
        payload: { status: 'suspended' },
      });
      assert.equal(phantom.size, 0);
      const refused = await check(app, customer);
      assert.equal(refused.statusCode, 401);
      assert.equal(refused.headers['x-token-jwt'], undefined);
    });

    it('bounded like the verification cache (TOKEN_CACHE_MAX); off without AUTH_CHECK_JWT', async (t) => {
      const { app } = await setup(t, { TOKEN_CACHE_MAX: '3' });
      for (let i = 0; i < 6; i++) {
        const tok = await mintToken(app, ['apps:read']);
        assert.equal((await check(app, tok.secret)).statusCode, 200);
      }
      assert.equal(app.infracat.signed!.phantom.size, 3);

      const plain = await setup(t, { AUTH_CHECK_JWT: 'false' });
      const tok = await mintToken(plain.app, ['apps:read']);
      const res = await check(plain.app, tok.secret);
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['x-token-jwt'], undefined);
      assert.equal(plain.app.infracat.signed!.signer.signed.forward_auth, 0);
    });
  });
}
