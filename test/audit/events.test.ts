// What the audit trail records, read back over HTTP, on both backends: every action that
// exists (token and account changes over the API, the CLI's, the catalog's, the purge's),
// each with its actor, target, client address, User-Agent, request id and account; the
// `"audit": true` log line of each committed change and of nothing else; no secret ever,
// in an event or in its line.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { describe, it } from 'node:test';
import { cliAuditContext } from '../../src/audit/context.js';
import { AUDIT_ACTIONS } from '../../src/audit/events.js';
import type { AuditEvent } from '../../src/audit/schemas.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import type { TokenRecord } from '../../src/storage/types.js';
import { hashSecret } from '../../src/tokens/format.js';
import type { LogCapture } from '../helpers/app.js';
import { allEvents, auditApp, customer } from '../helpers/audit-http.js';
import { backends } from '../helpers/backends.js';
import { build } from '../helpers/app.js';
import { ev } from '../helpers/audit.js';
import { secretPieceIn } from '../helpers/secrets.js';
import { RECEIVER_ENV } from '../helpers/webhooks.js';

const T0 = Date.UTC(2027, 0, 1);
const DAY = 86_400_000;
const CLI_ACTOR = { type: 'cli', id: null, name: userInfo().username };

/** The events of the `"audit": true` log lines, in the order they were written. */
function auditLines(logs: LogCapture): AuditEvent[] {
  return logs
    .records()
    .filter((r) => r.audit === true)
    .map((r) => {
      assert.equal(r.level, 'info');
      assert.equal(r.msg, 'audit event');
      return r.event as AuditEvent;
    });
}

