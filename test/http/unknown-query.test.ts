// An unknown query parameter gets one answer on every GET of the API, on both backends:
// the single-item reads (a token, an account, a catalog entry, the catalog document, the
// scope list) refuse it exactly as the lists do, 400 INVALID_QUERY naming it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends } from '../helpers/backends.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';

interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  errors?: { pointer: string; detail: string }[];
}

for (const backend of backends()) {
  describe(`unknown query parameters on ${backend.name}`, () => {
    it('single-item GETs refuse them as the lists do: 400 INVALID_QUERY naming the parameter', async (t) => {
      const db = await backend.fresh(t);
      const { app } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url } });
      const admin = await mintToken(app, ['api-tokens:write', 'accounts:write', 'apps:read', 'catalog:read'], 'admin');
      const account = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: admin.auth,
        payload: { name: 'Acme' },
      });
      assert.equal(account.statusCode, 201, account.body);
      const accountId = account.json<{ id: string }>().id;
      const minted = await app.inject({
        method: 'POST',
        url: `/api/v1/accounts/${accountId}/api-tokens`,
        headers: admin.auth,
        payload: { name: 'acme ci', scopes: ['apps:read'] },
      });
      assert.equal(minted.statusCode, 201, minted.body);
      const tokenOfAcme = minted.json<{ id: string }>().id;

      const get = (url: string) => app.inject({ method: 'GET', url, headers: admin.auth });
      const single = [
        `/api/v1/api-tokens/${admin.id}`,
        '/api/v1/api-tokens/current',
        `/api/v1/accounts/${accountId}`,
        `/api/v1/accounts/${accountId}/api-tokens/${tokenOfAcme}`,
        '/api/v1/images/ubuntu-24-04',
        '/api/v1/plans/s-1vcpu-1gb',
        '/api/v1/regions/nyc1',
        '/api/v1/catalog',
        '/api/v1/scopes',
      ];
      for (const url of single) assert.equal((await get(url)).statusCode, 200, `${url} exists`);

      // What a list answers, less what names the request itself.
      const shape = (p: Problem) => ({ ...p, instance: undefined, request_id: undefined });
      const listed = await get('/api/v1/api-tokens?colour=red');
      assert.equal(listed.statusCode, 400);
      const expected = shape(listed.json<Problem>());
      assert.equal(expected.code, 'INVALID_QUERY');
      assert.equal(expected.detail, 'invalid query parameter colour');
      assert.deepEqual(expected.errors, [{ pointer: 'querystring:/colour', detail: 'is not a known query parameter' }]);
      for (const list of ['/api/v1/accounts', '/api/v1/images', `/api/v1/accounts/${accountId}/api-tokens`]) {
        const res = await get(`${list}?colour=red`);
        assert.deepEqual([res.statusCode, shape(res.json<Problem>())], [400, expected], list);
      }

      for (const url of single) {
        const res = await get(`${url}?colour=red`);
        assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        assert.deepEqual(shape(res.json<Problem>()), expected, url);
        // HEAD answers as GET does, without the body.
        const head = await app.inject({ method: 'HEAD', url: `${url}?colour=red`, headers: admin.auth });
        assert.equal(head.statusCode, 400, `HEAD ${url}`);
      }
    });
  });
}
