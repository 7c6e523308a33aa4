// Forward auth and introspection on both backends, through app.inject().
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Readable } from 'node:stream';
import type { InjectOptions } from 'fastify';
import { BODY_LIMIT_BYTES } from '../../src/app.js';
import { ConfigError } from '../../src/config-error.js';
import { loadConfig } from '../../src/config.js';
import { normalisePath } from '../../src/gateway/path.js';
import { compileRules, requiredScopes } from '../../src/gateway/rules.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { TEST_CONTEXT } from '../helpers/audit.js';

describe('forward-auth rules', () => {
  const rules = compileRules(
    JSON.stringify([
      { method: ['GET', 'HEAD'], path: '/apps/**', scopes: ['apps:read'] },
      { path: '/apps/**', scopes: ['apps:write'] },
      { method: 'GET', path: '/status/*', scopes: [] },
    ]),
  );

  it('first match wins; ** spans segments, * one; no match is null (deny)', () => {
    assert.deepEqual(requiredScopes(rules, 'GET', '/apps/1/logs?tail=1'), ['apps:read']);
    assert.deepEqual(requiredScopes(rules, 'get', '/apps'), ['apps:read']);
    assert.deepEqual(requiredScopes(rules, 'DELETE', '/apps/1'), ['apps:write']);
    assert.deepEqual(requiredScopes(rules, 'GET', '/status/db'), []);
    assert.equal(requiredScopes(rules, 'GET', '/status/db/deep'), null);
    assert.equal(requiredScopes(rules, 'GET', '/applications'), null);
    assert.equal(requiredScopes(rules, 'GET', '/billing'), null);
  });

  it('paths are decoded once and empty segments dropped before matching', () => {
    assert.deepEqual(normalisePath('/apps/1/?x=1'), { ok: true, path: '/apps/1' });
    assert.deepEqual(normalisePath('/apps//1'), { ok: true, path: '/apps/1' });
    assert.deepEqual(normalisePath('/%61pps/caf%C3%A9'), { ok: true, path: '/apps/café' });
    assert.deepEqual(normalisePath('/'), { ok: true, path: '/' });
    assert.deepEqual(requiredScopes(rules, 'GET', '/%61pps/1'), ['apps:read']);
  });

  it('anything the normaliser cannot read unambiguously is refused (requiredScopes: denied)', () => {
    const refused: Record<string, RegExp> = {
      '/apps/%2e%2e/billing': /dot segment/,
      '/apps/%2E./billing': /dot segment/,
      '/apps/../billing': /dot segment/,
      '/apps/./1': /dot segment/,
      '/apps/..;x/billing': /dot segment/,
      '/apps/%2e%2e%3bx/billing': /dot segment/,
      '/apps/%2e%2e/admin/%C0': /UTF-8/,
      '/apps/%C0%AE%C0%AE/admin': /UTF-8/,
      '/apps/%ED%A0%80': /UTF-8/,
      '/apps/%zz': /two hex digits/,
      '/apps/%4': /two hex digits/,
      '/apps/%': /two hex digits/,
      '/apps/%00': /control/,
      '/apps/%0a': /control/,
      '/apps/%C2%85': /control/,
      '/apps/\\..\\billing': /backslash/,
      '/apps/%5c..%5Cbilling': /backslash/,
      '/apps/%2f..%2Fbilling': /slash/,
      '/apps/%252e%252e/billing': /double encoding/,
      '/apps/%EF%BC%8E%EF%BC%8E/billing': /normalisation/,
      '/apps/a%EF%BC%8Fb': /normalisation/,
      '/apps/%E2%80%A4%E2%80%A4/billing': /normalisation/,
      '//apps/1': /authority/,
      'apps/1': /starting with \//,
      '': /starting with \//,
      '/apps/1 /billing': /space/,
      '/apps/1\tx': /control/,
      '/apps/caf\u00e9': /non-ASCII/,
      '/apps/1#/../../billing': /#/,
    };
    for (const [uri, reason] of Object.entries(refused)) {
      const result = normalisePath(uri);
      assert.equal(result.ok, false, `${JSON.stringify(uri)} is refused`);
      assert.match(result.ok ? '' : result.reason, reason, JSON.stringify(uri));
      assert.equal(requiredScopes(rules, 'GET', uri), null, `${JSON.stringify(uri)} is denied`);
    }
  });

  it('a bad table is refused with a clear reason', () => {
    assert.throws(() => compileRules('{'), /valid JSON/);
    assert.throws(() => compileRules('[{"path":"apps"}]'), /start with \//);
    assert.throws(() => compileRules('[{"path":"/a","scopes":["root"]}]'), /scopes/);
    assert.throws(() => compileRules('[{"path":"/a","scopes":[],"method":[]}]'), /method/);
    assert.throws(
      () => compileRules('[{"path":"/a","scopes":[],"method":"FETCH"}]'),
      /method must be one of GET, HEAD/,
    );
  });

  it('AUTH_CHECK_GATEWAY is auto by default, or nginx, traefik or envoy', () => {
    assert.equal(loadConfig({}).authCheckGateway, 'auto');
    for (const g of ['nginx', 'traefik', 'envoy'] as const)
      assert.equal(loadConfig({ AUTH_CHECK_GATEWAY: g }).authCheckGateway, g);
    assert.throws(
      () => loadConfig({ AUTH_CHECK_GATEWAY: 'haproxy' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /^invalid AUTH_CHECK_GATEWAY "haproxy": expected one of auto, nginx, traefik, envoy$/.test(err.message),
    );
  });
});

for (const backend of backends()) {
  describe(`forward auth and introspection on ${backend.name}`, () => {
    async function setup(t: Parameters<typeof backend.fresh>[0], env: Record<string, string> = {}) {
      const db = await backend.fresh(t);
      return build(t, { store: db.open(), env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000', ...env } });
    }

    it('allowed: 200 with X-Token-Id/Name/Scopes and X-Account-Id, counted as a use', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read'], 'déploiement bot');
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/auth/check',
        headers: { ...tok.auth, 'x-original-uri': '/apps/7?x=1', 'x-original-method': 'GET' },
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['x-token-id'], tok.id);
      assert.equal(res.headers['x-token-name'], encodeURIComponent('déploiement bot'));
      assert.equal(res.headers['x-token-scopes'], 'apps:read');
      assert.equal(res.headers['x-account-id'], OPERATOR_ACCOUNT_ID);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.notEqual(app.infracat.tokens.lastUsed.pending(tok.id), undefined);
      const plain = await mintToken(app, ['apps:read'], 'ci bot');
      const r2 = await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read', headers: plain.auth });
      assert.equal(r2.headers['x-token-name'], 'ci bot');
    });

    it('a check with scope parameters answers exactly these headers; each token judged on each request', async (t) => {
      const { app } = await setup(t);
      const a = await mintToken(app, ['apps:read'], 'a');
      const c = await mintToken(app, ['apps:read', 'plans:read'], 'ci "deploy" – ü');
      const check = '/api/v1/auth/check?scope=apps:read';
      const names = [
        'x-content-type-options',
        'x-frame-options',
        'referrer-policy',
        'cross-origin-resource-policy',
        'strict-transport-security',
        'content-security-policy',
        'x-request-id',
        'cache-control',
        'x-token-id',
        'x-token-name',
        'x-token-scopes',
        'x-account-id',
        'content-type',
        'content-length',
      ];
      // Two tokens' checks in turn, each the first and then a cached verification.
      for (const token of [a, c, a, c]) {
        const res = await app.inject({ method: 'GET', url: check, headers: token.auth });
        assert.equal(res.statusCode, 200);
        const sent = Object.keys(res.headers).filter((h) => h !== 'date' && h !== 'connection');
        assert.deepEqual(sent, names, 'no RateLimit fields: the check is not rate limited');
        assert.equal(res.headers['cache-control'], 'no-store');
        assert.equal(res.headers['x-token-id'], token.id);
        assert.equal(res.headers['x-token-name'], token === a ? 'a' : encodeURIComponent('ci "deploy" – ü'));
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        assert.equal(Number(res.headers['content-length']), res.rawPayload.length);
        const scopes = String(res.headers['x-token-scopes']).split(' ');
        assert.deepEqual(JSON.parse(res.body), {
          id: token.id,
          name: token === a ? 'a' : 'ci "deploy" – ü',
          scopes,
          account_id: OPERATOR_ACCOUNT_ID,
        });
      }
      // One query, each token judged on it anew.
      const both = `${check}&scope=plans:read`;
      assert.equal((await app.inject({ method: 'GET', url: both, headers: a.auth })).statusCode, 403);
      assert.equal((await app.inject({ method: 'GET', url: both, headers: c.auth })).statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: both, headers: a.auth })).statusCode, 403);
      assert.equal((await app.inject({ method: 'GET', url: check, headers: a.auth })).statusCode, 200);
    });

    it('Traefik headers and the rule table: write needs apps:write; no rule: 403 (fail closed)', async (t) => {
      const { app } = await setup(t);
      const reader = await mintToken(app, ['apps:read']);
      const check = (method: string, uri: string, auth = reader.auth) =>
        app.inject({
          method: 'GET',
          url: '/api/v1/auth/check',
          headers: { ...auth, 'x-forwarded-method': method, 'x-forwarded-uri': uri },
        });
      assert.equal((await check('GET', '/apps/1')).statusCode, 200);
      const write = await check('POST', '/apps');
      assert.equal(write.statusCode, 403);
      assert.equal(
        write.headers['www-authenticate'],
        'Bearer realm="infracat", error="insufficient_scope", scope="apps:write"',
      );
      assert.deepEqual(write.json<{ missing_scopes: string[] }>().missing_scopes, ['apps:write']);
      const elsewhere = await check('GET', '/billing/invoices');
      assert.equal(elsewhere.statusCode, 403);
      assert.match(elsewhere.json<{ detail: string }>().detail, /no rule grants access/);
      const badTokenElsewhere = await check('GET', '/billing', { authorization: `Bearer ${generateSecret('icat')}` });
      assert.equal(badTokenElsewhere.statusCode, 401, 'a bad token is reported as such even where no rule applies');
    });

    it(
      'scope query parameters (repeated or space-separated) override the rules; unknown scopes are a ' + '400',
      async (t) => {
        const { app } = await setup(t);
        const tok = await mintToken(app, ['apps:write', 'images:read']);
        assert.equal(
          (
            await app.inject({
              method: 'GET',
              url: '/api/v1/auth/check?scope=apps:read&scope=images:read',
              headers: tok.auth,
            })
          ).statusCode,
          200,
        );
        assert.equal(
          (
            await app.inject({
              method: 'GET',
              url: '/api/v1/auth/check?scope=apps:read%20plans:read',
              headers: tok.auth,
            })
          ).statusCode,
          403,
        );
        const unknown = await app.inject({
          method: 'GET',
          url: '/api/v1/auth/check?scope=billing:read',
          headers: tok.auth,
        });
        assert.equal(unknown.statusCode, 400);
        assert.equal(unknown.json<{ code: string }>().code, 'INVALID_QUERY');
        const nothing = await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: tok.auth });
        assert.equal(nothing.statusCode, 400, 'nothing to check against');
      },
    );

    it(
      "remembered scope parameters give the same answers on repeat, past the memo's bound, and never remember a " +
        'refusal',
      async (t) => {
        const { app } = await setup(t);
        const tok = await mintToken(app, ['apps:write']);
        const status = async (query: string) =>
          (await app.inject({ method: 'GET', url: `/api/v1/auth/check?${query}`, headers: tok.auth })).statusCode;
        for (let round = 0; round < 2; round++) {
          assert.equal(await status('scope=apps:read'), 200);
          assert.equal(await status('scope=plans:read'), 403);
          assert.equal(await status('scope=billing:read'), 400);
        }
        // 300 distinct values (more than the 256 kept) all decided correctly, then the first again.
        for (let n = 1; n <= 300; n++) assert.equal(await status(`scope=apps:read${','.repeat(n)}`), 200);
        assert.equal(await status('scope=plans:read'), 403);
      },
    );

    it(
      'denied: missing 401 with a Bearer challenge, malformed/unknown/deleted/expired 401 ' + 'invalid_token',
      async (t) => {
        const { app } = await setup(t);
        const fwd = { 'x-original-uri': '/apps/1', 'x-original-method': 'GET' };
        const missing = await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: fwd });
        assert.equal(missing.statusCode, 401);
        assert.equal(missing.headers['www-authenticate'], 'Bearer realm="infracat"');
        assert.equal(missing.headers['content-type'], 'application/problem+json; charset=utf-8');
        for (const authorization of ['Bearer junk', `Bearer ${generateSecret('icat')}`]) {
          const res = await app.inject({
            method: 'GET',
            url: '/api/v1/auth/check',
            headers: { ...fwd, authorization },
          });
          assert.equal(res.statusCode, 401);
          assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
        }
        const gone = await mintToken(app, ['apps:read']);
        await app.infracat.tokens.service.delete(OPERATOR_ACCOUNT_ID, gone.id, null, TEST_CONTEXT);
        assert.equal(
          (await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: { ...fwd, ...gone.auth } }))
            .statusCode,
          401,
        );
      },
    );

    it("Envoy form: original method and path after the prefix; the client's query cannot choose scopes", async (t) => {
      const { app } = await setup(t);
      const reader = await mintToken(app, ['apps:read']);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/auth/check/apps/1', headers: reader.auth })).statusCode,
        200,
      );
      const post = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/check/apps/1?scope=apps:read',
        headers: { ...reader.auth, 'content-type': 'application/octet-stream' },
        payload: Buffer.from([1, 2, 3]),
      });
      assert.equal(post.statusCode, 403, 'POST needs apps:write whatever the query says');
      assert.equal(
        (await app.inject({ method: 'DELETE', url: '/api/v1/auth/check/apps/1/../../billing', headers: reader.auth }))
          .statusCode,
        403,
      );
    });

    it('a forwarded request body of any type is ignored', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:write']);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/check',
        headers: { ...tok.auth, 'content-type': 'text/csv', 'x-original-uri': '/apps', 'x-original-method': 'POST' },
        payload: 'a,b\n1,2',
      });
      assert.equal(res.statusCode, 200);
    });

    it('the original method and URI come from one header family, each header once, never guessed', async (t) => {
      const { app } = await setup(t);
      const reader = await mintToken(app, ['apps:read']);
      const check = (headers: Record<string, string | string[]>) =>
        app.inject({ method: 'GET', url: '/api/v1/auth/check', headers: { ...reader.auth, ...headers } });
      const refused: [Record<string, string | string[]>, RegExp][] = [
        // Traefik forwards DELETE /apps/x (or GET /admin) and the client adds X-Original-*.
        [{ 'x-forwarded-method': 'DELETE', 'x-forwarded-uri': '/apps/x', 'x-original-method': 'GET' }, /both/],
        [{ 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/admin', 'x-original-uri': '/apps/x' }, /both/],
        [
          {
            'x-forwarded-method': 'GET',
            'x-forwarded-uri': '/apps/x',
            'x-original-method': 'GET',
            'x-original-uri': '/apps/x',
          },
          /both/,
        ],
        // Half a family: the method is never assumed to be GET.
        [{ 'x-original-uri': '/apps/x' }, /X-Original-URI without X-Original-Method/],
        [{ 'x-forwarded-uri': '/apps/x' }, /X-Forwarded-Uri without X-Forwarded-Method/],
        [{ 'x-forwarded-method': 'GET' }, /X-Forwarded-Method without X-Forwarded-Uri/],
        // A header sent twice (Node would join the values with ", ").
        [{ 'x-original-method': ['GET', 'DELETE'], 'x-original-uri': '/apps/x' }, /X-Original-Method is sent 2 times/],
        [{ 'x-forwarded-method': 'GET', 'x-forwarded-uri': ['/apps/x', '/admin'] }, /X-Forwarded-Uri is sent 2 times/],
        // Not one method name; not an origin-form URI.
        [{ 'x-original-method': 'GET, DELETE', 'x-original-uri': '/apps/x' }, /not one HTTP method name/],
        [{ 'x-original-method': 'get', 'x-original-uri': '/apps/x' }, /not one HTTP method name/],
        [{ 'x-original-method': 'FETCH', 'x-original-uri': '/apps/x' }, /not one HTTP method name/],
        [{ 'x-original-method': '', 'x-original-uri': '/apps/x' }, /not one HTTP method name/],
        [{ 'x-original-method': 'GET', 'x-original-uri': '' }, /X-Original-URI must be an origin-form path/],
        [{ 'x-original-method': 'GET', 'x-original-uri': 'http://apps/x' }, /origin-form/],
        [{ 'x-original-method': 'GET', 'x-original-uri': '//apps/x' }, /authority/],
        [{ 'x-original-method': 'GET', 'x-original-uri': '/apps/x, /admin' }, /space/],
        [
          { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/apps/%2e%2e/admin/%C0' },
          /X-Forwarded-Uri has percent-escapes that are not valid UTF-8/,
        ],
      ];
      for (const [headers, reason] of refused) {
        const res = await check(headers);
        assert.equal(res.statusCode, 400, JSON.stringify(headers));
        assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
        const body = res.json<{ code: string; detail: string }>();
        assert.equal(body.code, 'BAD_REQUEST');
        assert.match(body.detail, reason, JSON.stringify(headers));
      }
      // The same requests, said once and consistently, are decided by the rule table.
      assert.equal((await check({ 'x-forwarded-method': 'DELETE', 'x-forwarded-uri': '/apps/x' })).statusCode, 403);
      assert.equal((await check({ 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/admin' })).statusCode, 403);
      assert.equal((await check({ 'X-Forwarded-Method': 'HEAD', 'X-Forwarded-Uri': '/apps/x?y=%zz' })).statusCode, 200);
    });

    it('AUTH_CHECK_GATEWAY names the gateway: only its form is read, the others are a 400', async (t) => {
      const db = await backend.fresh(t);
      const apps: Record<string, Awaited<ReturnType<typeof build>>['app']> = {};
      for (const mode of ['auto', 'nginx', 'traefik', 'envoy']) {
        apps[mode] = (
          await build(t, { store: db.open(), env: { DATABASE_URL: db.url, AUTH_CHECK_GATEWAY: mode } })
        ).app;
      }
      const reader = await mintToken(apps.auto!, ['apps:read']);
      const forms = {
        nginx: { url: '/api/v1/auth/check', headers: { 'x-original-method': 'GET', 'x-original-uri': '/apps/1' } },
        traefik: { url: '/api/v1/auth/check', headers: { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/apps/1' } },
        envoy: { url: '/api/v1/auth/check/apps/1', headers: {} },
      };
      for (const [mode, app] of Object.entries(apps)) {
        for (const [form, { url, headers }] of Object.entries(forms)) {
          const res = await app.inject({ method: 'GET', url, headers: { ...reader.auth, ...headers } });
          const readable = mode === 'auto' || form === mode;
          assert.equal(res.statusCode, readable ? 200 : 400, `${form} form with AUTH_CHECK_GATEWAY=${mode}`);
          if (!readable) assert.match(res.json<{ detail: string }>().detail, new RegExp(`AUTH_CHECK_GATEWAY=${mode}`));
        }
        // The scope form is the gateway's own config (its check URL): read in every mode.
        assert.equal(
          (await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read', headers: reader.auth }))
            .statusCode,
          200,
        );
        // The path form takes the path from the URL; a forwarded header there came from the client.
        const spoofed = await app.inject({
          method: 'DELETE',
          url: '/api/v1/auth/check/apps/1',
          headers: { ...reader.auth, 'x-original-method': 'GET' },
        });
        assert.equal(spoofed.statusCode, 400, `path form with a forwarded header, AUTH_CHECK_GATEWAY=${mode}`);
      }
    });

    it('an empty scope parameter is a 400, never "any valid token"', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read']);
      for (const query of ['scope=', 'scope', 'scope=%20', 'scope=,', 'scope=+,+', 'scope=apps:read&scope=']) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/auth/check?${query}`, headers: tok.auth });
        assert.equal(res.statusCode, 400, query);
        assert.equal(res.json<{ code: string }>().code, 'INVALID_QUERY');
      }
      // With scope parameters the forwarded headers are not read: the gateway fixed the scopes.
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/auth/check?scope=apps:read',
        headers: { ...tok.auth, 'x-forwarded-method': 'DELETE', 'x-forwarded-uri': '/admin' },
      });
      assert.equal(res.statusCode, 200);
    });

    it('a forwarded body past the body limit is a 413 (Content-Length, chunked, GET); under it, ignored', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:write']);
      const fwd = { ...tok.auth, 'x-original-method': 'POST', 'x-original-uri': '/apps' };
      const big = Buffer.alloc(BODY_LIMIT_BYTES + 1, 0x61);
      const small = Buffer.alloc(BODY_LIMIT_BYTES, 0x61);
      const chunked = (body: Buffer) => Readable.from([body.subarray(0, 1000), body.subarray(1000)]);
      const cases: [string, InjectOptions, number][] = [
        [
          'POST, Content-Length',
          {
            method: 'POST',
            url: '/api/v1/auth/check',
            headers: { ...fwd, 'content-type': 'text/plain' },
            payload: big,
          },
          413,
        ],
        [
          'POST, chunked',
          {
            method: 'POST',
            url: '/api/v1/auth/check',
            headers: { ...fwd, 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
            payload: chunked(big),
          },
          413,
        ],
        ['POST, no type', { method: 'POST', url: '/api/v1/auth/check', headers: fwd, payload: big }, 413],
        ['GET, Content-Length', { method: 'GET', url: '/api/v1/auth/check', headers: fwd, payload: big }, 413],
        [
          'GET, chunked',
          {
            method: 'GET',
            url: '/api/v1/auth/check',
            headers: { ...fwd, 'transfer-encoding': 'chunked' },
            payload: chunked(big),
          },
          413,
        ],
        [
          'Envoy, chunked',
          {
            method: 'POST',
            url: '/api/v1/auth/check/apps',
            headers: { ...tok.auth, 'content-type': 'text/plain', 'transfer-encoding': 'chunked' },
            payload: chunked(big),
          },
          413,
        ],
        [
          'POST, at the limit',
          {
            method: 'POST',
            url: '/api/v1/auth/check',
            headers: { ...fwd, 'content-type': 'text/plain' },
            payload: small,
          },
          200,
        ],
        [
          'POST, chunked at the limit',
          {
            method: 'POST',
            url: '/api/v1/auth/check',
            headers: { ...fwd, 'content-type': 'text/plain', 'transfer-encoding': 'chunked' },
            payload: chunked(small),
          },
          200,
        ],
        [
          'GET, chunked at the limit',
          {
            method: 'GET',
            url: '/api/v1/auth/check',
            headers: { ...fwd, 'transfer-encoding': 'chunked' },
            payload: chunked(small),
          },
          200,
        ],
        [
          'Envoy, at the limit',
          {
            method: 'POST',
            url: '/api/v1/auth/check/apps',
            headers: { ...tok.auth, 'content-type': 'text/plain' },
            payload: small,
          },
          200,
        ],
      ];
      for (const [name, request, status] of cases) {
        const res = await app.inject(request);
        assert.equal(res.statusCode, status, name);
        if (status === 413) {
          assert.equal(res.json<{ code: string }>().code, 'PAYLOAD_TOO_LARGE', name);
          assert.equal(res.headers.connection, 'close', `${name}: the rest of the body is not read`);
        }
      }
    });

    it('introspection: active tokens describe themselves; anything else is exactly {"active": false}', async (t) => {
      const { app } = await setup(t);
      const caller = await mintToken(app, ['api-tokens:read']);
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
      const { token, secret } = await app.infracat.tokens.service.create(
        { name: 'svc', scopes: ['apps:read', 'apps:write'], expires_at: expiresAt },
        null,
        OPERATOR_ACCOUNT_ID,
        TEST_CONTEXT,
      );
      const form = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens/introspect',
        headers: { ...caller.auth, 'content-type': 'application/x-www-form-urlencoded' },
        payload: `token=${encodeURIComponent(secret)}&token_type_hint=access_token`,
      });
      assert.equal(form.statusCode, 200, form.body);
      assert.equal(form.headers['cache-control'], 'no-store');
      assert.deepEqual(form.json(), {
        active: true,
        scope: 'apps:read apps:write',
        token_id: token.id,
        name: 'svc',
        iat: Math.floor(token.createdAt / 1000),
        exp: Math.floor(Date.parse(expiresAt) / 1000),
        account_id: OPERATOR_ACCOUNT_ID,
      });
      const json = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens/introspect',
        headers: caller.auth,
        payload: { token: caller.secret },
      });
      assert.equal(json.json<{ active: boolean; exp?: number }>().active, true);
      assert.ok(!('exp' in json.json<object>()), 'no exp for a token that never expires');
      await app.infracat.tokens.service.delete(OPERATOR_ACCOUNT_ID, token.id, null, TEST_CONTEXT);
      for (const presented of [secret, 'junk', generateSecret('icat'), '']) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens/introspect',
          headers: caller.auth,
          payload: { token: presented },
        });
        assert.equal(res.statusCode, 200);
        assert.equal(res.body, '{"active":false}');
      }
    });

    it('introspection needs api-tokens:read and a token field', async (t) => {
      const { app } = await setup(t);
      const other = await mintToken(app, ['apps:read']);
      assert.equal(
        (await app.inject({ method: 'POST', url: '/api/v1/api-tokens/introspect', payload: { token: other.secret } }))
          .statusCode,
        401,
      );
      assert.equal(
        (
          await app.inject({
            method: 'POST',
            url: '/api/v1/api-tokens/introspect',
            headers: other.auth,
            payload: { token: other.secret },
          })
        ).statusCode,
        403,
      );
      const caller = await mintToken(app, ['api-tokens:write']);
      const missing = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens/introspect',
        headers: caller.auth,
        payload: {},
      });
      assert.equal(missing.statusCode, 422);
    });

    it('a cached check costs no storage round trip', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read']);
      const cache = app.infracat.tokens.cache;
      const headers = { ...tok.auth, 'x-original-uri': '/apps/1', 'x-original-method': 'GET' };
      await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers });
      const misses = cache.misses;
      for (let i = 0; i < 20; i++)
        assert.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/check', headers })).statusCode, 200);
      assert.equal(cache.misses, misses, 'all 20 from the cache');
    });
  });
}
