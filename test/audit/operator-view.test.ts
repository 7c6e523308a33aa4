// What a customer sees of the operator, on both backends: when the operator changes a
// customer's tokens or account (over the API with an operator-account token, or with the
// CLI), the customer's trail says the operator acted and nothing that identifies the
// operator's token, address or client; the operator's tokens read the same events whole.
// The catalog history shows customers the same operator actor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { userInfo } from 'node:os';
import type { AuditEvent } from '../../src/audit/schemas.js';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { allEvents, auditApp, customer } from '../helpers/audit-http.js';
import { backends } from '../helpers/backends.js';
import { mintToken } from '../helpers/app.js';

const OPERATOR_ACTOR = { type: 'operator', id: null, name: null };
const OPERATOR_CLIENT = { 'user-agent': 'operator-console/7.1' };
const OPERATOR_IP = '198.51.100.9';
// What tells who acted, which only the operator account sees of the operator's changes.
const WHO = { actor: null, actor_credential: null, ip: null, user_agent: null, request_id: null };

for (const backend of backends()) {
  describe(`the operator as customers see it, on ${backend.name}`, () => {
    it("a customer's trail shows the operator acted, not its token, address or client; the operator all", async (t) => {
      // Both clients reach infracat through a proxy it trusts, which names each request.
      const { app, operator } = await auditApp(backend, t, {
        env: { TRUST_PROXY: `${OPERATOR_IP},203.0.113.50` },
      });
      const acme = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read']);
      const asOperator = (method: 'POST' | 'PATCH' | 'DELETE', url: string, request: string, payload?: object) =>
        app.inject({
          method,
          url,
          headers: { ...operator.auth, ...OPERATOR_CLIENT, 'x-request-id': request },
          remoteAddress: OPERATOR_IP,
          ...(payload === undefined ? {} : { payload }),
        });

      // The operator mints a token into the account and deletes it, suspends and resumes the account.
      const minted = await asOperator('POST', `/api/v1/accounts/${acme.account.id}/api-tokens`, 'req-op-mint', {
        name: 'minted by ops',
        scopes: ['api-tokens:read'],
      });
      assert.equal(minted.statusCode, 201, minted.body);
      const mintedId = minted.json<{ id: string }>().id;
      const deleted = await asOperator(
        'DELETE',
        `/api/v1/accounts/${acme.account.id}/api-tokens/${mintedId}`,
        'req-op-delete',
      );
      assert.equal(deleted.statusCode, 204, deleted.body);
      for (const [status, request] of [
        ['suspended', 'req-op-suspend'],
        ['active', 'req-op-resume'],
      ] as const) {
        const res = await asOperator('PATCH', `/api/v1/accounts/${acme.account.id}`, request, { status });
        assert.equal(res.statusCode, 200, res.body);
      }
      // The operator at the command line, into the same account.
      await app.infracat.tokens.service.create(
        { name: 'from the cli', scopes: ['api-tokens:read'] },
        null,
        acme.account.id,
        TEST_CONTEXT,
      );
      // The customer's own change keeps its own token and client.
      const own = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...acme.auth, 'user-agent': 'acme-ci/2', 'x-request-id': 'req-acme-own' },
        remoteAddress: '203.0.113.50',
        payload: { name: 'acme ci', scopes: ['api-tokens:read'] },
      });
      assert.equal(own.statusCode, 201, own.body);

      const seen = await app.inject({ method: 'GET', url: '/api/v1/audit-events', headers: acme.auth });
      assert.equal(seen.statusCode, 200, seen.body);
      for (const secret of [
        operator.id,
        OPERATOR_IP,
        'operator-console',
        'req-op-',
        '"name":"operator"',
        userInfo().username,
      ])
        assert.ok(!seen.body.includes(secret), `the customer's trail does not show ${secret}`);
      const customerView = await allEvents(app, acme.auth);
      const byOperator = customerView.filter((e) => e.request_id !== 'req-acme-own');
      assert.deepEqual(
        byOperator.map((e) => e.action),
        [
          'api_token.created',
          'account.resumed',
          'account.suspended',
          'api_token.deleted',
          'api_token.created',
          'api_token.created',
          'account.created',
        ],
      );
      for (const e of byOperator)
        assert.deepEqual(
          {
            actor: e.actor,
            actor_credential: e.actor_credential,
            ip: e.ip,
            user_agent: e.user_agent,
            request_id: e.request_id,
          },
          { ...WHO, actor: OPERATOR_ACTOR },
          `${e.action} as the customer sees it`,
        );
      const [mine] = customerView;
      assert.deepEqual(
        { actor: mine!.actor, ip: mine!.ip, user_agent: mine!.user_agent, request_id: mine!.request_id },
        {
          actor: { type: 'api_token', id: acme.token.id, name: acme.token.name },
          ip: '203.0.113.50',
          user_agent: 'acme-ci/2',
          request_id: 'req-acme-own',
        },
        "the customer's own token, whole",
      );
      // What the rest of each event says is the same for both readers.
      const operatorView = await allEvents(app, operator.auth, `?account_id=${acme.account.id}`);
      assert.deepEqual(
        operatorView.map((e) => ({ ...e, ...WHO })),
        customerView.map((e) => ({ ...e, ...WHO })),
      );

      // The operator's tokens see who did it, from where.
      const full = new Map(operatorView.map((e) => [e.request_id, e]));
      for (const request of ['req-op-mint', 'req-op-delete', 'req-op-suspend', 'req-op-resume']) {
        const e = full.get(request);
        assert.ok(e, request);
        assert.deepEqual(
          { actor: e.actor, ip: e.ip, user_agent: e.user_agent },
          {
            actor: { type: 'api_token', id: operator.id, name: 'operator' },
            ip: OPERATOR_IP,
            user_agent: OPERATOR_CLIENT['user-agent'],
          },
          request,
        );
      }
      const cli = operatorView.find((e) => e.target.name === 'from the cli');
      assert.deepEqual(cli?.actor, { type: 'cli', id: null, name: userInfo().username });
    });

    it('catalog revisions: a customer token sees the operator applied them; an operator token who', async (t) => {
      const { app } = await auditApp(backend, t);
      const writer = await mintToken(app, ['catalog:write'], 'catalog operator');
      const granter = await mintToken(app, ['accounts:write', 'api-tokens:write', 'catalog:read'], 'granter');
      const acme = await customer(app, granter.auth, ['catalog:read']);
      const got = await app.inject({ method: 'GET', url: '/api/v1/catalog', headers: writer.auth });
      assert.equal(got.statusCode, 200, got.body);
      const doc = got.json<{ plans: { price_monthly: number }[] }>();
      doc.plans[0]!.price_monthly += 1;
      const put = await app.inject({
        method: 'PUT',
        url: '/api/v1/catalog',
        headers: { ...writer.auth, 'if-match': got.headers.etag as string },
        payload: doc,
      });
      assert.equal(put.statusCode, 200, put.body);
      const live = app.infracat.catalog.snapshot.catalog;
      const { baseVersion } = await app.infracat.catalog.plan(live);
      await app.infracat.catalog.apply({ ...live, regions: live.regions.slice(1) }, baseVersion, TEST_CONTEXT);

      type Revision = { version: number; applied_by: AuditEvent['actor'] | null };
      const read = async (auth: { authorization: string }) => {
        const res = await app.inject({ method: 'GET', url: '/api/v1/catalog/revisions', headers: auth });
        assert.equal(res.statusCode, 200, res.body);
        return res;
      };
      const customerRes = await read(acme.auth);
      assert.ok(!customerRes.body.includes(writer.id) && !customerRes.body.includes('catalog operator'));
      assert.deepEqual(
        customerRes.json<Revision[]>().map((r) => [r.version, r.applied_by]),
        [
          [3, OPERATOR_ACTOR],
          [2, OPERATOR_ACTOR],
          [1, { type: 'system', id: null, name: 'infracat' }],
        ],
      );
      const reader = await mintToken(app, ['catalog:read'], 'operator reader');
      assert.deepEqual(
        (await read(reader.auth)).json<Revision[]>().map((r) => [r.version, r.applied_by]),
        [
          [3, { type: 'cli', id: null, name: userInfo().username }],
          [2, { type: 'api_token', id: writer.id, name: 'catalog operator' }],
          [1, { type: 'system', id: null, name: 'infracat' }],
        ],
      );
    });
  });
}
