// The account endpoints and tenancy of the token endpoints, on both backends: happy
// paths, input rules, the operator account's protections, and the security cases (no
// account sees, changes or learns of another account's tokens; a suspended or deleted
// account's tokens are refused everywhere at once on this instance).
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { ACCOUNT_ID_PATTERN, OPERATOR_ACCOUNT_ID } from '../../src/accounts/ids.js';
import type { App } from '../../src/http/types.js';
import { backends } from '../helpers/backends.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const OPERATOR_SCOPES = ['accounts:write', 'api-tokens:write', 'apps:write', 'images:read'];

interface AccountBody {
  id: string;
  name: string;
  external_id: string | null;
  status: string;
  created_at: string;
}

for (const backend of backends()) {
  describe(`accounts on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}) {
      const db = await backend.fresh(t);
      const built = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...env } });
      const operator = await mintToken(built.app, OPERATOR_SCOPES, 'operator');
      return { ...built, db, operator };
    }

    async function createAccount(app: App, auth: Record<string, string>, payload: object): Promise<AccountBody> {
      const res = await app.inject({ method: 'POST', url: '/api/v1/accounts', headers: auth, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<AccountBody>();
    }

    /** A customer account with a token holding the given scopes, minted through the API. */
    async function customer(app: App, operatorAuth: Record<string, string>, scopes: string[], name = 'Acme') {
      const account = await createAccount(app, operatorAuth, { name });
      const res = await app.inject({
        method: 'POST',
        url: `/api/v1/accounts/${account.id}/api-tokens`,
        headers: operatorAuth,
        payload: { name: `${name} admin`, scopes },
      });
      assert.equal(res.statusCode, 201, res.body);
      const created = res.json<{ id: string; token: string }>();
      return { account, id: created.id, auth: { authorization: `Bearer ${created.token}` } };
    }

    it('POST /accounts: 201, Location, exactly the account fields; GET one and the list agree', async (t) => {
      const { app, operator } = await setup(t);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: operator.auth,
        payload: { name: '  Acme Corp ', external_id: 'cus_8412' },
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.headers['cache-control'], 'no-store');
      const body = res.json<AccountBody>();
      assert.deepEqual(Object.keys(body), ['id', 'name', 'external_id', 'status', 'rate_limit', 'created_at']);
      assert.match(body.id, ACCOUNT_ID_PATTERN);
      assert.equal(res.headers.location, `/api/v1/accounts/${body.id}`);
      assert.equal(body.name, 'Acme Corp');
      assert.equal(body.external_id, 'cus_8412');
      assert.equal(body.status, 'active');
      assert.match(body.created_at, ISO);
      const one = await app.inject({ method: 'GET', url: `/api/v1/accounts/${body.id}`, headers: operator.auth });
      assert.deepEqual(one.json(), body);
      const none = await createAccount(app, operator.auth, { name: 'No external id' });
      assert.equal(none.external_id, null);
      const list = await app.inject({ method: 'GET', url: '/api/v1/accounts', headers: operator.auth });
      assert.deepEqual(
        list.json<AccountBody[]>().map((a) => a.id),
        [OPERATOR_ACCOUNT_ID, body.id, none.id],
        'oldest first, the operator account first',
      );
    });

    it('GET /accounts filters by status and external_id; bad filters are 400 INVALID_QUERY', async (t) => {
      const { app, operator } = await setup(t);
      const a = await createAccount(app, operator.auth, { name: 'A', external_id: 'ext-a' });
      const b = await createAccount(app, operator.auth, { name: 'B', external_id: 'ext-b' });
      const patch = await app.inject({
        method: 'PATCH',
        url: `/api/v1/accounts/${b.id}`,
        headers: operator.auth,
        payload: { status: 'suspended' },
      });
      assert.equal(patch.statusCode, 200, patch.body);
      const ids = async (query: string) =>
        (await app.inject({ method: 'GET', url: `/api/v1/accounts${query}`, headers: operator.auth }))
          .json<AccountBody[]>()
          .map((x) => x.id);
      assert.deepEqual(await ids('?status=suspended'), [b.id]);
      assert.deepEqual(await ids('?status=active'), [OPERATOR_ACCOUNT_ID, a.id]);
      assert.deepEqual(await ids('?external_id=ext-a'), [a.id]);
      assert.deepEqual(await ids('?external_id=ext-a&status=suspended'), []);
      assert.deepEqual(await ids('?external_id=nobody'), []);
      for (const query of ['?status=deleted', '?status=active&status=suspended', '?sort=name', '?external_id=%00']) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/accounts${query}`, headers: operator.auth });
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        assert.equal(res.json<{ code: string }>().code, 'INVALID_QUERY');
      }
    });

    it('POST /accounts: a duplicate external_id is 409 CONFLICT; bad names and external_ids are 422', async (t) => {
      const { app, operator } = await setup(t);
      await createAccount(app, operator.auth, { name: 'First', external_id: 'same' });
      const dup = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: operator.auth,
        payload: { name: 'Second', external_id: 'same' },
      });
      assert.equal(dup.statusCode, 409);
      assert.equal(dup.json<{ code: string }>().code, 'CONFLICT');
      const bad: [object, string][] = [
        [{}, '/name'],
        [{ name: '' }, '/name'],
        [{ name: 'x\u202e' }, '/name'],
        [{ name: 'ok', external_id: '' }, '/external_id'],
        [{ name: 'ok', external_id: ' padded' }, '/external_id'],
        [{ name: 'ok', external_id: 'tab\there' }, '/external_id'],
        [{ name: 'ok', external_id: 'zero\u200bwidth' }, '/external_id'],
        [{ name: 'ok', external_id: 'x'.repeat(201) }, '/external_id'],
        [{ name: 'ok', external_id: 'icat_4lTzT0rbd6mWl2Ka7dM1yQ5o8kRxJc3H0000aB' }, '/external_id'],
        [{ name: 'ok', status: 'suspended' }, '/status'],
        [{ name: 'ok', external_id: 5 }, '/external_id'],
      ];
      for (const [payload, pointer] of bad) {
        const res = await app.inject({ method: 'POST', url: '/api/v1/accounts', headers: operator.auth, payload });
        assert.equal(res.statusCode, 422, `${JSON.stringify(payload)}: ${res.body}`);
        const problem = res.json<{ code: string; errors: { pointer: string }[] }>();
        assert.equal(problem.code, 'VALIDATION_FAILED');
        assert.ok(
          problem.errors.some((e) => e.pointer === pointer),
          `${JSON.stringify(payload)}: ${res.body}`,
        );
        assert.ok(!res.body.includes('4lTzT0rbd6mWl2Ka7dM1yQ5o8kRxJc3H'), 'no secret echoed');
      }
      const ok = await createAccount(app, operator.auth, { name: 'Unicode', external_id: 'Zürich – Kunde #7 ✓' });
      assert.equal(ok.external_id, 'Zürich – Kunde #7 ✓');
    });

    it('PATCH: merge patch in application/json or application/merge-patch+json; {} changes nothing', async (t) => {
      const { app, operator } = await setup(t);
      const a = await createAccount(app, operator.auth, { name: 'Before', external_id: 'e1' });
      const patch = (payload: string, type = 'application/merge-patch+json') =>
        app.inject({
          method: 'PATCH',
          url: `/api/v1/accounts/${a.id}`,
          headers: { ...operator.auth, 'content-type': type },
          payload,
        });
      const renamed = await patch('{"name":"After"}');
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.deepEqual(renamed.json(), { ...a, name: 'After' });
      const same = await patch('{}', 'application/json');
      assert.deepEqual(same.json(), { ...a, name: 'After' });
      const suspended = await patch('{"status":"suspended"}', 'application/merge-patch+json; charset=utf-8');
      assert.equal(suspended.json<AccountBody>().status, 'suspended');
      for (const [body, pointer] of [
        ['{"name":null}', '/name'],
        ['{"status":null}', '/status'],
        ['{"status":"deleted"}', '/status'],
        ['{"external_id":"new"}', '/external_id'],
        ['{"id":"acc_x"}', '/id'],
      ] as const) {
        const res = await patch(body);
        assert.equal(res.statusCode, 422, `${body}: ${res.body}`);
        assert.ok(
          res.json<{ errors: { pointer: string }[] }>().errors.some((e) => e.pointer === pointer),
          res.body,
        );
      }
      assert.equal((await patch('{"name": "x"', 'application/merge-patch+json')).statusCode, 400);
      assert.equal((await patch('{"name":"x"}', 'application/merge-patch+json; charset=latin1')).statusCode, 415);
      assert.equal((await patch('{"name":"x"}', 'text/plain')).statusCode, 415);
      const bad = await app.inject({
        method: 'PATCH',
        url: `/api/v1/accounts/${a.id}`,
        headers: { ...operator.auth, 'content-type': 'application/merge-patch+json' },
        payload: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
      });
      assert.equal(bad.statusCode, 400, 'bytes that are not UTF-8');
      // Only this route takes the merge-patch type.
      const post = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: { ...operator.auth, 'content-type': 'application/merge-patch+json' },
        payload: '{"name":"x"}',
      });
      assert.equal(post.statusCode, 415);
      const unknown = await app.inject({
        method: 'PATCH',
        url: '/api/v1/accounts/acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H',
        headers: operator.auth,
        payload: { name: 'x' },
      });
      assert.equal(unknown.statusCode, 404);
    });

    it('the operator account can be renamed but neither suspended nor deleted (409 OPERATOR_ACCOUNT)', async (t) => {
      const { app, operator } = await setup(t);
      const url = `/api/v1/accounts/${OPERATOR_ACCOUNT_ID}`;
      const suspend = await app.inject({
        method: 'PATCH',
        url,
        headers: operator.auth,
        payload: { status: 'suspended' },
      });
      assert.equal(suspend.statusCode, 409);
      assert.equal(suspend.json<{ code: string }>().code, 'OPERATOR_ACCOUNT');
      const del = await app.inject({ method: 'DELETE', url, headers: operator.auth });
      assert.equal(del.statusCode, 409);
      assert.equal(del.json<{ code: string }>().code, 'OPERATOR_ACCOUNT');
      const rename = await app.inject({ method: 'PATCH', url, headers: operator.auth, payload: { name: 'Platform' } });
      assert.equal(rename.json<AccountBody>().name, 'Platform');
      const current = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: operator.auth });
      assert.equal(current.statusCode, 200, 'the operator token still works');
    });

    it('accounts:* need the scope, and only operator-account tokens get through', async (t) => {
      const { app, operator } = await setup(t);
      const reader = await mintToken(app, ['accounts:read']);
      const plain = await mintToken(app, ['api-tokens:write']);
      const write = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: reader.auth,
        payload: { name: 'x' },
      });
      assert.equal(write.statusCode, 403);
      assert.deepEqual(write.json<{ missing_scopes: string[] }>().missing_scopes, ['accounts:write']);
      const list = await app.inject({ method: 'GET', url: '/api/v1/accounts', headers: plain.auth });
      assert.equal(list.statusCode, 403);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/accounts' })).statusCode, 401);
      const c = await customer(app, operator.auth, ['api-tokens:write', 'apps:read']);
      for (const [method, url] of [
        ['GET', '/api/v1/accounts'],
        ['GET', `/api/v1/accounts/${c.account.id}`],
        ['GET', `/api/v1/accounts/${c.account.id}/api-tokens`],
        ['DELETE', `/api/v1/accounts/${c.account.id}`],
      ] as const) {
        const res = await app.inject({ method, url, headers: c.auth });
        assert.equal(res.statusCode, 403, `${method} ${url}`);
        // Told why, not sent after a scope no token of its account can hold.
        const problem = res.json<{ code: string; detail: string; missing_scopes?: string[] }>();
        assert.equal(problem.code, 'INSUFFICIENT_SCOPE');
        assert.match(problem.detail, /only tokens of the operator account/);
        assert.doesNotMatch(problem.detail, /needs the scope/);
        assert.equal(problem.missing_scopes, undefined);
        assert.match(String(res.headers['www-authenticate']), /error="insufficient_scope"/);
      }
    });

    it("a customer's 422 for an unknown scope lists only the scopes its account's tokens may hold", async (t) => {
      const { app, operator } = await setup(t);
      const c = await customer(app, operator.auth, ['api-tokens:write', 'apps:read']);
      const operatorOnly = ['accounts:read', 'accounts:write', 'catalog:write'];
      const valid = async (url: string, auth: Record<string, string>, method: 'POST' | 'PATCH' = 'POST') => {
        const res = await app.inject({ method, url, headers: auth, payload: { name: 'x', scopes: ['apps:admin'] } });
        assert.equal(res.statusCode, 422, res.body);
        return res.json<{ valid_scopes: string[] }>().valid_scopes;
      };
      for (const scopes of [
        await valid('/api/v1/api-tokens', c.auth),
        await valid(`/api/v1/api-tokens/${c.id}`, c.auth, 'PATCH'),
        // The operator minting into the customer's account: what that account's tokens may hold.
        await valid(`/api/v1/accounts/${c.account.id}/api-tokens`, operator.auth),
      ]) {
        assert.ok(scopes.includes('apps:read') && scopes.includes('api-tokens:write'));
        for (const s of operatorOnly) assert.ok(!scopes.includes(s), s);
      }
      const own = await valid('/api/v1/api-tokens', operator.auth);
      for (const s of operatorOnly) assert.ok(own.includes(s), `the operator account's: ${s}`);
    });

    it('accounts:* scopes cannot be minted into a customer account (422 naming the scope)', async (t) => {
      const { app, operator } = await setup(t);
      const full = await mintToken(app, [...OPERATOR_SCOPES, 'accounts:read']);
      const acc = await createAccount(app, operator.auth, { name: 'Acme' });
      const res = await app.inject({
        method: 'POST',
        url: `/api/v1/accounts/${acc.id}/api-tokens`,
        headers: full.auth,
        payload: { name: 'sneaky', scopes: ['apps:read', 'accounts:read', 'accounts:write'] },
      });
      assert.equal(res.statusCode, 422, res.body);
      const errors = res.json<{ errors: { pointer: string; detail: string }[] }>().errors;
      assert.deepEqual(
        errors.map((e) => e.pointer),
        ['/scopes/1', '/scopes/2'],
      );
      assert.match(errors[0]!.detail, /accounts:read.*operator account/);
      const none = await app.inject({
        method: 'GET',
        url: `/api/v1/accounts/${acc.id}/api-tokens`,
        headers: operator.auth,
      });
      assert.deepEqual(none.json(), [], 'nothing stored');
      // A customer token with api-tokens:write cannot mint them either.
      const c = await customer(app, operator.auth, ['api-tokens:write', 'apps:read']);
      const own = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: c.auth,
        payload: { name: 'x', scopes: ['accounts:write'] },
      });
      assert.equal(own.statusCode, 422);
      // In the operator account they can be minted (by a token holding them).
      const op = await app.inject({
        method: 'POST',
        url: `/api/v1/accounts/${OPERATOR_ACCOUNT_ID}/api-tokens`,
        headers: full.auth,
        payload: { name: 'ops', scopes: ['accounts:read'] },
      });
      assert.equal(op.statusCode, 201, op.body);
    });

    it('minting into an account: no escalation, never outliving the creator, 404 for an unknown account', async (t) => {
      const { app, operator } = await setup(t);
      const acc = await createAccount(app, operator.auth, { name: 'Acme' });
      const url = `/api/v1/accounts/${acc.id}/api-tokens`;
      const escalate = await app.inject({
        method: 'POST',
        url,
        headers: operator.auth,
        payload: { name: 'x', scopes: ['catalog:read'] },
      });
      assert.equal(escalate.statusCode, 403);
      assert.deepEqual(escalate.json<{ missing_scopes: string[] }>().missing_scopes, ['catalog:read']);
      const expiring = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: operator.auth,
        payload: {
          name: 'short',
          scopes: ['accounts:write', 'apps:read'],
          expires_at: new Date(Date.now() + 60_000).toISOString(),
        },
      });
      assert.equal(expiring.statusCode, 201, expiring.body);
      const shortAuth = { authorization: `Bearer ${expiring.json<{ token: string }>().token}` };
      const outlive = await app.inject({
        method: 'POST',
        url,
        headers: shortAuth,
        payload: { name: 'x', scopes: ['apps:read'], expires_at: null },
      });
      assert.equal(outlive.statusCode, 422);
      const created = await app.inject({
        method: 'POST',
        url,
        headers: shortAuth,
        payload: { name: 'x', scopes: ['apps:read'] },
      });
      assert.equal(created.statusCode, 201);
      const body = created.json<{ id: string; expires_at: string }>();
      assert.equal(created.headers.location, `${url}/${body.id}`);
      assert.equal(body.expires_at, expiring.json<{ expires_at: string }>().expires_at);
      const unknown = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts/acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H/api-tokens',
        headers: operator.auth,
        payload: { name: 'x', scopes: ['apps:read'] },
      });
      assert.equal(unknown.statusCode, 404);
      for (const method of ['GET', 'DELETE'] as const) {
        const res = await app.inject({
          method,
          url: `/api/v1/accounts/acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H/api-tokens${method === 'DELETE' ? `/${body.id}` : ''}`,
          headers: operator.auth,
        });
        assert.equal(res.statusCode, 404, method);
      }
    });

    it('TOKEN_MAX_LIVE applies per account', async (t) => {
      const { app, operator } = await setup(t, { TOKEN_MAX_LIVE: '2' });
      const a = await createAccount(app, operator.auth, { name: 'A' });
      const b = await createAccount(app, operator.auth, { name: 'B' });
      const mint = (id: string) =>
        app.inject({
          method: 'POST',
          url: `/api/v1/accounts/${id}/api-tokens`,
          headers: operator.auth,
          payload: { name: 'x', scopes: ['apps:read'] },
        });
      assert.equal((await mint(a.id)).statusCode, 201);
      assert.equal((await mint(a.id)).statusCode, 201);
      const third = await mint(a.id);
      assert.equal(third.statusCode, 409);
      assert.equal(third.json<{ code: string }>().code, 'TOKEN_LIMIT_REACHED');
      assert.equal((await mint(b.id)).statusCode, 201, 'another account has its own cap');
    });

    it("tenancy: another account's token id is 404 exactly like an unknown one, for GET and DELETE", async (t) => {
      const { app, operator } = await setup(t);
      const a = await customer(app, operator.auth, ['api-tokens:write', 'apps:write'], 'A');
      const b = await customer(app, operator.auth, ['api-tokens:write', 'apps:write'], 'B');
      const strip = (body: string) => {
        const p = JSON.parse(body) as Record<string, unknown>;
        delete p.request_id;
        return JSON.stringify({ ...p, detail: String(p.detail).replace(/tok_\w+/, 'ID'), instance: '' });
      };
      const unknownId = 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H';
      for (const method of ['GET', 'DELETE'] as const) {
        const theirs = await app.inject({ method, url: `/api/v1/api-tokens/${b.id}`, headers: a.auth });
        const nobody = await app.inject({ method, url: `/api/v1/api-tokens/${unknownId}`, headers: a.auth });
        assert.equal(theirs.statusCode, 404, method);
        assert.equal(strip(theirs.body), strip(nobody.body), `${method}: the same answer`);
        assert.deepEqual(Object.keys(theirs.headers).sort(), Object.keys(nobody.headers).sort());
      }
      const bStill = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: b.auth });
      assert.equal(bStill.statusCode, 200, 'B was not deleted');
      assert.equal(bStill.json<{ account_id: string }>().account_id, b.account.id);
      const listA = await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: a.auth });
      assert.deepEqual(
        listA.json<{ id: string }[]>().map((x) => x.id),
        [a.id],
      );
      const opList = await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: operator.auth });
      assert.ok(
        !opList.json<{ id: string }[]>().some((x) => x.id === a.id || x.id === b.id),
        "the operator's own list is its account's",
      );
      const viaAccount = await app.inject({
        method: 'GET',
        url: `/api/v1/accounts/${a.account.id}/api-tokens`,
        headers: operator.auth,
      });
      assert.deepEqual(
        viaAccount.json<{ id: string }[]>().map((x) => x.id),
        [a.id],
      );
      // The account-scoped routes: another account's token is 404 there too.
      const cross = await app.inject({
        method: 'DELETE',
        url: `/api/v1/accounts/${a.account.id}/api-tokens/${b.id}`,
        headers: operator.auth,
      });
      assert.equal(cross.statusCode, 404);
      const own = await app.inject({
        method: 'GET',
        url: `/api/v1/accounts/${a.account.id}/api-tokens/${a.id}`,
        headers: operator.auth,
      });
      assert.equal(own.statusCode, 200);
      const del = await app.inject({
        method: 'DELETE',
        url: `/api/v1/accounts/${a.account.id}/api-tokens/${a.id}`,
        headers: operator.auth,
      });
      assert.equal(del.statusCode, 204);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: a.auth })).statusCode,
        401,
      );
    });

    it("tenancy: rotate and PATCH of another account's token are 404 exactly like an unknown id", async (t) => {
      const { app, operator } = await setup(t);
      const a = await customer(app, operator.auth, ['api-tokens:write', 'apps:write'], 'A');
      const b = await customer(app, operator.auth, ['api-tokens:write', 'apps:write'], 'B');
      const strip = (body: string) => {
        const p = JSON.parse(body) as Record<string, unknown>;
        delete p.request_id;
        return JSON.stringify({ ...p, detail: String(p.detail).replace(/tok_\w+/, 'ID'), instance: '' });
      };
      const unknownId = 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H';
      const calls = [
        { method: 'POST', suffix: '/rotate', payload: { grace_period_s: 60 } },
        { method: 'POST', suffix: '/rotate', payload: undefined },
        { method: 'PATCH', suffix: '', payload: { name: 'mine now' } },
        // Scopes the caller lacks: still 404, never a 403 that would confirm the id.
        { method: 'PATCH', suffix: '', payload: { scopes: ['catalog:read'] } },
      ] as const;
      const send = (call: (typeof calls)[number], base: string, id: string, auth: Record<string, string>) =>
        app.inject({
          method: call.method,
          url: `${base}/${id}${call.suffix}`,
          headers: auth,
          ...(call.payload !== undefined ? { payload: call.payload } : {}),
        });
      for (const call of calls) {
        const what = `${call.method} ${call.suffix} ${JSON.stringify(call.payload)}`;
        const theirs = await send(call, '/api/v1/api-tokens', b.id, a.auth);
        const nobody = await send(call, '/api/v1/api-tokens', unknownId, a.auth);
        assert.equal(theirs.statusCode, 404, what);
        assert.equal(strip(theirs.body), strip(nobody.body), `${what}: the same answer`);
        assert.deepEqual(Object.keys(theirs.headers).sort(), Object.keys(nobody.headers).sort());
        // The account-scoped routes: another account's token is 404 there too.
        const cross = await send(call, `/api/v1/accounts/${a.account.id}/api-tokens`, b.id, operator.auth);
        const crossNobody = await send(call, `/api/v1/accounts/${a.account.id}/api-tokens`, unknownId, operator.auth);
        assert.equal(cross.statusCode, 404, what);
        assert.equal(strip(cross.body), strip(crossNobody.body), `${what}: the same answer`);
        const noAccount = await send(
          call,
          '/api/v1/accounts/acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H/api-tokens',
          b.id,
          operator.auth,
        );
        assert.equal(noAccount.statusCode, 404, `${what}: an unknown account`);
      }
      const bNow = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: b.auth });
      assert.equal(bNow.statusCode, 200, "B's secret was not rotated");
      assert.equal(bNow.json<{ name: string }>().name, 'B admin', 'nor renamed');
    });

    it("the operator rotates and edits an account's tokens (accounts:write); no accounts:* there", async (t) => {
      const { app, operator, store } = await setup(t);
      const c = await customer(app, operator.auth, ['api-tokens:write', 'apps:read']);
      const base = `/api/v1/accounts/${c.account.id}/api-tokens/${c.id}`;
      const sent = Date.now();
      const rotated = await app.inject({
        method: 'POST',
        url: `${base}/rotate`,
        headers: operator.auth,
        payload: { grace_period_s: 300 },
      });
      const answered = Date.now();
      assert.equal(rotated.statusCode, 200, rotated.body);
      assert.equal(rotated.headers['cache-control'], 'no-store');
      const body = rotated.json<{ id: string; token: string; scopes: string[]; previous_secret_expires_at: string }>();
      assert.equal(body.id, c.id);
      // The grace period's end, 300 s after the rotation (made between sent and answered).
      const graceEnds = Date.parse(body.previous_secret_expires_at);
      assert.match(body.previous_secret_expires_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.ok(graceEnds >= sent + 300_000 && graceEnds <= answered + 300_000, body.previous_secret_expires_at);
      const fresh = { authorization: `Bearer ${body.token}` };
      const current = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: fresh });
      assert.equal(current.json<{ account_id: string }>().account_id, c.account.id);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: c.auth })).statusCode,
        200,
        'the old secret, in its grace period',
      );
      const noBody = await app.inject({ method: 'POST', url: `${base}/rotate`, headers: operator.auth });
      assert.equal(noBody.statusCode, 200, 'no body: {} (grace 0)');
      for (const auth of [c.auth, fresh]) {
        assert.equal(
          (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: auth })).statusCode,
          401,
          'both earlier secrets are refused at once',
        );
      }
      const customerAuth = { authorization: `Bearer ${noBody.json<{ token: string }>().token}` };
      const patched = await app.inject({
        method: 'PATCH',
        url: base,
        headers: { ...operator.auth, 'content-type': 'application/merge-patch+json' },
        payload: '{"name":"renamed by the operator","scopes":["apps:read"]}',
      });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.deepEqual(patched.json<{ name: string; scopes: string[] }>().scopes, ['apps:read']);
      const narrowed = await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: customerAuth });
      assert.equal(narrowed.statusCode, 403, 'the narrowing holds at once');
      for (const [payload, status] of [
        [{ scopes: ['apps:read', 'accounts:read'] }, 422],
        [{ name: null }, 422],
        [{ status: 'suspended' }, 422],
        [{ scopes: ['catalog:read'] }, 403],
      ] as const) {
        const res = await app.inject({ method: 'PATCH', url: base, headers: operator.auth, payload });
        assert.equal(res.statusCode, status, `${JSON.stringify(payload)}: ${res.body}`);
      }
      // accounts:write is what these routes need; accounts:read is not enough.
      const reader = await mintToken(app, ['accounts:read', 'api-tokens:write', 'apps:read']);
      for (const [method, url, payload] of [
        ['POST', `${base}/rotate`, {}],
        ['PATCH', base, { name: 'x' }],
      ] as const) {
        const res = await app.inject({ method, url, headers: reader.auth, payload });
        assert.equal(res.statusCode, 403, `${method} ${url}`);
        assert.deepEqual(res.json<{ missing_scopes: string[] }>().missing_scopes, ['accounts:write']);
        // A customer's own token is refused the operator plane whatever it holds.
        const own = await app.inject({ method, url, headers: customerAuth, payload });
        assert.equal(own.statusCode, 403);
      }
      const actions = (await store.audit.list({ targetId: c.id, limit: 100 })).map((e) => e.action);
      assert.deepEqual(actions.slice(0, 3), ['api_token.updated', 'api_token.rotated', 'api_token.rotated']);
      const events = await store.audit.list({ targetId: c.id, limit: 100 });
      assert.ok(events.slice(0, 3).every((e) => e.accountId === c.account.id && e.actorId === operator.id));
    });

    it("suspend refuses the account's tokens everywhere at once (401 naming it); resume restores them", async (t) => {
      const { app, operator } = await setup(t);
      const c = await customer(app, operator.auth, ['api-tokens:read', 'apps:read']);
      const introspector = await mintToken(app, ['api-tokens:read']);
      const secret = c.auth.authorization.slice('Bearer '.length);
      const checks = {
        current: () => app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: c.auth }),
        forward: () => app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read', headers: c.auth }),
        introspect: () =>
          app.inject({
            method: 'POST',
            url: '/api/v1/api-tokens/introspect',
            headers: introspector.auth,
            payload: { token: secret },
          }),
      };
      assert.equal((await checks.current()).statusCode, 200, 'cached now');
      assert.equal((await checks.forward()).statusCode, 200);
      const setStatus = (status: string) =>
        app.inject({
          method: 'PATCH',
          url: `/api/v1/accounts/${c.account.id}`,
          headers: operator.auth,
          payload: { status },
        });
      assert.equal((await setStatus('suspended')).statusCode, 200);
      for (const name of ['current', 'forward'] as const) {
        const res = await checks[name]();
        assert.equal(res.statusCode, 401, name);
        assert.match(String(res.headers['www-authenticate']), /error="invalid_token".*suspended/);
        assert.match(res.json<{ detail: string }>().detail, /account is suspended/);
      }
      assert.deepEqual((await checks.introspect()).json(), { active: false });
      assert.equal((await setStatus('active')).statusCode, 200);
      assert.equal((await checks.current()).statusCode, 200, 'resumed');
      assert.equal((await checks.introspect()).json<{ active: boolean }>().active, true);
    });

    it("delete: 204; the account's tokens are deleted with it and refused at once; then 404", async (t) => {
      const { app, operator, store } = await setup(t);
      const c = await customer(app, operator.auth, ['api-tokens:read']);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: c.auth })).statusCode,
        200,
      );
      const url = `/api/v1/accounts/${c.account.id}`;
      assert.equal((await app.inject({ method: 'DELETE', url, headers: operator.auth })).statusCode, 204);
      const after = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: c.auth });
      assert.equal(after.statusCode, 401);
      assert.match(after.json<{ detail: string }>().detail, /unknown or deleted/);
      assert.equal(await store.tokens.get(c.account.id, c.id), null);
      assert.equal((await app.inject({ method: 'DELETE', url, headers: operator.auth })).statusCode, 404);
      assert.equal((await app.inject({ method: 'GET', url, headers: operator.auth })).statusCode, 404);
      assert.equal(
        (await app.inject({ method: 'GET', url: `${url}/api-tokens`, headers: operator.auth })).statusCode,
        404,
      );
    });

    it("introspection: operator tokens see any token (with account_id); a customer only its account's", async (t) => {
      const { app, operator } = await setup(t);
      const a = await customer(app, operator.auth, ['api-tokens:read', 'apps:read'], 'A');
      const b = await customer(app, operator.auth, ['api-tokens:read', 'apps:read'], 'B');
      const opReader = await mintToken(app, ['api-tokens:read']);
      const secretOf = (x: { auth: { authorization: string } }) => x.auth.authorization.slice('Bearer '.length);
      const introspect = (auth: Record<string, string>, token: string) =>
        app.inject({ method: 'POST', url: '/api/v1/api-tokens/introspect', headers: auth, payload: { token } });
      const byOperator = (await introspect(opReader.auth, secretOf(b))).json<{ active: boolean; account_id: string }>();
      assert.equal(byOperator.active, true);
      assert.equal(byOperator.account_id, b.account.id);
      assert.deepEqual((await introspect(a.auth, secretOf(b))).json(), { active: false }, 'another account');
      assert.deepEqual((await introspect(a.auth, opReader.secret)).json(), { active: false }, "the operator's");
      const own = (await introspect(a.auth, secretOf(a))).json<{ active: boolean; account_id: string }>();
      assert.equal(own.active, true);
      assert.equal(own.account_id, a.account.id);
    });

    it('forward auth: any active account passes, with X-Account-Id', async (t) => {
      const { app, operator } = await setup(t);
      const c = await customer(app, operator.auth, ['apps:read']);
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/auth/check?scope=apps:read',
        headers: { ...c.auth, 'x-account-id': OPERATOR_ACCOUNT_ID },
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['x-account-id'], c.account.id, "the token's account, never the client's header");
      assert.equal(res.headers['x-token-id'], c.id);
    });
  });
}
