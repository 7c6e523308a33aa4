// Forward auth and introspection on both backends, through app.inject().
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileRules, normalisePath, requiredScopes } from '../../src/gateway/rules.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

describe('forward-auth rules', () => {
  const rules = compileRules(JSON.stringify([
    { method: ['GET', 'HEAD'], path: '/apps/**', scopes: ['apps:read'] },
    { path: '/apps/**', scopes: ['apps:write'] },
    { method: 'GET', path: '/status/*', scopes: [] },
  ]));

  it('first match wins; ** spans segments, * one; no match is null (deny)', () => {
    assert.deepEqual(requiredScopes(rules, 'GET', '/apps/1/logs?tail=1'), ['apps:read']);
    assert.deepEqual(requiredScopes(rules, 'get', '/apps'), ['apps:read']);
    assert.deepEqual(requiredScopes(rules, 'DELETE', '/apps/1'), ['apps:write']);
    assert.deepEqual(requiredScopes(rules, 'GET', '/status/db'), []);
    assert.equal(requiredScopes(rules, 'GET', '/status/db/deep'), null);
    assert.equal(requiredScopes(rules, 'GET', '/applications'), null);
    assert.equal(requiredScopes(rules, 'GET', '/billing'), null);
  });

  it('paths are normalised before matching', () => {
    assert.equal(normalisePath('/apps/../billing'), '/billing');
    assert.equal(normalisePath('/apps/%2e%2e/billing'), '/billing');
    assert.equal(normalisePath('//apps/./1/'), '/apps/1');
    assert.equal(requiredScopes(rules, 'GET', '/apps/%2e%2e/billing'), null);
  });

  it('a bad table is refused with a clear reason', () => {
    assert.throws(() => compileRules('{'), /valid JSON/);
    assert.throws(() => compileRules('[{"path":"apps"}]'), /start with \//);
    assert.throws(() => compileRules('[{"path":"/a","scopes":["root"]}]'), /scopes/);
    assert.throws(() => compileRules('[{"path":"/a","scopes":[],"method":[]}]'), /method/);
  });
});

for (const backend of backends()) {
  describe(`forward auth and introspection on ${backend.name}`, () => {
    async function setup(t: Parameters<typeof backend.fresh>[0], env: Record<string, string> = {}) {
      const db = await backend.fresh(t);
      return build(t, { store: db.open(), env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000', ...env } });
    }

    it('allowed: 200 with X-Token-Id/Name/Scopes, counted as a use', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read'], 'déploiement bot');
      const res = await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: { ...tok.auth, 'x-original-uri': '/apps/7?x=1', 'x-original-method': 'GET' } });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['x-token-id'], tok.id);
      assert.equal(res.headers['x-token-name'], encodeURIComponent('déploiement bot'));
      assert.equal(res.headers['x-token-scopes'], 'apps:read');
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.notEqual(app.infracat.tokens.lastUsed.pending(tok.id), undefined);
      const plain = await mintToken(app, ['apps:read'], 'ci bot');
      const r2 = await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read', headers: plain.auth });
      assert.equal(r2.headers['x-token-name'], 'ci bot');
    });

    it('Traefik headers and the rule table: write needs apps:write; no rule: 403 (fail closed)', async (t) => {
      const { app } = await setup(t);
      const reader = await mintToken(app, ['apps:read']);
      const check = (method: string, uri: string, auth = reader.auth) =>
        app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: { ...auth, 'x-forwarded-method': method, 'x-forwarded-uri': uri } });
      assert.equal((await check('GET', '/apps/1')).statusCode, 200);
      const write = await check('POST', '/apps');
      assert.equal(write.statusCode, 403);
      assert.equal(write.headers['www-authenticate'], 'Bearer realm="infracat", error="insufficient_scope", scope="apps:write"');
      assert.deepEqual(write.json<{ missing_scopes: string[] }>().missing_scopes, ['apps:write']);
      const elsewhere = await check('GET', '/billing/invoices');
      assert.equal(elsewhere.statusCode, 403);
      assert.match(elsewhere.json<{ detail: string }>().detail, /no rule grants access/);
      const badTokenElsewhere = await check('GET', '/billing', { authorization: `Bearer ${generateSecret('icat')}` });
      assert.equal(badTokenElsewhere.statusCode, 401, 'a bad token is reported as such even where no rule applies');
    });

    it('scope query parameters (repeated or space-separated) override the rules; unknown scopes are a 400', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:write', 'images:read']);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read&scope=images:read', headers: tok.auth })).statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read%20plans:read', headers: tok.auth })).statusCode, 403);
      const unknown = await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=billing:read', headers: tok.auth });
      assert.equal(unknown.statusCode, 400);
      assert.equal(unknown.json<{ code: string }>().code, 'INVALID_QUERY');
      const nothing = await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: tok.auth });
      assert.equal(nothing.statusCode, 400, 'nothing to check against');
    });

    it('remembered scope parameters give the same answers on repeat, past the memo\'s bound, and never remember a refusal', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:write']);
      const status = async (query: string) => (await app.inject({ method: 'GET', url: `/api/v1/auth/check?${query}`, headers: tok.auth })).statusCode;
      for (let round = 0; round < 2; round++) {
        assert.equal(await status('scope=apps:read'), 200);
        assert.equal(await status('scope=plans:read'), 403);
        assert.equal(await status('scope=billing:read'), 400);
      }
      // 300 distinct values (more than the 256 kept) all decided correctly, then the first again.
      for (let n = 1; n <= 300; n++) assert.equal(await status(`scope=apps:read${','.repeat(n)}`), 200);
      assert.equal(await status('scope=plans:read'), 403);
    });

    it('denied: missing 401 with a Bearer challenge, malformed/unknown/deleted/expired 401 invalid_token', async (t) => {
      const { app } = await setup(t);
      const fwd = { 'x-original-uri': '/apps/1', 'x-original-method': 'GET' };
      const missing = await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: fwd });
      assert.equal(missing.statusCode, 401);
      assert.equal(missing.headers['www-authenticate'], 'Bearer realm="infracat"');
      assert.equal(missing.headers['content-type'], 'application/problem+json; charset=utf-8');
      for (const authorization of ['Bearer junk', `Bearer ${generateSecret('icat')}`]) {
        const res = await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: { ...fwd, authorization } });
        assert.equal(res.statusCode, 401);
        assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
      }
      const gone = await mintToken(app, ['apps:read']);
      await app.infracat.tokens.service.delete(gone.id, null);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: { ...fwd, ...gone.auth } })).statusCode, 401);
    });

    it('Envoy form: original method and path after the prefix; the client\'s query cannot choose scopes', async (t) => {
      const { app } = await setup(t);
      const reader = await mintToken(app, ['apps:read']);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/check/apps/1', headers: reader.auth })).statusCode, 200);
      const post = await app.inject({ method: 'POST', url: '/api/v1/auth/check/apps/1?scope=apps:read', headers: { ...reader.auth, 'content-type': 'application/octet-stream' }, payload: Buffer.from([1, 2, 3]) });
      assert.equal(post.statusCode, 403, 'POST needs apps:write whatever the query says');
      assert.equal((await app.inject({ method: 'DELETE', url: '/api/v1/auth/check/apps/1/../../billing', headers: reader.auth })).statusCode, 403);
    });

    it('a forwarded request body of any type is ignored', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:write']);
      const res = await app.inject({ method: 'POST', url: '/api/v1/auth/check', headers: { ...tok.auth, 'content-type': 'text/csv', 'x-original-uri': '/apps', 'x-original-method': 'POST' }, payload: 'a,b\n1,2' });
      assert.equal(res.statusCode, 200);
    });

    it('introspection: active tokens describe themselves; anything else is exactly {"active": false}', async (t) => {
      const { app } = await setup(t);
      const caller = await mintToken(app, ['api-tokens:read']);
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
      const { token, secret } = await app.infracat.tokens.service.create({ name: 'svc', scopes: ['apps:read', 'apps:write'], expires_at: expiresAt }, null);
      const form = await app.inject({ method: 'POST', url: '/api/v1/api-tokens/introspect', headers: { ...caller.auth, 'content-type': 'application/x-www-form-urlencoded' }, payload: `token=${encodeURIComponent(secret)}&token_type_hint=access_token` });
      assert.equal(form.statusCode, 200, form.body);
      assert.equal(form.headers['cache-control'], 'no-store');
      assert.deepEqual(form.json(), {
        active: true,
        scope: 'apps:read apps:write',
        token_id: token.id,
        name: 'svc',
        iat: Math.floor(token.createdAt / 1000),
        exp: Math.floor(Date.parse(expiresAt) / 1000),
      });
      const json = await app.inject({ method: 'POST', url: '/api/v1/api-tokens/introspect', headers: caller.auth, payload: { token: caller.secret } });
      assert.equal(json.json<{ active: boolean; exp?: number }>().active, true);
      assert.ok(!('exp' in json.json<object>()), 'no exp for a token that never expires');
      await app.infracat.tokens.service.delete(token.id, null);
      for (const presented of [secret, 'junk', generateSecret('icat'), '']) {
        const res = await app.inject({ method: 'POST', url: '/api/v1/api-tokens/introspect', headers: caller.auth, payload: { token: presented } });
        assert.equal(res.statusCode, 200);
        assert.equal(res.body, '{"active":false}');
      }
    });

    it('introspection needs api-tokens:read and a token field', async (t) => {
      const { app } = await setup(t);
      const other = await mintToken(app, ['apps:read']);
      assert.equal((await app.inject({ method: 'POST', url: '/api/v1/api-tokens/introspect', payload: { token: other.secret } })).statusCode, 401);
      assert.equal((await app.inject({ method: 'POST', url: '/api/v1/api-tokens/introspect', headers: other.auth, payload: { token: other.secret } })).statusCode, 403);
      const caller = await mintToken(app, ['api-tokens:write']);
      const missing = await app.inject({ method: 'POST', url: '/api/v1/api-tokens/introspect', headers: caller.auth, payload: {} });
      assert.equal(missing.statusCode, 422);
    });

    it('a cached check costs no storage round trip', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read']);
      const cache = app.infracat.tokens.cache;
      const headers = { ...tok.auth, 'x-original-uri': '/apps/1' };
      await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers });
      const misses = cache.misses;
      for (let i = 0; i < 20; i++) assert.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers })).statusCode, 200);
      assert.equal(cache.misses, misses, 'all 20 from the cache');
    });
  });
}
