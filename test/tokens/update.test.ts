// Editing (PATCH /api/v1/api-tokens/{id}, a JSON merge patch), on both backends: rename,
// scope changes within what the caller holds, narrowing enforced at once on this instance
// despite the verification cache, the media types and body rules, and the audit event.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { App } from '../../src/http/types.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertNoSecret } from '../helpers/no-secret.js';

interface View {
  id: string;
  name: string;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
}

for (const backend of backends()) {
  describe(`token editing on ${backend.name}`, () => {
    async function setup(t: TestContext) {
      const db = await backend.fresh(t);
      const built = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '1000000' },
      });
      const admin = await mintToken(built.app, ['api-tokens:write', 'apps:write', 'images:read'], 'admin');
      return { ...built, admin };
    }

    const patch = (app: App, auth: Record<string, string>, id: string, payload: object | string, type?: string) =>
      app.inject({
        method: 'PATCH',
        url: `/api/v1/api-tokens/${id}`,
        headers: { ...auth, ...(type !== undefined ? { 'content-type': type } : {}) },
        payload,
      });

    it('renames: 200 with the token (no secret), name trimmed and checked as at creation', async (t) => {
      const { app, admin } = await setup(t);
      const token = await mintToken(app, ['apps:read'], 'old name');
      const res = await patch(app, admin.auth, token.id, { name: '  new name ' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['cache-control'], 'no-store');
      const body = res.json<View>();
      assert.deepEqual(Object.keys(body).sort(), [
        'allowed_cidrs',
        'created_at',
        'enabled',
        'expires_at',
        'id',
        'last_used_at',
        'last_used_ip',
        'name',
        'not_before',
        'scopes',
      ]);
      assert.equal(body.name, 'new name');
      assert.deepEqual(body.scopes, ['apps:read']);
      assert.ok(!res.body.includes(token.secret));
      const one = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${token.id}`, headers: admin.auth });
      assert.deepEqual(one.json(), body);
      const current = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: token.auth });
      assert.equal(current.json<View>().name, 'new name', 'the secret still works, under its new name');
      for (const name of ['', '   ', 'x'.repeat(101), 'line\nbreak', 'rtl\u202Eoverride', 42, null]) {
        const bad = await patch(app, admin.auth, token.id, { name });
        assert.equal(bad.statusCode, 422, `${JSON.stringify(name)}: ${bad.body}`);
        assert.deepEqual(
          bad.json<{ errors: { pointer: string }[] }>().errors.map((e) => e.pointer),
          ['/name'],
        );
      }
    });

    it('scopes: the whole new list, within what the caller holds; widening and narrowing both', async (t) => {
      const { app, admin } = await setup(t);
      const token = await mintToken(app, ['apps:read']);
      const wider = await patch(app, admin.auth, token.id, { scopes: ['apps:write', 'images:read'] });
      assert.equal(wider.statusCode, 200, wider.body);
      assert.deepEqual(wider.json<View>().scopes, ['apps:write', 'images:read']);
      const check = (scope: string) =>
        app.inject({ method: 'GET', url: `/api/v1/auth/check?scope=${scope}`, headers: token.auth });
      assert.equal((await check('apps:write')).statusCode, 200, 'the widened token works at once');
      const both = await patch(app, admin.auth, token.id, { name: 'reader', scopes: ['images:read'] });
      assert.deepEqual([both.json<View>().name, both.json<View>().scopes], ['reader', ['images:read']]);
      for (const [scopes, pointer] of [
        [[], '/scopes'],
        [['apps:admin'], '/scopes/0'],
        [['apps:read', 'apps:read'], '/scopes/1'],
        [null, '/scopes'],
        ['apps:read', '/scopes'],
      ] as const) {
        const bad = await patch(app, admin.auth, token.id, { scopes });
        assert.equal(bad.statusCode, 422, `${JSON.stringify(scopes)}: ${bad.body}`);
        const problem = bad.json<{ errors: { pointer: string }[] }>();
        assert.ok(
          problem.errors.some((e) => e.pointer === pointer),
          bad.body,
        );
      }
      const unknown = await patch(app, admin.auth, token.id, { scopes: ['billing:read'] });
      assert.ok(unknown.json<{ valid_scopes: string[] }>().valid_scopes.includes('apps:read'), 'lists the valid ones');
      const customerOnly = await patch(app, admin.auth, token.id, { scopes: ['accounts:read'] });
      assert.equal(customerOnly.statusCode, 403, 'the admin does not hold accounts:read');
    });

    it('narrowed scopes are refused at once on this instance, though the token was cached', async (t) => {
      const { app, admin } = await setup(t);
      const token = await mintToken(app, ['api-tokens:read', 'apps:read']);
      const cache = app.infracat.tokens.cache;
      const list = () => app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: token.auth });
      const check = (scope: string) =>
        app.inject({ method: 'GET', url: `/api/v1/auth/check?scope=${scope}`, headers: token.auth });
      assert.equal((await list()).statusCode, 200);
      const hits = cache.hits;
      assert.equal((await list()).statusCode, 200);
      assert.equal((await check('api-tokens:read')).statusCode, 200);
      assert.ok(cache.hits > hits, 'answered from the verification cache');
      const res = await patch(app, admin.auth, token.id, { scopes: ['apps:read'] });
      assert.equal(res.statusCode, 200, res.body);
      const refused = await list();
      assert.equal(refused.statusCode, 403, 'at once');
      assert.deepEqual(refused.json<{ missing_scopes: string[] }>().missing_scopes, ['api-tokens:read']);
      assert.equal((await check('api-tokens:read')).statusCode, 403, 'forward auth too');
      assert.equal((await check('apps:read')).statusCode, 200, 'what it kept still works');
    });

    it('narrowing holds at once for both secrets of a token in a rotation grace period', async (t) => {
      const { app, admin } = await setup(t);
      const token = await mintToken(app, ['api-tokens:read', 'apps:read']);
      const rotated = await app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${token.id}/rotate`,
        headers: admin.auth,
        payload: { grace_period_s: 3600 },
      });
      const secrets = [token.secret, rotated.json<{ token: string }>().token];
      const list = (secret: string) =>
        app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: { authorization: `Bearer ${secret}` } });
      for (const secret of secrets) assert.equal((await list(secret)).statusCode, 200, 'both work, and are cached');
      assert.equal((await patch(app, admin.auth, token.id, { scopes: ['apps:read'] })).statusCode, 200);
      for (const secret of secrets) assert.equal((await list(secret)).statusCode, 403, 'both narrowed at once');
    });

    it('a merge patch as application/merge-patch+json or application/json; {} changes nothing', async (t) => {
      const { app, admin, store } = await setup(t);
      const token = await mintToken(app, ['apps:read'], 'before');
      const renamed = await patch(app, admin.auth, token.id, '{"name":"after"}', 'application/merge-patch+json');
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal(renamed.json<View>().name, 'after');
      const charset = await patch(
        app,
        admin.auth,
        token.id,
        '{"name":"again"}',
        'application/merge-patch+json; charset=utf-8',
      );
      assert.equal(charset.json<View>().name, 'again');
      const events = async () => (await store.audit.list({ targetId: token.id, limit: 100 })).length;
      const before = await events();
      const same = await patch(app, admin.auth, token.id, '{}', 'application/json');
      assert.equal(same.statusCode, 200);
      assert.deepEqual(same.json(), charset.json());
      const unchanged = await patch(app, admin.auth, token.id, { name: 'again', scopes: ['apps:read'] });
      assert.deepEqual(unchanged.json(), charset.json(), 'the same values: no change');
      assert.equal(await events(), before, 'no change, no event');
      const refusals: [string, string, number, string][] = [
        ['{"name": "x"', 'application/merge-patch+json', 400, 'MALFORMED_JSON'],
        ['', 'application/merge-patch+json', 400, 'MALFORMED_JSON'],
        ['{"name":"x"}', 'application/merge-patch+json; charset=latin1', 415, 'UNSUPPORTED_MEDIA_TYPE'],
        ['{"name":"x"}', 'text/plain', 415, 'UNSUPPORTED_MEDIA_TYPE'],
        ['{"__proto__":{"x":1}}', 'application/merge-patch+json', 400, 'BAD_REQUEST'],
        ['{"name":"\\ud800"}', 'application/merge-patch+json', 400, 'MALFORMED_JSON'],
        ['null', 'application/merge-patch+json', 422, 'VALIDATION_FAILED'],
        ['{"expires_at":null}', 'application/merge-patch+json', 422, 'VALIDATION_FAILED'],
        ['{"id":"tok_x"}', 'application/merge-patch+json', 422, 'VALIDATION_FAILED'],
        ['{"token":"x"}', 'application/json', 422, 'VALIDATION_FAILED'],
      ];
      for (const [payload, type, status, code] of refusals) {
        const res = await patch(app, admin.auth, token.id, payload, type);
        assert.equal(res.statusCode, status, `${payload} as ${type}: ${res.body}`);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        assert.equal(res.json<{ code: string }>().code, code, payload);
      }
      const noBody = await app.inject({ method: 'PATCH', url: `/api/v1/api-tokens/${token.id}`, headers: admin.auth });
      assert.equal(noBody.statusCode, 422, 'a PATCH needs its patch');
      // Only this route takes the merge-patch type.
      const post = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...admin.auth, 'content-type': 'application/merge-patch+json' },
        payload: '{"name":"x","scopes":["apps:read"]}',
      });
      assert.equal(post.statusCode, 415);
      const unknown = await patch(app, admin.auth, 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H', { name: 'x' });
      assert.equal(unknown.statusCode, 404);
      assert.equal(unknown.json<{ code: string }>().code, 'NOT_FOUND');
    });

    it('no escalation: 403 granting a scope the caller lacks, or editing a token it could not delete', async (t) => {
      const { app, admin } = await setup(t);
      const limited = await mintToken(app, ['api-tokens:write', 'apps:read'], 'limited');
      const mine = await mintToken(app, ['apps:read'], 'mine');
      const up = await patch(app, limited.auth, mine.id, { scopes: ['apps:read', 'apps:write', 'images:read'] });
      assert.equal(up.statusCode, 403, up.body);
      assert.equal(up.json<{ code: string }>().code, 'INSUFFICIENT_SCOPE');
      assert.deepEqual(up.json<{ missing_scopes: string[] }>().missing_scopes, ['apps:write', 'images:read']);
      const selfUp = await patch(app, limited.auth, limited.id, { scopes: ['api-tokens:write', 'apps:write'] });
      assert.equal(selfUp.statusCode, 403, 'not even itself');
      const wide = await mintToken(app, ['apps:write'], 'wide');
      const rename = await patch(app, limited.auth, wide.id, { name: 'taken over' });
      assert.equal(rename.statusCode, 403, 'a rename of a token it could not delete');
      assert.deepEqual(rename.json<{ missing_scopes: string[] }>().missing_scopes, ['apps:write']);
      assert.match(rename.json<{ detail: string }>().detail, /edit/);
      const narrowOther = await patch(app, limited.auth, wide.id, { scopes: ['apps:read'] });
      assert.equal(narrowOther.statusCode, 403, 'nor narrowing it');
      const reader = await mintToken(app, ['api-tokens:read', 'apps:write']);
      const noWrite = await patch(app, reader.auth, wide.id, { name: 'x' });
      assert.equal(noWrite.statusCode, 403);
      assert.deepEqual(noWrite.json<{ missing_scopes: string[] }>().missing_scopes, ['api-tokens:write']);
      const after = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${wide.id}`, headers: admin.auth });
      assert.deepEqual([after.json<View>().name, after.json<View>().scopes], ['wide', ['apps:write']], 'unchanged');
      // Within what it holds (read under its write), fine; and a token may narrow itself.
      const ok = await patch(app, limited.auth, mine.id, { scopes: ['apps:read', 'api-tokens:read'] });
      assert.equal(ok.statusCode, 200, ok.body);
      const self = await patch(app, limited.auth, limited.id, { scopes: ['apps:read'] });
      assert.equal(self.statusCode, 200, self.body);
      const nowReadOnly = await patch(app, limited.auth, mine.id, { name: 'x' });
      assert.equal(nowReadOnly.statusCode, 403, 'it gave up api-tokens:write, and that holds at once');
    });

    it('writes api_token.updated with what changed, actor, ip, user agent, request id; never a secret', async (t) => {
      const { app, admin, store, logs } = await setup(t);
      const token = await mintToken(app, ['apps:read', 'images:read'], 'audited');
      const res = await app.inject({
        method: 'PATCH',
        url: `/api/v1/api-tokens/${token.id}`,
        headers: {
          ...admin.auth,
          'content-type': 'application/merge-patch+json',
          'user-agent': 'editor/2.0',
          'x-request-id': 'req-patch-1',
        },
        remoteAddress: '198.51.100.23',
        payload: JSON.stringify({ name: 'renamed', scopes: ['apps:read'] }),
      });
      assert.equal(res.statusCode, 200, res.body);
      const events = await store.audit.list({ targetId: token.id, action: 'api_token.updated', limit: 10 });
      assert.equal(events.length, 1);
      const event = events[0]!;
      assert.deepEqual(
        [event.actorType, event.actorId, event.actorName, event.targetName],
        ['api_token', admin.id, 'admin', 'audited'],
      );
      // The id infracat gave the request: a client's own X-Request-Id is not taken (no TRUST_PROXY).
      assert.deepEqual(
        [event.ip, event.userAgent, event.requestId],
        ['198.51.100.23', 'editor/2.0', res.headers['x-request-id']],
      );
      assert.notEqual(event.requestId, 'req-patch-1');
      assert.deepEqual(event.details, {
        changes: {
          name: { from: 'audited', to: 'renamed' },
          scopes: { from: ['apps:read', 'images:read'], to: ['apps:read'] },
        },
      });
      assertNoSecret(JSON.stringify(event), [token.secret, admin.secret]);
      assertNoSecret(logs.text, [token.secret, admin.secret]);
      const refused = await patch(app, admin.auth, token.id, { scopes: ['regions:read'] });
      assert.equal(refused.statusCode, 403);
      assert.equal(
        (await store.audit.list({ targetId: token.id, action: 'api_token.updated', limit: 10 })).length,
        1,
        'a refused edit writes none',
      );
    });
  });
}

describe('PATCH from another origin (CORS_ORIGINS)', () => {
  it('a preflight for PATCH with a merge-patch body is allowed, as for the other methods', async (t) => {
    const origin = 'https://console.example.com';
    const { app } = await build(t, { env: { CORS_ORIGINS: origin } });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    const token = await mintToken(app, ['apps:read']);
    const url = `/api/v1/api-tokens/${token.id}`;
    const pre = await app.inject({
      method: 'OPTIONS',
      url,
      headers: {
        origin,
        'access-control-request-method': 'PATCH',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    assert.equal(pre.statusCode, 204);
    assert.equal(pre.headers['access-control-allow-origin'], origin);
    assert.ok(String(pre.headers['access-control-allow-methods']).split(/,\s*/).includes('PATCH'), 'PATCH allowed');
    const res = await app.inject({
      method: 'PATCH',
      url,
      headers: { ...admin.auth, origin, 'content-type': 'application/merge-patch+json' },
      payload: '{"name":"from the console"}',
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['access-control-allow-origin'], origin);
  });
});
