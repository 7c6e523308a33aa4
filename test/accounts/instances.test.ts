// A suspended or deleted account on several instances: the instance that made the
// change refuses the account's tokens at once, another instance within the revocation
// bound (TOKEN_CACHE_TTL_MS: an entry is trusted for that long from when its read
// began), on PostgreSQL, the multi-instance backend. And the account's status costs the
// cached check no storage statement: it travels with the cached token.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { App } from '../../src/http/types.js';
import { build, changeFeedSettled, mintToken } from '../helpers/app.js';
import { backends, postgresBackend } from '../helpers/backends.js';

const TTL_MS = 500;

async function customerToken(app: App, operatorAuth: Record<string, string>) {
  const account = (
    await app.inject({ method: 'POST', url: '/api/v1/accounts', headers: operatorAuth, payload: { name: 'Acme' } })
  ).json<{ id: string }>();
  const res = await app.inject({
    method: 'POST',
    url: `/api/v1/accounts/${account.id}/api-tokens`,
    headers: operatorAuth,
    payload: { name: 'ci', scopes: ['api-tokens:read', 'apps:read'] },
  });
  assert.equal(res.statusCode, 201, res.body);
  return { accountId: account.id, auth: { authorization: `Bearer ${res.json<{ token: string }>().token}` } };
}

const settle = () => new Promise((r) => setTimeout(r, TTL_MS + 150));

describe('accounts on two PostgreSQL instances', () => {
  it('suspend, resume and delete on one instance are seen by the other within TOKEN_CACHE_TTL_MS', async (t) => {
    const backend = postgresBackend(t);
    if (backend === undefined) return;
    const db = await backend.fresh(t);
    const env = { DATABASE_URL: db.url, TOKEN_CACHE_TTL_MS: String(TTL_MS), AUTH_FAILURE_LIMIT: '1000000' };
    const a = await build(t, { store: db.open(), env });
    const b = await build(t, { store: db.open(), env });
    const operator = await mintToken(a.app, ['accounts:write', 'api-tokens:write', 'apps:read']);
    const c = await customerToken(a.app, operator.auth);
    const probes = (app: App) => [
      () => app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: c.auth }),
      () => app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: c.auth }),
      () => app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read', headers: c.auth }),
    ];
    for (const app of [a.app, b.app])
      for (const probe of probes(app)) assert.equal((await probe()).statusCode, 200, 'works (and is cached)');
    const patch = (status: string) =>
      a.app.inject({
        method: 'PATCH',
        url: `/api/v1/accounts/${c.accountId}`,
        headers: operator.auth,
        payload: { status },
      });

    assert.equal((await patch('suspended')).statusCode, 200);
    for (const probe of probes(a.app)) {
      const res = await probe();
      assert.equal(res.statusCode, 401, 'refused at once where suspended');
      assert.match(res.json<{ detail: string }>().detail, /account is suspended/);
    }
    await settle();
    for (const probe of probes(b.app)) {
      const res = await probe();
      assert.equal(res.statusCode, 401, 'refused by the other instance after the bound');
      assert.match(res.json<{ detail: string }>().detail, /account is suspended/);
    }

    assert.equal((await patch('active')).statusCode, 200);
    for (const probe of probes(a.app)) assert.equal((await probe()).statusCode, 200, 'restored at once');
    await settle();
    for (const probe of probes(b.app)) assert.equal((await probe()).statusCode, 200, 'restored on the other');

    const del = await a.app.inject({
      method: 'DELETE',
      url: `/api/v1/accounts/${c.accountId}`,
      headers: operator.auth,
    });
    assert.equal(del.statusCode, 204);
    for (const probe of probes(a.app)) assert.equal((await probe()).statusCode, 401, 'deleted: refused at once');
    await settle();
    for (const probe of probes(b.app)) {
      const res = await probe();
      assert.equal(res.statusCode, 401, 'deleted: refused by the other instance after the bound');
      assert.match(res.json<{ detail: string }>().detail, /unknown or deleted/);
    }
  });
});

for (const backend of backends()) {
  describe(`the account's status rides with the cached token (${backend.name})`, () => {
    it('cached checks of a customer token send no statement to storage', async (t) => {
      const db = await backend.fresh(t);
      const { app, store } = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000', INSTANCE_HEARTBEAT_MS: '60000' },
      });
      await changeFeedSettled(app);
      const operator = await mintToken(app, ['accounts:write', 'api-tokens:write', 'apps:read']);
      const c = await customerToken(app, operator.auth);
      const check = () => app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read', headers: c.auth });
      assert.equal((await check()).statusCode, 200, 'the first check reads the token and its account');
      const before = store.stats.queries;
      for (let i = 0; i < 200; i++) assert.equal((await check()).statusCode, 200);
      assert.equal(store.stats.queries - before, 0);
    });
  });
}
