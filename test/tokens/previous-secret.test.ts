// A token's previous secret, in the grace period after a rotation, on both backends: it
// keeps the token's reads (token and audit reads, the catalog, forward auth,
// introspection) and makes no change to tokens, accounts or the catalog (403
// PREVIOUS_SECRET_READ_ONLY); the audit trail says which secret made each change.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/http/types.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

interface Created {
  id: string;
  token: string;
  expires_at: string | null;
}

interface Problem {
  code: string;
  status: number;
  detail: string;
}

const ALL_OPERATOR_SCOPES = [
  'api-tokens:write',
  'accounts:write',
  'catalog:write',
  'audit-events:read',
  'apps:write',
  'plans:read',
];

for (const backend of backends()) {
  describe(`a previous secret in its grace period on ${backend.name}`, () => {
    async function setup(t: TestContext) {
      const db = await backend.fresh(t);
      const clock = { now: Date.now() };
      const built = await build(t, {
        store: db.open(),
        now: () => clock.now,
        env: { DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '1000000', CATALOG_ACCESS: 'token' },
      });
      const { app } = built;
      // The owner's token, rotated with a grace period: `old` is the secret it had (the one
      // that may have leaked), `current` the one the rotation answered.
      const owner = await mintToken(app, ALL_OPERATOR_SCOPES, 'owner');
      const res = await app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${owner.id}/rotate`,
        headers: owner.auth,
        payload: { grace_period_s: 3600 },
      });
      assert.equal(res.statusCode, 200, res.body);
      const current = res.json<Created>().token;
      const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
      return { ...built, clock, owner, old: bearer(owner.secret), current: bearer(current) };
    }

    /** The 403 a previous secret gets for a change: its own code, a problem body, a Bearer challenge. */
    function assertRefused(res: LightMyRequestResponse, what: string): void {
      assert.equal(res.statusCode, 403, `${what}: ${res.body}`);
      assert.equal(res.headers['content-type'], PROBLEM_TYPE, what);
      const body = res.json<Problem>();
      assert.equal(body.code, 'PREVIOUS_SECRET_READ_ONLY', what);
      assert.match(body.detail, /current secret/, what);
      assert.match(
        String(res.headers['www-authenticate']),
        /^Bearer realm="infracat", error="insufficient_scope"/,
        what,
      );
    }

    /** The status GET /api/v1/api-tokens/current answers for a Bearer header. */
    const status = async (app: App, auth: Record<string, string>) =>
      (await app.inject({ url: '/api/v1/api-tokens/current', headers: auth })).statusCode;

    it('the old secret cannot rotate the token again: the owner keeps the new secret', async (t) => {
      const { app, owner, old, current } = await setup(t);
      assert.equal(await status(app, old), 200, 'the old secret is in its grace period');
      for (const grace of [0, 3600]) {
        const res = await app.inject({
          method: 'POST',
          url: `/api/v1/api-tokens/${owner.id}/rotate`,
          headers: old,
          payload: { grace_period_s: grace },
        });
        assertRefused(res, `rotate with grace ${grace}`);
      }
      assert.equal(await status(app, current), 200, "the owner's new secret still works");
      assert.equal(await status(app, old), 200, 'the refusal changed nothing: the grace period goes on');
      // The current secret rotates as ever.
      const again = await app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${owner.id}/rotate`,
        headers: current,
        payload: { grace_period_s: 0 },
      });
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(await status(app, current), 401);
      assert.equal(await status(app, old), 401, 'the rotation ended the grace period of the oldest secret');
    });

    it('the old secret cannot create, edit or delete tokens', async (t) => {
      const { app, owner, old, current } = await setup(t);
      const child = await mintToken(app, ['plans:read'], 'child');
      const before = (await app.inject({ url: '/api/v1/api-tokens', headers: current })).json<unknown[]>().length;
      assertRefused(
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: old,
          payload: { name: 'forever', scopes: ['plans:read'], expires_at: null },
        }),
        'create without expiry',
      );
      assertRefused(
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: old,
          payload: { name: 'child', scopes: ['plans:read'] },
        }),
        'create',
      );
      for (const id of [owner.id, child.id]) {
        assertRefused(
          await app.inject({
            method: 'PATCH',
            url: `/api/v1/api-tokens/${id}`,
            headers: { ...old, 'content-type': 'application/merge-patch+json' },
            payload: { name: 'renamed', scopes: ['plans:read'] },
          }),
          `PATCH ${id}`,
        );
        assertRefused(
          await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${id}`, headers: old }),
          `DELETE ${id}`,
        );
      }
      const after = await app.inject({ url: '/api/v1/api-tokens', headers: current });
      assert.equal(after.json<unknown[]>().length, before, 'nothing was created or deleted');
      const shown = await app.inject({ url: `/api/v1/api-tokens/${owner.id}`, headers: current });
      assert.equal(shown.json<{ name: string }>().name, 'owner', 'nothing was renamed');
    });

    it('the old secret cannot create, change, suspend or delete accounts, or manage their tokens', async (t) => {
      const { app, old, current } = await setup(t);
      const made = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: current,
        payload: { name: 'Acme' },
      });
      assert.equal(made.statusCode, 201, made.body);
      const account = made.json<{ id: string }>().id;
      const minted = await app.inject({
        method: 'POST',
        url: `/api/v1/accounts/${account}/api-tokens`,
        headers: current,
        payload: { name: 'ci', scopes: ['plans:read'] },
      });
      assert.equal(minted.statusCode, 201, minted.body);
      const token = minted.json<Created>().id;
      const patch = { ...old, 'content-type': 'application/merge-patch+json' };
      const attempts: [string, InjectOptions][] = [
        ['create', { method: 'POST', url: '/api/v1/accounts', headers: old, payload: { name: 'Evil' } }],
        ['rename', { method: 'PATCH', url: `/api/v1/accounts/${account}`, headers: patch, payload: { name: 'x' } }],
        [
          'suspend',
          { method: 'PATCH', url: `/api/v1/accounts/${account}`, headers: patch, payload: { status: 'suspended' } },
        ],
        ['delete', { method: 'DELETE', url: `/api/v1/accounts/${account}`, headers: old }],
        [
          'mint',
          {
            method: 'POST',
            url: `/api/v1/accounts/${account}/api-tokens`,
            headers: old,
            payload: { name: 'backdoor', scopes: ['plans:read'] },
          },
        ],
        [
          'edit its token',
          {
            method: 'PATCH',
            url: `/api/v1/accounts/${account}/api-tokens/${token}`,
            headers: patch,
            payload: { name: 'x' },
          },
        ],
        [
          'rotate its token',
          { method: 'POST', url: `/api/v1/accounts/${account}/api-tokens/${token}/rotate`, headers: old, payload: {} },
        ],
        [
          'delete its token',
          { method: 'DELETE', url: `/api/v1/accounts/${account}/api-tokens/${token}`, headers: old },
        ],
      ];
      for (const [what, request] of attempts) assertRefused(await app.inject(request), what);
      // Nothing changed; and reads with the old secret still work.
      const shown = await app.inject({ url: `/api/v1/accounts/${account}`, headers: old });
      assert.equal(shown.statusCode, 200, shown.body);
      assert.deepEqual((({ name, status }) => ({ name, status }))(shown.json<{ name: string; status: string }>()), {
        name: 'Acme',
        status: 'active',
      });
      const tokens = await app.inject({ url: `/api/v1/accounts/${account}/api-tokens`, headers: old });
      assert.deepEqual(
        tokens.json<{ id: string }[]>().map((x) => x.id),
        [token],
      );
      assert.equal((await app.inject({ url: '/api/v1/accounts', headers: old })).json<unknown[]>().length, 2);
    });

    it('the old secret cannot replace the catalog, but reads it', async (t) => {
      const { app, old, current } = await setup(t);
      const live = await app.inject({ url: '/api/v1/catalog', headers: old });
      assert.equal(live.statusCode, 200, live.body);
      const etag = String(live.headers.etag);
      const put = (auth: Record<string, string>) =>
        app.inject({
          method: 'PUT',
          url: '/api/v1/catalog',
          headers: { ...auth, 'if-match': etag, 'content-type': 'application/json' },
          payload: live.body,
        });
      assertRefused(await put(old), 'PUT /api/v1/catalog');
      const same = await put(current);
      assert.equal(same.statusCode, 200, `the current secret may: ${same.body}`);
    });

    it('the old secret keeps the reads: tokens, catalog, forward auth, introspection, audit events', async (t) => {
      const { app, owner, old, current } = await setup(t);
      const reads: [string, InjectOptions][] = [
        ['token list', { url: '/api/v1/api-tokens', headers: old }],
        ['one token', { url: `/api/v1/api-tokens/${owner.id}`, headers: old }],
        ['itself', { url: '/api/v1/api-tokens/current', headers: old }],
        ['plans (CATALOG_ACCESS=token)', { url: '/api/v1/plans', headers: old }],
        [
          'forward auth, a write scope of another service',
          { url: '/api/v1/auth/check?scope=apps:write', headers: old },
        ],
        ['audit events', { url: '/api/v1/audit-events', headers: old }],
        [
          'introspection (a POST that reads)',
          {
            method: 'POST',
            url: '/api/v1/api-tokens/introspect',
            headers: old,
            payload: { token: current.authorization.slice('Bearer '.length) },
          },
        ],
      ];
      for (const [what, request] of reads) {
        const res = await app.inject(request);
        assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
      }
      const check = await app.inject({ url: '/api/v1/auth/check?scope=apps:write', headers: old });
      assert.equal(check.headers['x-token-id'], owner.id);
    });

    it('audit events say which secret of a token made a change (the current one); null for other actors', async (t) => {
      const { app, owner, old, current } = await setup(t);
      await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: current,
        payload: { name: 'child', scopes: ['plans:read'] },
      });
      const res = await app.inject({ url: '/api/v1/audit-events', headers: old });
      assert.equal(res.statusCode, 200, res.body);
      const events =
        res.json<{ action: string; actor: { type: string; id: string | null }; actor_credential: unknown }[]>();
      const seen = events.map((e) => [e.action, e.actor.type, e.actor.id, e.actor_credential]);
      assert.deepEqual(seen, [
        ['api_token.created', 'api_token', owner.id, 'current'],
        ['api_token.rotated', 'api_token', owner.id, 'current'],
        // mintToken() acts as the operator at the command line: no token, no credential.
        ['api_token.created', 'cli', null, null],
        // The default catalog, applied by infracat itself on the first start.
        ['catalog.applied', 'system', null, null],
      ]);
      // The same on the store's side.
      const stored = await app.infracat.audit.list(OPERATOR_ACCOUNT_ID, { perPage: 10 });
      assert.deepEqual(
        stored.events.map((e) => e.actorCredential),
        ['current', 'current', null, null],
      );
    });

    it('once the grace period ends the old secret is refused outright (401), as before', async (t) => {
      const { app, old, clock } = await setup(t);
      clock.now += 3600_000;
      const res = await app.inject({ method: 'POST', url: '/api/v1/api-tokens', headers: old, payload: {} });
      assert.equal(res.statusCode, 401, res.body);
      assert.equal(res.json<Problem>().code, 'INVALID_TOKEN');
    });
  });
}

describe('the rule covers every change', () => {
  it('every route that changes something with a bearer token refuses a previous secret, as documented', async (t) => {
    const { app } = await build(t, { env: { SECRET_SCANNING_KEYS_FILE: '' } });
    type Operation = { security?: unknown[]; responses: Record<string, { description?: string }> };
    const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, Operation>>;
    }>();
    // POSTs that only read: RFC 7662 introspection (api-tokens:read), a catalog diff
    // (catalog:read); and the forward-auth check, which answers the gateway's method, any.
    const reads = new Set(['post /api/v1/api-tokens/introspect', 'post /api/v1/catalog/diff']);
    const isCheck = (path: string) => path === '/api/v1/auth/check' || path.startsWith('/api/v1/auth/check/');
    const changes: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(operations)) {
        const name = `${method} ${path}`;
        if (
          !['post', 'put', 'patch', 'delete'].includes(method) ||
          // Not a bearer route: the token exchange takes its token in the body, to read.
          !(op.security ?? []).some((s) => typeof s === 'object' && s !== null && 'bearer' in s) ||
          reads.has(name) ||
          isCheck(path)
        )
          continue;
        changes.push(name);
        assert.match(String(op.responses['403']?.description), /PREVIOUS_SECRET_READ_ONLY/, name);
      }
    // The list this rule was checked against: a new change shows up here, to be judged.
    assert.deepEqual(changes.sort(), [
      'delete /api/v1/accounts/{id}',
      'delete /api/v1/accounts/{id}/api-tokens/{token_id}',
      'delete /api/v1/api-tokens/{id}',
      'delete /api/v1/webhooks/{id}',
      'patch /api/v1/accounts/{id}',
      'patch /api/v1/accounts/{id}/api-tokens/{token_id}',
      'patch /api/v1/api-tokens/{id}',
      'patch /api/v1/webhooks/{id}',
      'post /api/v1/accounts',
      'post /api/v1/accounts/{id}/api-tokens',
      'post /api/v1/accounts/{id}/api-tokens/{token_id}/rotate',
      'post /api/v1/api-tokens',
      'post /api/v1/api-tokens/{id}/rotate',
      'post /api/v1/webhooks',
      'post /api/v1/webhooks/{id}/rotate-secret',
      'post /api/v1/webhooks/{id}/test',
      'put /api/v1/catalog',
    ]);
  });
});
