// Rotation and editing on two instances sharing one PostgreSQL database (the multi-instance
// backend): the instance that made the change enforces it at once, the other within
// TOKEN_CACHE_TTL_MS (an entry is trusted for that long from when its read began). Both
// instances run on one injected clock, which also drives their verification caches: the
// bound is crossed by moving the clock, not by sleeping.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { App } from '../../src/http/types.js';
import { build, mintToken } from '../helpers/app.js';
import { postgresBackend } from '../helpers/backends.js';

const TTL_MS = 500;

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

describe('rotation and editing on two PostgreSQL instances', () => {
  it('a rotated-out secret and narrowed scopes: refused by the other instance within TOKEN_CACHE_TTL_MS', async (t) => {
    const backend = postgresBackend(t);
    if (backend === undefined) return;
    const db = await backend.fresh(t);
    const clock = { now: Date.now() };
    const env = { DATABASE_URL: db.url, TOKEN_CACHE_TTL_MS: String(TTL_MS), AUTH_FAILURE_LIMIT: '1000000' };
    const a = await build(t, { store: db.open(), env, now: () => clock.now });
    const b = await build(t, { store: db.open(), env, now: () => clock.now });
    const admin = await mintToken(a.app, ['api-tokens:write', 'apps:read']);
    const token = await mintToken(a.app, ['api-tokens:read', 'apps:read'], 'rotated');
    const list = (app: App, secret: string) =>
      app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: bearer(secret) });
    const use = async (app: App, secret: string) => (await list(app, secret)).statusCode;
    const rotate = async (grace: number) => {
      const res = await a.app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${token.id}/rotate`,
        headers: admin.auth,
        payload: { grace_period_s: grace },
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ token: string }>().token;
    };
    const settle = () => {
      clock.now += TTL_MS + 1;
    };

    for (const app of [a.app, b.app]) assert.equal(await use(app, token.secret), 200, 'works, and is cached');

    // Grace 0 on A: A refuses the old secret at once, B within the bound; the new one works everywhere at once.
    const second = await rotate(0);
    assert.equal(await use(a.app, token.secret), 401, 'refused at once where rotated');
    assert.equal(await use(b.app, second), 200, 'the new secret works on the other instance at once');
    settle();
    assert.equal(await use(b.app, token.secret), 401, 'refused by the other instance within TOKEN_CACHE_TTL_MS');

    // A grace period: the old secret works on both until it ends, then is refused by both within the bound.
    const third = await rotate(60);
    const graceEnds = clock.now + 60_000;
    for (const app of [a.app, b.app]) {
      assert.equal(await use(app, second), 200, 'in its grace period');
      assert.equal(await use(app, third), 200);
    }
    clock.now = graceEnds;
    assert.equal(await use(a.app, second), 401, 'refused at the end of the grace period');
    settle();
    assert.equal(await use(b.app, second), 401, 'and by the other instance within the bound');
    assert.equal(await use(b.app, third), 200);

    // Narrowing on A: A refuses the removed scope at once, B within the bound.
    assert.equal(await use(b.app, third), 200, 'cached on B with api-tokens:read');
    const patched = await a.app.inject({
      method: 'PATCH',
      url: `/api/v1/api-tokens/${token.id}`,
      headers: admin.auth,
      payload: { scopes: ['apps:read'] },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(await use(a.app, third), 403, 'narrowed at once where changed');
    settle();
    const onB = await list(b.app, third);
    assert.equal(onB.statusCode, 403, 'narrowed on the other instance within the bound');
    assert.deepEqual(onB.json<{ missing_scopes: string[] }>().missing_scopes, ['api-tokens:read']);
    const check = await b.app.inject({
      method: 'GET',
      url: '/api/v1/auth/check?scope=apps:read',
      headers: bearer(third),
    });
    assert.equal(check.statusCode, 200, 'what it kept still works there');
  });
});