for (const backend of backends()) {
  describe(`audit events recorded on ${backend.name}`, () => {
    it('api_token.created/deleted over HTTP: calling token, target, address, User-Agent, request id', async (t) => {
      // The creation comes through a trusted proxy (TRUST_PROXY), whose X-Request-Id is taken.
      const { app, operator } = await auditApp(backend, t, { env: { TRUST_PROXY: '203.0.113.7' } });
      const client = { 'user-agent': 'terraform-provider-infracat/1.2', 'x-request-id': 'req-create-1' };
      const expiry = new Date(Math.floor(Date.now() / 1000) * 1000 + 30 * DAY).toISOString();
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...operator.auth, ...client },
        remoteAddress: '203.0.113.7',
        payload: { name: 'deploy', scopes: ['apps:read'], expires_at: expiry },
      });
      assert.equal(res.statusCode, 201, res.body);
      const made = res.json<{ id: string }>();
      // No X-Request-Id from the client: the one generated for the request, as the response names it.
      const del = await app.inject({
        method: 'DELETE',
        url: `/api/v1/api-tokens/${made.id}`,
        headers: { ...operator.auth, 'user-agent': 'curl/8.5.0' },
        remoteAddress: '2001:db8::5',
      });
      assert.equal(del.statusCode, 204);
      const [deleted, created] = await allEvents(app, operator.auth, `?target_id=${made.id}`);
      const actor = { type: 'api_token', id: operator.id, name: 'operator' };
      const target = { type: 'api_token', id: made.id, name: 'deploy' };
      assert.deepEqual(
        { ...created, id: undefined, occurred_at: undefined },
        {
          id: undefined,
          action: 'api_token.created',
          occurred_at: undefined,
          account_id: OPERATOR_ACCOUNT_ID,
          actor,
          actor_credential: 'current',
          target,
          ip: '203.0.113.7',
          user_agent: 'terraform-provider-infracat/1.2',
          request_id: 'req-create-1',
          details: { scopes: ['apps:read'], expires_at: expiry, allowed_cidrs: null, not_before: null, enabled: true },
        },
      );
      assert.equal(res.headers['x-request-id'], 'req-create-1');
      assert.deepEqual(
        { ...deleted, id: undefined, occurred_at: undefined },
        {
          id: undefined,
          action: 'api_token.deleted',
          occurred_at: undefined,
          account_id: OPERATOR_ACCOUNT_ID,
          actor,
          actor_credential: 'current',
          target,
          ip: '2001:db8::5',
          user_agent: 'curl/8.5.0',
          request_id: String(del.headers['x-request-id']),
          details: {},
        },
      );
      assert.ok(deleted!.request_id !== created!.request_id);
      // A delete of nothing changes nothing and records nothing.
      const again = await app.inject({
        method: 'DELETE',
        url: `/api/v1/api-tokens/${made.id}`,
        headers: operator.auth,
      });
      assert.equal(again.statusCode, 404);
      assert.equal((await allEvents(app, operator.auth, `?target_id=${made.id}`)).length, 2);
    });

    it("request_id: a trusted proxy's X-Request-Id when well formed, else infracat's own", async (t) => {
      const { app, operator } = await auditApp(backend, t, { env: { TRUST_PROXY: '10.0.0.0/8' } });
      const create = (remoteAddress: string, requestId: string) =>
        app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: { ...operator.auth, 'x-request-id': requestId },
          remoteAddress,
          payload: { name: requestId, scopes: ['apps:read'] },
        });
      const viaProxy = await create('10.1.2.3', 'lb-req-1');
      // A client would give its events the id of a request of its choosing (someone else's).
      const client = await create('192.0.2.44', 'lb-req-1');
      const malformed = await create('10.1.2.3', 'has spaces');
      const events = await allEvents(app, operator.auth, '?action=api_token.created');
      const of = (res: { json: <T>() => T }) => events.find((e) => e.target.id === res.json<{ id: string }>().id)!;
      assert.equal(viaProxy.headers['x-request-id'], 'lb-req-1');
      assert.equal(of(viaProxy).request_id, 'lb-req-1', "the trusted proxy's id");
      for (const [what, res] of [
        ['an untrusted peer', client],
        ['a malformed id', malformed],
      ] as const) {
        const own = String(res.headers['x-request-id']);
        assert.match(own, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, what);
        assert.equal(of(res).request_id, own, `${what}: infracat's own, as the answer names it`);
      }
      // Without TRUST_PROXY no peer is a proxy: every id is infracat's own.
      const direct = await auditApp(backend, t);
      const res = await direct.app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...direct.operator.auth, 'x-request-id': 'lb-req-1' },
        payload: { name: 'direct', scopes: ['apps:read'] },
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.notEqual(res.headers['x-request-id'], 'lb-req-1');
      const [made] = await allEvents(direct.app, direct.operator.auth, '?action=api_token.created&per_page=1');
      assert.equal(made!.request_id, res.headers['x-request-id']);
    });

    it('ip is the address TRUST_PROXY yields; user_agent is cut to 512 characters, scrubbed of secrets', async (t) => {
      const { app, operator } = await auditApp(backend, t, { env: { TRUST_PROXY: '10.0.0.1' } });
      const create = (remoteAddress: string, headers: Record<string, string>) =>
        app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: { ...operator.auth, ...headers },
          remoteAddress,
          payload: { name: 'x', scopes: ['apps:read'] },
        });
      const viaProxy = await create('10.0.0.1', { 'x-forwarded-for': '198.51.100.9' });
      const spoofed = await create('192.0.2.44', { 'x-forwarded-for': '198.51.100.9' });
      const long = await create('192.0.2.45', { 'user-agent': `bot/${'x'.repeat(600)} ${operator.secret}` });
      const pasted = await create('192.0.2.46', { 'user-agent': `script using ${operator.secret}` });
      const events = await allEvents(app, operator.auth, '?action=api_token.created');
      const of = (res: { json: <T>() => T }) => events.find((e) => e.target.id === res.json<{ id: string }>().id)!;
      assert.equal(of(viaProxy).ip, '198.51.100.9', 'the client behind a trusted proxy');
      assert.equal(of(spoofed).ip, '192.0.2.44', 'an untrusted peer cannot choose its address');
      assert.equal(of(long).user_agent, `bot/${'x'.repeat(508)}`);
      assert.equal(of(pasted).user_agent, 'script using icat_[REDACTED]');
    });

    it("the operator's changes in a customer account are in that account's trail, by its token", async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read']);
      const res = await app.inject({
        method: 'DELETE',
        url: `/api/v1/accounts/${acme.account.id}/api-tokens/${acme.token.id}`,
        headers: { ...operator.auth, 'x-request-id': 'req-ops-9' },
      });
      assert.equal(res.statusCode, 204);
      const trail = await allEvents(app, operator.auth, `?account_id=${acme.account.id}`);
      assert.deepEqual(
        trail.map((e) => [e.action, e.actor.id, e.target.id]),
        [
          ['api_token.deleted', operator.id, acme.token.id],
          ['api_token.created', operator.id, acme.token.id],
          ['account.created', operator.id, acme.account.id],
        ],
      );
      assert.equal(trail[0]!.request_id, res.headers['x-request-id'], "infracat's own id, not the client's");
      assert.notEqual(trail[0]!.request_id, 'req-ops-9');
      assert.ok(
        !(await allEvents(app, operator.auth, `?account_id=${OPERATOR_ACCOUNT_ID}`)).some(
          (e) => e.target.id === acme.token.id,
        ),
        "not in the operator account's own trail",
      );
    });

    it("account.created / updated / suspended / resumed / deleted are in the account's own trail", async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['audit-events:read'], 'Acme');
      const patch = async (payload: object) => {
        const res = await app.inject({
          method: 'PATCH',
          url: `/api/v1/accounts/${acme.account.id}`,
          headers: { ...operator.auth, 'content-type': 'application/merge-patch+json' },
          payload,
        });
        assert.equal(res.statusCode, 200, res.body);
      };
      await patch({ name: 'Acme Corp' });
      await patch({ status: 'suspended' });
      await patch({ status: 'suspended' }); // no change: nothing recorded
      await patch({ status: 'active', name: 'Acme Inc' });
      // The customer sees what was done to its account, and that the operator did it.
      const seen = await allEvents(app, acme.auth, '?target_id=' + acme.account.id);
      const target = (name: string) => ({ type: 'account', id: acme.account.id, name });
      assert.deepEqual(
        seen.map((e) => [e.action, e.target, e.details]),
        [
          [
            'account.resumed',
            target('Acme Corp'),
            { changes: { name: { from: 'Acme Corp', to: 'Acme Inc' }, status: { from: 'suspended', to: 'active' } } },
          ],
          ['account.suspended', target('Acme Corp'), { changes: { status: { from: 'active', to: 'suspended' } } }],
          ['account.updated', target('Acme'), { changes: { name: { from: 'Acme', to: 'Acme Corp' } } }],
          ['account.created', target('Acme'), { external_id: null }],
        ],
      );
      for (const e of seen) assert.deepEqual(e.actor, { type: 'operator', id: null, name: null });
      // The operator reads which of its tokens it was.
      for (const e of await allEvents(app, operator.auth, `?target_id=${acme.account.id}`))
        assert.deepEqual(e.actor, { type: 'api_token', id: operator.id, name: 'operator' });
      const gone = await app.inject({
        method: 'DELETE',
        url: `/api/v1/accounts/${acme.account.id}`,
        headers: operator.auth,
      });
      assert.equal(gone.statusCode, 204);
      const [deleted] = await allEvents(app, operator.auth, `?account_id=${acme.account.id}`);
      assert.equal(deleted!.action, 'account.deleted');
      assert.deepEqual(deleted!.target, target('Acme Inc'));
    });

    it('CLI changes are by `cli` (the OS user); catalog.applied is in the operator trail only', async (t) => {
      const { app, operator } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['audit-events:read']);
      const cli = cliAuditContext();
      const { tokens, accounts, catalog } = app.infracat;
      const { token } = await tokens.service.create(
        { name: 'cli made', scopes: ['apps:read'] },
        null,
        acme.account.id,
        cli,
      );
      assert.ok(await tokens.service.delete(acme.account.id, token.id, null, cli));
      await accounts.update(acme.account.id, { status: 'suspended' }, cli);
      await accounts.update(acme.account.id, { status: 'active' }, cli);
      const live = catalog.snapshot.catalog;
      const { baseVersion } = await catalog.plan(live);
      const version = await catalog.apply({ ...live, regions: live.regions.slice(1) }, baseVersion, cli);

      // The operator reads them as the CLI's, by the OS user; the customer as the operator's.
      const theirs = await allEvents(app, acme.auth);
      const byCli = (await allEvents(app, operator.auth, `?account_id=${acme.account.id}`)).filter(
        (e) => e.actor.type === 'cli',
      );
      assert.deepEqual(
        theirs.filter((e) => e.actor.type === 'operator').map((e) => e.id),
        theirs.map((e) => e.id),
        "every change in the account was the operator's",
      );
      assert.deepEqual(
        byCli.map((e) => e.action),
        ['account.resumed', 'account.suspended', 'api_token.deleted', 'api_token.created'],
      );
      for (const e of byCli) {
        assert.deepEqual(e.actor, CLI_ACTOR);
        assert.deepEqual([e.ip, e.user_agent, e.request_id], [null, null, null], 'nothing of HTTP off HTTP');
      }
      assert.ok(!theirs.some((e) => e.action === 'catalog.applied'), "never in a customer's trail");
      const [applied] = await allEvents(app, operator.auth, '?action=catalog.applied');
      assert.deepEqual(
        { actor: applied!.actor, target: applied!.target, details: applied!.details },
        {
          actor: CLI_ACTOR,
          target: { type: 'catalog', id: String(version), name: null },
          details: {
            version,
            settings: [],
            added: { images: [], plans: [], regions: [] },
            removed: { images: [], plans: [], regions: [live.regions[0]!.slug] },
            changed: { images: [], plans: [], regions: [] },
            counts: {
              settings: 0,
              added: { images: 0, plans: 0, regions: 0 },
              removed: { images: 0, plans: 0, regions: 1 },
              changed: { images: 0, plans: 0, regions: 0 },
            },
          },
        },
      );
      // The first start's seed of the default catalog was infracat's own.
      const seeded = await allEvents(app, operator.auth, '?action=catalog.applied&target_id=1');
      assert.deepEqual(seeded[0]!.actor, { type: 'system', id: null, name: 'infracat' });
      const details = seeded[0]!.details as { version: number; seed: boolean; added: { plans: string[] } };
      assert.deepEqual([details.version, details.seed], [1, true]);
      assert.ok(details.added.plans.includes('s-1vcpu-1gb'), 'the seed records what it added');
    });

    it("the expired-token purge records api_token.expired_purged by `system`, in the token's account", async (t) => {
      let clock = T0;
      const { app, operator, config } = await auditApp(backend, t, { now: () => clock });
      const acme = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read']);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: acme.auth,
        payload: { name: 'short lived', scopes: ['audit-events:read'], expires_at: new Date(T0 + DAY).toISOString() },
      });
      assert.equal(res.statusCode, 201, res.body);
      const short = res.json<{ id: string }>();
      clock = T0 + DAY + config.tokenExpiredRetentionDays * DAY + 1;
      await app.infracat.purger.run();
      const [purged] = await allEvents(app, acme.auth, '?action=api_token.expired_purged');
      assert.deepEqual(
        { ...purged, id: undefined, occurred_at: undefined },
        {
          id: undefined,
          action: 'api_token.expired_purged',
          occurred_at: undefined,
          account_id: acme.account.id,
          actor: { type: 'system', id: null, name: 'infracat' },
          actor_credential: null,
          target: { type: 'api_token', id: short.id, name: 'short lived' },
          ip: null,
          user_agent: null,
          request_id: null,
          details: { expires_at: new Date(T0 + DAY).toISOString() },
        },
      );
      assert.equal(purged!.occurred_at, new Date(clock).toISOString(), 'when it was purged');
      await app.infracat.purger.run();
      assert.equal((await allEvents(app, acme.auth, '?action=api_token.expired_purged')).length, 1, 'once');
    });

    it('every action infracat can record so far shows up in the trail', async (t) => {
      let clock = T0;
      const { app, operator } = await auditApp(backend, t, { now: () => clock, env: RECEIVER_ENV });
      const acme = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read']);
      const { tokens, accounts, catalog } = app.infracat;
      const cli = cliAuditContext();
      const { token } = await tokens.service.create(
        { name: 'brief', scopes: ['apps:read'], expires_at: new Date(T0 + DAY).toISOString() },
        null,
        acme.account.id,
        cli,
      );
      const keep = await tokens.service.create({ name: 'kept', scopes: ['apps:read'] }, null, acme.account.id, cli);
      await tokens.service.rotate(acme.account.id, keep.token.id, { grace_period_s: 60 }, null, cli);
      await tokens.service.update(acme.account.id, keep.token.id, { name: 'kept (renamed)' }, null, cli);
      const gone = await tokens.service.create({ name: 'gone', scopes: ['apps:read'] }, null, acme.account.id, cli);
      assert.ok(await tokens.service.delete(acme.account.id, gone.token.id, null, cli));
      await tokens.service.revokeLeaked(
        keep.secret,
        { type: 'infracat_api_token', url: 'https://github.com/o/r', source: 'content' },
        cli,
      );
      await accounts.update(acme.account.id, { name: 'Acme 2' }, cli);
      await accounts.update(acme.account.id, { status: 'suspended' }, cli);
      await accounts.update(acme.account.id, { status: 'active' }, cli);
      const live = catalog.snapshot.catalog;
      await catalog.apply({ ...live, regions: live.regions.slice(1) }, (await catalog.plan(live)).baseVersion, cli);
      // A webhook's life: made, changed, its secret rotated, disabled by infracat after failing for
      // a day (nothing listens on its port), deleted.
      const webhooks = app.infracat.webhooks;
      const { webhook } = await webhooks.service.create(
        acme.account.id,
        { url: 'http://127.0.0.1:1/hook', events: ['api_token.created'] },
        cli,
      );
      await webhooks.service.update(acme.account.id, webhook.id, { description: 'ops' }, cli);
      await webhooks.service.rotateSecret(acme.account.id, webhook.id, cli);
      await webhooks.service.test(acme.account.id, webhook.id);
      await webhooks.worker.poll();
      await webhooks.worker.idle();
      clock += 25 * 3_600_000;
      await webhooks.worker.poll();
      await webhooks.worker.idle();
      assert.equal((await webhooks.service.get(acme.account.id, webhook.id))?.enabled, false, 'disabled');
      assert.ok(await webhooks.service.delete(acme.account.id, webhook.id, cli));
      clock = T0 + 400 * DAY;
      await app.infracat.purger.run();
      assert.ok((await tokens.service.get(acme.account.id, token.id)) === null);
      await accounts.delete(acme.account.id, cli);
      const seen = new Set((await allEvents(app, operator.auth, '?per_page=100')).map((e) => e.action));
      assert.deepEqual(
        [...AUDIT_ACTIONS].filter((a) => !seen.has(a)),
        [],
        'every action of AUDIT_ACTIONS',
      );
    });

    it('one `"audit": true` log line per committed change, in the wire shape; a refused one logs none', async (t) => {
      const { app, operator, logs } = await auditApp(backend, t, { env: { TOKEN_MAX_LIVE: '2' } });
      const before = auditLines(logs).length;
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...operator.auth, 'x-request-id': 'req-log-1' },
        payload: { name: 'logged', scopes: ['apps:read'] },
      });
      assert.equal(created.statusCode, 201);
      const made = created.json<{ id: string }>();
      const deleted = await app.inject({
        method: 'DELETE',
        url: `/api/v1/api-tokens/${made.id}`,
        headers: operator.auth,
      });
      assert.equal(deleted.statusCode, 204);
      const lines = auditLines(logs).slice(before);
      const stored = await allEvents(app, operator.auth, `?target_id=${made.id}`);
      assert.deepEqual(lines, [...stored].reverse(), 'each line is the event as the API shows it, in commit order');
      assert.deepEqual(
        lines.map((e) => e.action),
        ['api_token.created', 'api_token.deleted'],
      );

      // Refused changes: nothing committed, no line.
      const count = auditLines(logs).length;
      const fill = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: operator.auth,
        payload: { name: 'second', scopes: ['apps:read'] },
      });
      assert.equal(fill.statusCode, 201);
      const refusals = [
        { method: 'POST', url: '/api/v1/api-tokens', payload: { name: 'third', scopes: ['apps:read'] }, status: 409 },
        { method: 'POST', url: '/api/v1/api-tokens', payload: { name: 'x', scopes: ['nope:read'] }, status: 422 },
        { method: 'DELETE', url: `/api/v1/api-tokens/${made.id}`, status: 404 },
        { method: 'DELETE', url: `/api/v1/accounts/${OPERATOR_ACCOUNT_ID}`, status: 409 },
        { method: 'PATCH', url: '/api/v1/accounts/acc_nobody', payload: { name: 'n' }, status: 404 },
      ] as const;
      for (const r of refusals) {
        const res = await app.inject({
          method: r.method,
          url: r.url,
          headers: {
            ...operator.auth,
            ...(r.method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : {}),
          },
          ...('payload' in r ? { payload: r.payload } : {}),
        });
        assert.equal(res.statusCode, r.status, `${r.method} ${r.url}: ${res.body}`);
      }
      const problem = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: operator.auth,
        payload: { name: 'third', scopes: ['apps:read'] },
      });
      assert.equal(problem.json<{ code: string }>().code, 'TOKEN_LIMIT_REACHED');
      assert.equal(auditLines(logs).length, count + 1, 'only the one change that was made');
      assert.equal(auditLines(logs).at(-1)!.target.name, 'second');
    });

    it('no secret in any event, through the API or the log: create, rotate, edit, leak-revoke, delete', async (t) => {
      const { app, operator, logs, store } = await auditApp(backend, t);
      const acme = await customer(app, operator.auth, ['api-tokens:write', 'audit-events:read']);
      const secrets: string[] = [operator.secret, acme.token.token];
      const service = app.infracat.tokens.service;
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...acme.auth, 'user-agent': `ci ${acme.token.token}` },
        payload: { name: 'rotating', scopes: ['audit-events:read'] },
      });
      assert.equal(created.statusCode, 201);
      const made = created.json<{ id: string; token: string }>();
      secrets.push(made.token);
      const cli = cliAuditContext();
      const first = await service.rotate(acme.account.id, made.id, { grace_period_s: 3600 }, null, cli);
      const second = await service.rotate(acme.account.id, made.id, { grace_period_s: 3600 }, null, cli);
      assert.ok(first && second);
      secrets.push(first.secret, second.secret);
      await service.update(acme.account.id, made.id, { name: 'rotated' }, null, cli);
      // A leak report's URL that quotes the secret (a query string, a file name).
      assert.ok(
        await service.revokeLeaked(
          first.secret,
          { type: 'infracat_api_token', url: `https://gist.github.com/u/1?raw=${first.secret}`, source: 'gist' },
          cli,
        ),
      );
      const del = await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${made.id}`, headers: acme.auth });
      assert.equal(del.statusCode, 204);

      const trail = await allEvents(app, operator.auth, '?per_page=100');
      assert.ok(trail.length >= 8);
      const outputs = {
        api: JSON.stringify(trail),
        log: logs.text,
        stored: JSON.stringify(await store.audit.list({ limit: 1000 })),
      };
      for (const [where, text] of Object.entries(outputs)) {
        for (const secret of secrets) {
          assert.equal(secretPieceIn(text, secret), undefined, `no piece of a secret in the ${where} output`);
          assert.ok(!text.includes(hashSecret(secret)), `no secret hash in the ${where} output`);
        }
      }
    });
  });

  describe(`audit retention on ${backend.name}`, () => {
    it('AUDIT_RETENTION_DAYS: older events are pruned once listening and on each run, newer ones kept', async (t) => {
      let clock = T0;
      // A database already holding an event 31 days old when the app starts.
      const db = await backend.fresh(t);
      const seed = db.open();
      const old: TokenRecord = {
        id: 'tok_old',
        name: 'old',
        scopes: ['apps:read'],
        secretHash: randomBytes(32).toString('hex'),
        createdAt: T0 - 31 * DAY,
        expiresAt: null,
        lastUsedAt: null,
        lastUsedIp: null,
        accountId: OPERATOR_ACCOUNT_ID,
        previousSecretHash: null,
        previousExpiresAt: null,
        allowedCidrs: null,
        notBefore: null,
        enabled: true,
      };
      const created = ev({ occurredAt: old.createdAt, targetId: old.id });
      assert.equal(await seed.tokens.create(old, { maxLive: 10, now: old.createdAt }, created), 'created');
      await seed.close();
      const { app, store, logs } = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, AUDIT_RETENTION_DAYS: '30' },
        now: () => clock,
      });
      assert.equal(
        (await store.audit.list({ targetId: 'tok_old', limit: 10 })).length,
        1,
        'not pruned before the instance listens',
      );
      await app.listen({ port: 0, host: '127.0.0.1' });
      await app.infracat.auditPruner.idle();
      assert.deepEqual(await store.audit.list({ targetId: 'tok_old', limit: 10 }), [], 'pruned once it listens');

      const service = app.infracat.tokens.service;
      for (const day of [0, 10, 29, 31]) {
        clock = T0 + day * DAY;
        await service.create(
          { name: `day ${day}`, scopes: ['apps:read'] },
          null,
          OPERATOR_ACCOUNT_ID,
          cliAuditContext(),
        );
      }
      clock = T0 + 40 * DAY + 1; // the events of days 0 and 10 are now older than 30 days
      const before = (await store.audit.list({ limit: 1000 })).length;
      await app.infracat.auditPruner.run();
      const left = await store.audit.list({ limit: 1000 });
      assert.deepEqual(
        left.filter((e) => e.action === 'api_token.created').map((e) => e.occurredAt),
        [T0 + 31 * DAY, T0 + 29 * DAY],
        'days 29 and 31 stay; days 0 and 10 are gone',
      );
      assert.ok(
        left.every((e) => e.occurredAt >= clock - 30 * DAY),
        'nothing older than the retention is left',
      );
      const counts = logs
        .records()
        .filter((r) => r.msg === 'pruned audit events older than AUDIT_RETENTION_DAYS')
        .map((r) => r.count);
      assert.deepEqual(counts.slice(-1), [before - left.length], 'a run logs how many it pruned');
      assert.equal(counts.length, 2, 'the run once it listened and this one');
      assert.ok(
        !logs.records().some((r) => r.audit === true && (r.event as AuditEvent).action.includes('prune')),
        'pruning is housekeeping, never itself an audit event',
      );
    });

    it('AUDIT_RETENTION_DAYS=0 keeps every event, however old', async (t) => {
      let clock = T0;
      const { app, store } = await auditApp(backend, t, { env: { AUDIT_RETENTION_DAYS: '0' }, now: () => clock });
      const before = await store.audit.list({ limit: 1000 });
      assert.ok(before.length > 0);
      clock = T0 + 100 * 365 * DAY;
      await app.infracat.auditPruner.run();
      assert.deepEqual(await store.audit.list({ limit: 1000 }), before);
    });
  });
}
