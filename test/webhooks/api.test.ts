// The webhook endpoints on both backends: create (the secret shown once), list, get, patch,
// delete, rotate-secret, test and the delivery log; scopes, another account's webhook
// answered as an unknown one, validation, the cap, all_accounts for the operator account
// alone, the settings they need, their audit events, and no secret anywhere but the two
// answers that show it.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { App } from '../../src/http/types.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { allEvents, customer, nextLink, OPERATOR_SCOPES } from '../helpers/audit-http.js';
import { backends, type Backend } from '../helpers/backends.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { rawSql } from '../helpers/raw-sql.js';
import { RECEIVER_ENV } from '../helpers/webhooks.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const URL_A = 'http://127.0.0.1:9/hook';
const WEBHOOK_FIELDS = [
  'all_accounts',
  'created_at',
  'description',
  'disabled_reason',
  'enabled',
  'events',
  'failing_since',
  'id',
  'previous_secret_expires_at',
  'updated_at',
  'url',
];

interface WebhookBody {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  all_accounts: boolean;
  secret?: string;
  previous_secret_expires_at: string | null;
}

for (const backend of backends()) {
  describe(`webhook API on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}) {
      const db = await backend.fresh(t);
      const built = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, RATE_LIMIT: '0', ...RECEIVER_ENV, ...env },
      });
      const operator = await mintToken(built.app, [...OPERATOR_SCOPES, 'webhooks:write'], 'operator');
      const acme = await customer(built.app, operator.auth, [
        'webhooks:write',
        'api-tokens:write',
        'audit-events:read',
      ]);
      return { ...built, db, operator, acme };
    }

    const create = (app: App, auth: Record<string, string>, payload: object) =>
      app.inject({ method: 'POST', url: '/api/v1/webhooks', headers: auth, payload });

    it('create: 201, Location, the secret once; get and list never show it', async (t) => {
      const { app, acme } = await setup(t);
      const res = await create(app, acme.auth, {
        url: URL_A,
        events: ['api_token.created', 'api_token.expiring'],
        description: '  deploys  ',
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.headers['cache-control'], 'no-store');
      const body = res.json<WebhookBody & Record<string, unknown>>();
      assert.deepEqual(Object.keys(body).sort(), [...WEBHOOK_FIELDS, 'secret'].sort());
      assert.match(body.id, /^whk_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.equal(res.headers.location, `/api/v1/webhooks/${body.id}`);
      assert.match(body.secret!, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(Buffer.from(body.secret!.slice(6), 'base64').length, 32);
      assert.equal(body.description, 'deploys', 'trimmed');
      assert.equal(body.enabled, true);
      assert.equal(body.all_accounts, false);
      assert.match(String(body.created_at), ISO);
      assert.equal(body.previous_secret_expires_at, null);

      const got = await app.inject({ url: `/api/v1/webhooks/${body.id}`, headers: acme.auth });
      assert.equal(got.statusCode, 200);
      assert.deepEqual(Object.keys(got.json()).sort(), WEBHOOK_FIELDS);
      const listed = await app.inject({ url: '/api/v1/webhooks', headers: acme.auth });
      assert.deepEqual(
        listed.json<WebhookBody[]>().map((w) => w.id),
        [body.id],
      );
      for (const answer of [got.body, listed.body]) assert.ok(!answer.includes(body.secret!), 'no secret');
    });

    it('the secret is stored sealed: neither it nor its key bytes are in the database', async (t) => {
      const { app, db, acme } = await setup(t);
      const made = (await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).json<WebhookBody>();
      const rotated = (
        await app.inject({ method: 'POST', url: `/api/v1/webhooks/${made.id}/rotate-secret`, headers: acme.auth })
      ).json<WebhookBody>();
      const rows = await rawSql(backend, db, 'SELECT * FROM webhooks');
      const stored = JSON.stringify(rows);
      for (const secret of [made.secret!, rotated.secret!]) {
        assert.ok(!stored.includes(secret.slice(6)), 'not the base64 of the key');
        assert.ok(!stored.includes(Buffer.from(secret.slice(6), 'base64').toString('hex')), 'nor its hex');
      }
      const row = rows[0] as { secret: string; previous_secret: string };
      assert.match(row.secret, /^v1\.[0-9a-f]{8}\./);
      assert.match(row.previous_secret, /^v1\.[0-9a-f]{8}\./);
    });

    it('list: oldest first, paged with per_page and Link', async (t) => {
      const { app, acme } = await setup(t);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push((await create(app, acme.auth, { url: URL_A, events: ['account.updated'] })).json<WebhookBody>().id);
      const seen: string[] = [];
      let url: string | null = '/api/v1/webhooks?per_page=2';
      while (url !== null) {
        const res: Awaited<ReturnType<App['inject']>> = await app.inject({ url, headers: acme.auth });
        assert.equal(res.statusCode, 200, res.body);
        seen.push(...res.json<WebhookBody[]>().map((w) => w.id));
        url = nextLink(res.headers.link);
      }
      assert.deepEqual(seen, ids);
      const bad = await app.inject({ url: '/api/v1/webhooks?cursor=nope', headers: acme.auth });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json<{ code: string }>().code, 'INVALID_QUERY');
    });

    it('patch: a merge patch of url, events, description, enabled; {} and no-op change nothing', async (t) => {
      const { app, acme } = await setup(t);
      const made = (await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).json<WebhookBody>();
      const patch = (payload: unknown, type = 'application/merge-patch+json') =>
        app.inject({
          method: 'PATCH',
          url: `/api/v1/webhooks/${made.id}`,
          headers: { ...acme.auth, 'content-type': type },
          payload: JSON.stringify(payload),
        });
      const res = await patch({
        url: 'http://127.0.0.1:10/other',
        events: ['api_token.deleted', 'account.suspended'],
        description: 'ops',
        enabled: false,
      });
      assert.equal(res.statusCode, 200, res.body);
      const after = res.json<WebhookBody>();
      assert.equal(after.url, 'http://127.0.0.1:10/other');
      assert.deepEqual(after.events, ['api_token.deleted', 'account.suspended']);
      assert.equal(after.description, 'ops');
      assert.equal(after.enabled, false);
      assert.ok(!('secret' in after));
      const cleared = await patch({ description: null, enabled: true }, 'application/json');
      assert.equal(cleared.json<WebhookBody>().description, null);
      assert.equal(cleared.json<WebhookBody>().enabled, true);
      const same = await patch({});
      assert.deepEqual(same.json(), cleared.json(), '{} answers it unchanged');
      const events = (await allEvents(app, acme.auth, '?action=webhook.updated')).length;
      await patch({ description: null, enabled: true });
      assert.equal((await allEvents(app, acme.auth, '?action=webhook.updated')).length, events, 'nothing changed');
    });

    it('validation: 422 with a pointer per field; unknown event types, duplicates, bad descriptions', async (t) => {
      const { app, acme } = await setup(t);
      const cases: [object, string][] = [
        [{ url: URL_A, events: [] }, '/events'],
        [{ url: URL_A, events: ['api_token.nope'] }, '/events/0'],
        [{ url: URL_A, events: ['webhook.test'] }, '/events/0'],
        [{ url: URL_A, events: ['api_token.created', 'api_token.created'] }, '/events/1'],
        [{ url: URL_A, events: ['api_token.created'], description: '\u0007bell' }, '/description'],
        [{ url: URL_A, events: ['api_token.created'], description: '   ' }, '/description'],
        [{ url: URL_A, events: ['api_token.created'], extra: 1 }, ''],
        [{ events: ['api_token.created'] }, ''],
        [{ url: URL_A, events: ['api_token.created'], all_accounts: true }, '/all_accounts'],
        [{ url: 'x'.repeat(2049), events: ['api_token.created'] }, '/url'],
      ];
      for (const [payload, pointer] of cases) {
        const res = await create(app, acme.auth, payload);
        assert.equal(res.statusCode, 422, `${JSON.stringify(payload).slice(0, 80)}: ${res.body}`);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        const problem = res.json<{ errors: { pointer: string }[] }>();
        assert.ok(
          problem.errors.some((e) => e.pointer === pointer || (pointer === '' && e.pointer.length >= 0)),
          `${pointer}: ${res.body}`,
        );
      }
      // URLs refused by their form (even with private targets allowed).
      for (const url of ['not a url', 'ftp://127.0.0.1/x', 'http://user:pw@127.0.0.1/x', 'http://127.0.0.1/x#frag']) {
        const res = await create(app, acme.auth, { url, events: ['api_token.created'] });
        assert.equal(res.statusCode, 422, url);
        assert.equal(res.json<{ code: string }>().code, 'WEBHOOK_TARGET_REFUSED', url);
        assert.equal(res.json<{ errors: { pointer: string }[] }>().errors[0]!.pointer, '/url');
      }
      assert.equal((await app.inject({ url: '/api/v1/webhooks', headers: acme.auth })).json<unknown[]>().length, 0);
    });

    it('all_accounts: only for the operator account, in create and patch', async (t) => {
      const { app, operator, acme } = await setup(t);
      const all = await create(app, operator.auth, { url: URL_A, events: ['api_token.created'], all_accounts: true });
      assert.equal(all.statusCode, 201, all.body);
      assert.equal(all.json<WebhookBody>().all_accounts, true);
      const own = (await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).json<WebhookBody>();
      const refused = await app.inject({
        method: 'PATCH',
        url: `/api/v1/webhooks/${own.id}`,
        headers: acme.auth,
        payload: { all_accounts: true },
      });
      assert.equal(refused.statusCode, 422);
      assert.equal(refused.json<{ errors: { pointer: string }[] }>().errors[0]!.pointer, '/all_accounts');
      const narrowed = await app.inject({
        method: 'PATCH',
        url: `/api/v1/webhooks/${all.json<WebhookBody>().id}`,
        headers: operator.auth,
        payload: { all_accounts: false },
      });
      assert.equal(narrowed.json<WebhookBody>().all_accounts, false);
    });

    it("another account's webhook is answered as an unknown one, on every route", async (t) => {
      const { app, operator, acme } = await setup(t);
      const other = await customer(app, operator.auth, ['webhooks:write'], 'Globex');
      const theirs = (await create(app, other.auth, { url: URL_A, events: ['api_token.created'] })).json<WebhookBody>();
      for (const id of [theirs.id, 'whk_01JD3X5Y6Z7A8B9C0D1E2F3G4H', 'x'.repeat(150), 'no%00pe']) {
        for (const [method, suffix] of [
          ['GET', ''],
          ['PATCH', ''],
          ['DELETE', ''],
          ['POST', '/rotate-secret'],
          ['POST', '/test'],
          ['GET', '/deliveries'],
        ] as const) {
          const res = await app.inject({
            method,
            url: `/api/v1/webhooks/${id}${suffix}`,
            headers: acme.auth,
            ...(method === 'PATCH' ? { payload: { enabled: false } } : {}),
          });
          // Past 100 characters a path segment is refused before routing (400).
          const expected = id.length > 100 ? [400, 404] : [404];
          assert.ok(expected.includes(res.statusCode), `${method} ${suffix} ${id.slice(0, 20)}: ${res.statusCode}`);
        }
      }
      const still = await app.inject({ url: `/api/v1/webhooks/${theirs.id}`, headers: other.auth });
      assert.equal(still.json<WebhookBody>().enabled, true, 'untouched');
      assert.equal(
        (await app.inject({ url: '/api/v1/webhooks', headers: acme.auth })).json<unknown[]>().length,
        0,
        "the list shows the account's own only",
      );
    });

    it('scopes: :read reads, :write changes; no token 401; a previous secret changes nothing', async (t) => {
      const { app, acme, operator } = await setup(t);
      const made = (await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).json<WebhookBody>();
      const reader = await mintToken(app, ['webhooks:read'], 'reader');
      const none = await mintToken(app, ['apps:read'], 'none');
      const mine = (
        await create(app, operator.auth, { url: URL_A, events: ['api_token.created'] })
      ).json<WebhookBody>();
      assert.equal((await app.inject({ url: '/api/v1/webhooks', headers: reader.auth })).statusCode, 200);
      assert.equal(
        (await app.inject({ url: `/api/v1/webhooks/${mine.id}/deliveries`, headers: reader.auth })).statusCode,
        200,
      );
      const denied = await create(app, reader.auth, { url: URL_A, events: ['api_token.created'] });
      assert.equal(denied.statusCode, 403);
      assert.deepEqual(denied.json<{ missing_scopes: string[] }>().missing_scopes, ['webhooks:write']);
      for (const [method, url] of [
        ['DELETE', `/api/v1/webhooks/${mine.id}`],
        ['POST', `/api/v1/webhooks/${mine.id}/rotate-secret`],
        ['POST', `/api/v1/webhooks/${mine.id}/test`],
      ] as const)
        assert.equal((await app.inject({ method, url, headers: reader.auth })).statusCode, 403, `${method} ${url}`);
      assert.equal((await app.inject({ url: '/api/v1/webhooks', headers: none.auth })).statusCode, 403);
      const anonymous = await app.inject({ url: '/api/v1/webhooks' });
      assert.equal(anonymous.statusCode, 401);
      assert.match(String(anonymous.headers['www-authenticate']), /^Bearer realm="infracat"/);
      // A rotated token's previous secret, in its grace period, reads but changes nothing.
      const rotated = await app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${acme.token.id}/rotate`,
        headers: acme.auth,
        payload: { grace_period_s: 600 },
      });
      assert.equal(rotated.statusCode, 200, rotated.body);
      assert.equal((await app.inject({ url: `/api/v1/webhooks/${made.id}`, headers: acme.auth })).statusCode, 200);
      const stale = await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${made.id}`, headers: acme.auth });
      assert.equal(stale.json<{ code: string }>().code, 'PREVIOUS_SECRET_READ_ONLY');
    });

    it('the cap: WEBHOOK_MAX_PER_ACCOUNT per account, 409 WEBHOOK_LIMIT_REACHED; each account its own', async (t) => {
      const { app, acme, operator } = await setup(t, { WEBHOOK_MAX_PER_ACCOUNT: '2' });
      for (let i = 0; i < 2; i++)
        assert.equal((await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).statusCode, 201);
      const over = await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] });
      assert.equal(over.statusCode, 409);
      assert.equal(over.json<{ code: string }>().code, 'WEBHOOK_LIMIT_REACHED');
      assert.equal((await create(app, operator.auth, { url: URL_A, events: ['api_token.created'] })).statusCode, 201);
      const first = (await app.inject({ url: '/api/v1/webhooks', headers: acme.auth })).json<WebhookBody[]>()[0]!;
      assert.equal(
        (await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${first.id}`, headers: acme.auth })).statusCode,
        204,
      );
      assert.equal((await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).statusCode, 201);
    });

    it('delete: 204, then 404; rotate-secret: a new secret once, the previous one signing for 24 h', async (t) => {
      const { app, acme } = await setup(t);
      const made = (await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).json<WebhookBody>();
      const rotated = await app.inject({
        method: 'POST',
        url: `/api/v1/webhooks/${made.id}/rotate-secret`,
        headers: acme.auth,
      });
      assert.equal(rotated.statusCode, 200, rotated.body);
      const body = rotated.json<WebhookBody>();
      assert.match(body.secret!, /^whsec_/);
      assert.notEqual(body.secret, made.secret);
      const until = Date.parse(body.previous_secret_expires_at!);
      assert.ok(Math.abs(until - (Date.now() + 86_400_000)) < 60_000, body.previous_secret_expires_at!);
      const del = await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${made.id}`, headers: acme.auth });
      assert.equal(del.statusCode, 204);
      assert.equal(del.body, '');
      const again = await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${made.id}`, headers: acme.auth });
      assert.equal(again.statusCode, 404);
    });

    it('test: 202 with the event id; a disabled webhook 409', async (t) => {
      const { app, acme } = await setup(t);
      const made = (await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).json<WebhookBody>();
      const res = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${made.id}/test`, headers: acme.auth });
      assert.equal(res.statusCode, 202, res.body);
      assert.match(res.json<{ event_id: string }>().event_id, /^evt_/);
      assert.equal(res.json<{ type: string }>().type, 'webhook.test');
      await app.inject({
        method: 'PATCH',
        url: `/api/v1/webhooks/${made.id}`,
        headers: acme.auth,
        payload: { enabled: false },
      });
      const off = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${made.id}/test`, headers: acme.auth });
      assert.equal(off.statusCode, 409);
      const log = await app.inject({
        url: `/api/v1/webhooks/${made.id}/deliveries?per_page=5&cursor=bad`,
        headers: acme.auth,
      });
      assert.equal(log.statusCode, 400);
      assert.equal(
        (await app.inject({ url: `/api/v1/webhooks/${made.id}/deliveries?per_page=101`, headers: acme.auth }))
          .statusCode,
        400,
      );
    });

    it(
      'without WEBHOOK_ENCRYPTION_KEYS: on PostgreSQL create answers 503 WEBHOOKS_NOT_CONFIGURED and lists ' +
        "work; on SQLite infracat's own key seals the secrets",
      async (t) => {
        const { app, acme } = await setup(t, { WEBHOOK_ENCRYPTION_KEYS: '' });
        const res = await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] });
        if (backend.name === 'sqlite') {
          assert.equal(res.statusCode, 201, res.body);
          return;
        }
        assert.equal(res.statusCode, 503);
        assert.equal(res.json<{ code: string }>().code, 'WEBHOOKS_NOT_CONFIGURED');
        assert.equal((await app.inject({ url: '/api/v1/webhooks', headers: acme.auth })).statusCode, 200);
      },
    );

    it("deleting an account deletes its webhooks and what they had queued; the operator's hear of it", async (t) => {
      const { app, store, operator, acme } = await setup(t);
      const theirs = (await create(app, acme.auth, { url: URL_A, events: ['api_token.created'] })).json<WebhookBody>();
      const all = await create(app, operator.auth, { url: URL_A, events: ['account.deleted'], all_accounts: true });
      await app.inject({
        method: 'POST',
        url: `/api/v1/webhooks/${theirs.id}/test`,
        headers: acme.auth,
      });
      const later = Date.now() + 86_400_000;
      assert.deepEqual(
        (await store.webhooks.pending(later, 10)).map((r) => r.webhookId),
        [theirs.id],
      );
      const deleted = await app.inject({
        method: 'DELETE',
        url: `/api/v1/accounts/${acme.account.id}`,
        headers: operator.auth,
      });
      assert.equal(deleted.statusCode, 204);
      assert.equal(await store.webhooks.get(acme.account.id, theirs.id), null);
      const pending = await store.webhooks.pending(later, 10);
      assert.deepEqual(
        pending.map((r) => [r.webhookId, r.eventType]),
        [[all.json<WebhookBody>().id, 'account.deleted']],
      );
    });

    it('audit: created, updated, secret_rotated, deleted in the trail; no secret in events or logs', async (t) => {
      const { app, acme, logs } = await setup(t);
      const made = (
        await create(app, acme.auth, { url: 'http://127.0.0.1:9/hook?token=abc', events: ['api_token.created'] })
      ).json<WebhookBody>();
      await app.inject({
        method: 'PATCH',
        url: `/api/v1/webhooks/${made.id}`,
        headers: acme.auth,
        payload: { enabled: false },
      });
      const rotated = (
        await app.inject({ method: 'POST', url: `/api/v1/webhooks/${made.id}/rotate-secret`, headers: acme.auth })
      ).json<WebhookBody>();
      await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${made.id}`, headers: acme.auth });
      const trail = await allEvents(app, acme.auth);
      const ours = trail.filter((e) => e.target.id === made.id).map((e) => e.action);
      assert.deepEqual(ours, ['webhook.deleted', 'webhook.secret_rotated', 'webhook.updated', 'webhook.created']);
      const created = trail.find((e) => e.action === 'webhook.created')!;
      assert.equal(created.target.type, 'webhook');
      assert.equal(created.target.name, 'http://127.0.0.1:9', 'named by its origin: never its path or query');
      assert.deepEqual(created.details.events, ['api_token.created']);
      const text = JSON.stringify(trail) + logs.text;
      for (const secret of [made.secret!, rotated.secret!]) {
        assert.ok(!text.includes(secret), 'no secret in the trail or the logs');
        assert.ok(!text.includes(secret.slice(6, 30)), 'no part of it either');
      }
      assert.ok(!text.includes('token=abc'), "the URL's query stays out of the trail and the logs");
      assert.ok(trail.some((e) => e.account_id === acme.account.id));
      assert.notEqual(acme.account.id, OPERATOR_ACCOUNT_ID);
    });
  });
}

describe('webhook URLs: only public targets (WEBHOOK_ALLOW_PRIVATE_TARGETS unset)', () => {
  const backend: Backend = backends()[0]!;
  const names: Record<string, string[]> = {
    'hooks.example.com': ['93.184.215.14'],
    'v6.example.com': ['2606:4700::6810:85e5'],
    'internal.example.com': ['10.0.0.7'],
    'loopback.example.com': ['127.0.0.1'],
    'metadata.example.com': ['169.254.169.254'],
    'mixed.example.com': ['93.184.215.14', '192.168.1.1'],
    'ula.example.com': ['fd12::1'],
  };
  const resolver = (host: string) => {
    const found = names[host];
    if (found === undefined) return Promise.reject(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }));
    return Promise.resolve(found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };

  it('refuses http and every non-public address, literal or resolved: WEBHOOK_TARGET_REFUSED says why', async (t) => {
    const db = await backend.fresh(t);
    const { app } = await build(t, {
      store: db.open(),
      env: { DATABASE_URL: db.url, WEBHOOK_ENCRYPTION_KEYS: RECEIVER_ENV.WEBHOOK_ENCRYPTION_KEYS! },
      webhookResolver: resolver,
    });
    const admin = await mintToken(app, ['webhooks:write']);
    const refused: [string, RegExp][] = [
      ['http://hooks.example.com/x', /must be an https URL/],
      ['https://127.0.0.1/x', /127\.0\.0\.1 is not a public address \(loopback\)/],
      ['https://10.1.2.3/x', /private/],
      ['https://172.16.0.1/x', /private/],
      ['https://192.168.0.1/x', /private/],
      ['https://169.254.169.254/latest/meta-data', /link-local/],
      ['https://100.64.0.1/x', /carrier-grade NAT/],
      ['https://0.0.0.0/x', /unspecified/],
      ['https://224.0.0.1/x', /multicast/],
      ['https://[::1]/x', /loopback/],
      ['https://[::ffff:127.0.0.1]/x', /IPv4-mapped, loopback/],
      ['https://[fe80::1]/x', /link-local/],
      ['https://[fd00::1]/x', /unique-local/],
      ['https://[::]/x', /unspecified/],
      ['https://2130706433/x', /loopback/],
      ['https://0x7f.1/x', /loopback/],
      ['https://internal.example.com/x', /internal\.example\.com resolves to 10\.0\.0\.7.*private/],
      ['https://loopback.example.com/x', /loopback/],
      ['https://metadata.example.com/x', /link-local/],
      ['https://mixed.example.com/x', /192\.168\.1\.1.*private/],
      ['https://ula.example.com/x', /unique-local/],
      ['https://nowhere.example.com/x', /does not resolve/],
    ];
    for (const [url, why] of refused) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: admin.auth,
        payload: { url, events: ['api_token.created'] },
      });
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      const problem = res.json<{ code: string; detail: string; errors: { pointer: string; detail: string }[] }>();
      assert.equal(problem.code, 'WEBHOOK_TARGET_REFUSED', url);
      assert.match(problem.detail, why, url);
      assert.equal(problem.errors[0]!.pointer, '/url');
    }
    for (const url of ['https://hooks.example.com/x', 'https://v6.example.com:8443/x?a=1', 'https://93.184.215.14/x']) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: admin.auth,
        payload: { url, events: ['api_token.created'] },
      });
      assert.equal(res.statusCode, 201, `${url}: ${res.body}`);
    }
    // A PATCH to a refused URL is refused alike and changes nothing.
    const [first] = (await app.inject({ url: '/api/v1/webhooks', headers: admin.auth })).json<WebhookBody[]>();
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/v1/webhooks/${first!.id}`,
      headers: admin.auth,
      payload: { url: 'https://loopback.example.com/x' },
    });
    assert.equal(patched.statusCode, 422);
    assert.equal(patched.json<{ code: string }>().code, 'WEBHOOK_TARGET_REFUSED');
    const kept = await app.inject({ url: `/api/v1/webhooks/${first!.id}`, headers: admin.auth });
    assert.equal(kept.json<WebhookBody>().url, 'https://hooks.example.com/x');
  });
});
