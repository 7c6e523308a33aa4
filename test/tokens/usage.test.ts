// Token usage on both backends: every use of a token counted per hour (valid, refused by
// reason) and written in batches; GET .../api-tokens/{id}/usage and its operator twin
// (happy paths, input rules, tenancy); last_used_ip (the request's address, nginx's
// X-Real-IP, introspection's client_address); introspection counted; a use shown by the
// default LAST_USED_FLUSH_MS timer; two instances counting one token at once; the metrics
// agreeing with the counts; pruning after TOKEN_USAGE_RETENTION_DAYS.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { App } from '../../src/http/types.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { UsageTracker } from '../../src/tokens/usage.js';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { parseExposition, value } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';

const H = 3_600_000;
const DAY = 24 * H;
// An hour's start: the clock of the tests that move through hours.
const T0 = Date.UTC(2026, 10, 27, 17);
const OUTCOMES = ['ok', 'expired', 'suspended', 'scope', 'rate_limited'] as const;

interface Bucket {
  hour: string;
  valid: number;
  refused: number;
  refused_by_reason: Record<string, number>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/**
 * Polls `read`, one read at a time, until `done` holds of its answer; fails naming `what`
 * past `deadlineMs` (a read that throws fails at once). Resolves to that answer.
 */
async function polled<T>(read: () => Promise<T>, done: (answer: T) => boolean, what: string, deadlineMs: number) {
  let answer: { value: T } | undefined;
  let failure: { error: unknown } | undefined;
  let reading = false;
  await until(
    () => {
      if (failure !== undefined) throw failure.error;
      if (answer !== undefined && done(answer.value)) return true;
      if (!reading) {
        reading = true;
        read().then(
          (value) => {
            answer = { value };
            reading = false;
          },
          (error: unknown) => {
            failure = { error };
          },
        );
      }
      return false;
    },
    what,
    deadlineMs,
  );
  return answer!.value;
}

async function verifications(app: App): Promise<Record<(typeof OUTCOMES)[number], number>> {
  const e = parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body);
  return Object.fromEntries(
    OUTCOMES.map((o) => [o, value(e, 'infracat_token_verifications_total', { outcome: o }) ?? 0]),
  ) as Record<(typeof OUTCOMES)[number], number>;
}

for (const backend of backends()) {
  describe(`token usage on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}, now?: () => number) {
      const db = await backend.fresh(t);
      const built = await build(t, {
        store: db.open(),
        // Flushed by the tests themselves.
        env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000', ...env },
        ...(now !== undefined ? { now } : {}),
      });
      const admin = await mintToken(built.app, ['api-tokens:write', 'accounts:write', 'audit-events:read'], 'admin');
      return { ...built, db, admin };
    }

    async function usage(app: App, auth: Record<string, string>, path: string): Promise<Bucket[]> {
      await app.infracat.tokens.usage.flush();
      const res = await app.inject({ method: 'GET', url: path, headers: auth });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<Bucket[]>();
    }

    /** The token's usage is one valid use, and its last_used_ip the address `ip`. */
    async function assertOneUseFrom(app: App, auth: Record<string, string>, id: string, ip: string): Promise<void> {
      const buckets = await usage(app, auth, `/api/v1/api-tokens/${id}/usage`);
      assert.deepEqual(
        buckets.map((b) => [b.valid, b.refused]),
        [[1, 0]],
      );
      await app.infracat.tokens.lastUsed.flush();
      const shown = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${id}`, headers: auth });
      assert.equal(shown.json<{ last_used_ip: string | null }>().last_used_ip, ip);
    }

    it(
      'counts each use in its hour: valid, and refused by reason (scope, rate limit, expiry); only ' +
        'non-zero reasons, hours without use absent; the metrics agree with the counts',
      async (t) => {
        const clock = { now: T0 + 10 * 60_000 };
        const { app, admin } = await setup(t, { RATE_LIMIT: '10', RATE_LIMIT_WINDOW_S: '3600' }, () => clock.now);
        const { token, secret } = await app.infracat.tokens.service.create(
          { name: 'ci', scopes: ['api-tokens:read'], expires_at: iso(T0 + 2 * H) },
          null,
          OPERATOR_ACCOUNT_ID,
          TEST_CONTEXT,
        );
        const get = async (url: string) =>
          (await app.inject({ method: 'GET', url, headers: bearer(secret) })).statusCode;
        const before = await verifications(app);

        const first: number[] = [];
        for (let i = 0; i < 12; i++) first.push(await get('/api/v1/api-tokens/current'));
        assert.deepEqual([...new Set(first)].sort(), [200, 429], 'past the rate limit of 10');
        for (let i = 0; i < 2; i++) assert.equal(await get('/api/v1/audit-events'), 403, 'a scope it lacks');
        clock.now = T0 + H + 5 * 60_000;
        const second = await get('/api/v1/api-tokens/current');
        clock.now = T0 + 2 * H + 5 * 60_000;
        assert.equal(await get('/api/v1/api-tokens/current'), 401, 'expired');
        const after = await verifications(app);

        const count = (list: number[], status: number) => list.filter((s) => s === status).length;
        const limited = count(first, 429) + (second === 429 ? 1 : 0);
        const buckets = await usage(
          app,
          admin.auth,
          `/api/v1/api-tokens/${token.id}/usage?since=${iso(T0 - H)}&until=${iso(T0 + 4 * H)}`,
        );
        const firstHour: Bucket = {
          hour: iso(T0),
          valid: count(first, 200),
          refused: 2 + count(first, 429),
          refused_by_reason: { scope: 2, rate_limited: count(first, 429) },
        };
        const secondHour: Bucket =
          second === 200
            ? { hour: iso(T0 + H), valid: 1, refused: 0, refused_by_reason: {} }
            : { hour: iso(T0 + H), valid: 0, refused: 1, refused_by_reason: { rate_limited: 1 } };
        assert.deepEqual(buckets, [
          firstHour,
          secondHour,
          { hour: iso(T0 + 2 * H), valid: 0, refused: 1, refused_by_reason: { expired: 1 } },
        ]);

        // The counters count the same uses: a verification that accepted the token (ok) is a
        // valid use, or one refused afterwards for a scope or the rate limit.
        const sum = (f: (b: Bucket) => number) => buckets.reduce((n, b) => n + f(b), 0);
        const reason = (r: string) => sum((b) => b.refused_by_reason[r] ?? 0);
        assert.equal(after.ok - before.ok, sum((b) => b.valid) + reason('scope') + reason('rate_limited'));
        assert.equal(after.scope - before.scope, reason('scope'));
        assert.equal(after.rate_limited - before.rate_limited, limited);
        assert.equal(after.rate_limited - before.rate_limited, reason('rate_limited'));
        assert.equal(after.expired - before.expired, reason('expired'));
      },
    );

    it('the conditions refuse and count: disabled, not_yet_valid, address (outside allowed_cidrs)', async (t) => {
      const { app, admin } = await setup(t);
      const mint = async (payload: object) => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { scopes: ['api-tokens:read'], ...payload },
        });
        assert.equal(res.statusCode, 201, res.body);
        return res.json<{ id: string; token: string }>();
      };
      const cases = [
        [await mint({ name: 'off', enabled: false }), 'disabled'],
        [await mint({ name: 'later', not_before: iso(Date.now() + 30 * DAY) }), 'not_yet_valid'],
        [await mint({ name: 'fenced', allowed_cidrs: ['192.0.2.0/24'] }), 'address'],
      ] as const;
      for (const [token] of cases) {
        for (let i = 0; i < 2; i++) {
          const res = await app.inject({
            method: 'GET',
            url: '/api/v1/api-tokens/current',
            headers: bearer(token.token),
            remoteAddress: '198.51.100.7',
          });
          assert.ok(res.statusCode === 401 || res.statusCode === 403, res.body);
        }
      }
      for (const [token, reason] of cases) {
        const buckets = await usage(app, admin.auth, `/api/v1/api-tokens/${token.id}/usage`);
        assert.deepEqual(
          buckets.map((b) => [b.valid, b.refused, b.refused_by_reason]),
          [[0, 2, { [reason]: 2 }]],
          reason,
        );
      }
    });

    it("a suspended account's token: its uses counted as refused (suspended)", async (t) => {
      const { app, admin } = await setup(t);
      const account = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: admin.auth,
        payload: { name: 'Acme' },
      });
      const accountId = account.json<{ id: string }>().id;
      const created = await app.inject({
        method: 'POST',
        url: `/api/v1/accounts/${accountId}/api-tokens`,
        headers: admin.auth,
        payload: { name: 'acme', scopes: ['api-tokens:read'] },
      });
      const customer = created.json<{ id: string; token: string }>();
      const suspend = await app.inject({
        method: 'PATCH',
        url: `/api/v1/accounts/${accountId}`,
        headers: admin.auth,
        payload: { status: 'suspended' },
      });
      assert.equal(suspend.statusCode, 200, suspend.body);
      for (let i = 0; i < 3; i++) {
        const res = await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: bearer(customer.token) });
        assert.equal(res.statusCode, 401);
      }
      const buckets = await usage(app, admin.auth, `/api/v1/accounts/${accountId}/api-tokens/${customer.id}/usage`);
      assert.equal(buckets.length, 1);
      assert.deepEqual(
        { ...buckets[0], hour: undefined },
        { hour: undefined, valid: 0, refused: 3, refused_by_reason: { suspended: 3 } },
      );
    });

    it(
      'the endpoint: the last 7 days by default; since/until checked (RFC 3339, since before until, at most ' +
        '90 days apart); another account sees 404; a customer cannot read through the operator route',
      async (t) => {
        const { app, admin } = await setup(t);
        const reader = await mintToken(app, ['api-tokens:read'], 'reader');
        const noRead = await mintToken(app, ['apps:read'], 'apps only');
        await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: reader.auth });
        const path = `/api/v1/api-tokens/${reader.id}/usage`;

        await app.infracat.tokens.usage.flush();
        const res = await app.inject({ method: 'GET', url: path, headers: admin.auth });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['cache-control'], 'no-store');
        const [bucket, ...rest] = res.json<Bucket[]>();
        assert.deepEqual(rest, []);
        assert.equal(bucket?.hour, iso(Math.floor(Date.now() / H) * H), "this hour's use, by default");
        assert.equal(bucket?.valid, 1);
        assert.deepEqual(bucket?.refused_by_reason, {});
        // The reader reads its own usage (api-tokens:read); that use is counted too.
        const own = await usage(app, reader.auth, path);
        assert.ok(own[0]!.valid >= 1);

        const problem = async (query: string, status = 400) => {
          const r = await app.inject({ method: 'GET', url: `${path}${query}`, headers: admin.auth });
          assert.equal(r.statusCode, status, `${query}: ${r.body}`);
          assert.equal(r.headers['content-type'], PROBLEM_TYPE);
          return r.json<{ code: string; errors?: { pointer: string; detail: string }[] }>();
        };
        const now = Date.now();
        assert.deepEqual((await problem('?since=yesterday')).errors?.[0]?.pointer, 'querystring:/since');
        assert.equal((await problem('?since=yesterday')).code, 'INVALID_QUERY');
        assert.equal((await problem('?since=2026-02-30T00:00:00Z')).code, 'INVALID_QUERY');
        const backwards = await problem(`?since=${iso(now)}&until=${iso(now - H)}`);
        assert.deepEqual(backwards.errors?.[0]?.pointer, 'querystring:/until');
        const tooLong = await problem(`?since=${iso(now - 91 * DAY)}&until=${iso(now)}`);
        assert.match(tooLong.errors?.[0]?.detail ?? '', /at most 90 days apart/);
        assert.equal(
          (await problem(`?until=${iso(now - 91 * DAY)}&since=${iso(now - 200 * DAY)}`)).code,
          'INVALID_QUERY',
        );
        assert.equal((await problem('?per_page=10')).code, 'INVALID_QUERY', 'an unknown parameter');
        const full = await app.inject({
          method: 'GET',
          url: `${path}?since=${iso(now - 90 * DAY)}&until=${iso(now)}`,
          headers: admin.auth,
        });
        assert.equal(full.statusCode, 200, 'exactly 90 days');
        assert.equal(full.json<Bucket[]>().length, 1);

        const missing = await app.inject({
          method: 'GET',
          url: '/api/v1/api-tokens/tok_nope/usage',
          headers: admin.auth,
        });
        assert.equal(missing.statusCode, 404);
        const denied = await app.inject({ method: 'GET', url: path, headers: noRead.auth });
        assert.equal(denied.statusCode, 403);
        assert.equal(denied.json<{ code: string }>().code, 'INSUFFICIENT_SCOPE');

        // Another account: its token sees the operator's token as unknown, and the operator
        // route is not for it.
        const account = await app.inject({
          method: 'POST',
          url: '/api/v1/accounts',
          headers: admin.auth,
          payload: { name: 'Acme' },
        });
        const accountId = account.json<{ id: string }>().id;
        const created = await app.inject({
          method: 'POST',
          url: `/api/v1/accounts/${accountId}/api-tokens`,
          headers: admin.auth,
          payload: { name: 'acme', scopes: ['api-tokens:write'] },
        });
        const customer = created.json<{ id: string; token: string }>();
        const theirs = await app.inject({ method: 'GET', url: path, headers: bearer(customer.token) });
        assert.equal(theirs.statusCode, 404, "another account's token: as unknown");
        assert.equal(theirs.json<{ detail: string }>().detail, `no token with id ${reader.id}`);
        const viaOperator = await app.inject({
          method: 'GET',
          url: `/api/v1/accounts/${OPERATOR_ACCOUNT_ID}/api-tokens/${reader.id}/usage`,
          headers: bearer(customer.token),
        });
        assert.equal(viaOperator.statusCode, 403, 'the operator route needs accounts:read');
        const ownViaOperator = await app.inject({
          method: 'GET',
          url: `/api/v1/accounts/${accountId}/api-tokens/${customer.id}/usage`,
          headers: bearer(customer.token),
        });
        assert.equal(ownViaOperator.statusCode, 403, 'even for its own account');

        // The operator: the account's token through the accounts route; a token of another
        // account, or an unknown account, is 404.
        const operatorView = await usage(
          app,
          admin.auth,
          `/api/v1/accounts/${accountId}/api-tokens/${customer.id}/usage`,
        );
        assert.equal(operatorView.length, 1, "the customer's uses above");
        for (const url of [
          `/api/v1/accounts/${accountId}/api-tokens/${reader.id}/usage`,
          `/api/v1/accounts/acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H/api-tokens/${customer.id}/usage`,
        ]) {
          const r = await app.inject({ method: 'GET', url, headers: admin.auth });
          assert.equal(r.statusCode, 404, url);
        }
      },
    );

    it(
      'last_used_ip: the address of the last use beside last_used_at, before and after the flush; ' + 'not at creation',
      async (t) => {
        const { app, admin, store } = await setup(t);
        const created = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'edge', scopes: ['api-tokens:read'] },
        });
        assert.equal(created.statusCode, 201);
        const body = created.json<Record<string, unknown> & { id: string; token: string }>();
        assert.equal('last_used_ip' in body, false, 'the create response has neither last_used_at nor last_used_ip');
        assert.equal('last_used_at' in body, false);
        const show = async () =>
          (await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${body.id}`, headers: admin.auth })).json<{
            last_used_at: string | null;
            last_used_ip: string | null;
          }>();
        const unused = await show();
        assert.deepEqual([unused.last_used_at, unused.last_used_ip], [null, null], 'null until the first use');

        for (const remoteAddress of ['198.51.100.4', '203.0.113.9']) {
          const res = await app.inject({
            method: 'GET',
            url: '/api/v1/api-tokens/current',
            headers: bearer(body.token),
            remoteAddress,
          });
          assert.equal(res.statusCode, 200);
        }
        assert.equal((await show()).last_used_ip, '203.0.113.9', 'pending, shown at once on this instance');
        await app.infracat.tokens.lastUsed.flush();
        const stored = await store.tokens.get(OPERATOR_ACCOUNT_ID, body.id);
        assert.equal(stored?.lastUsedIp, '203.0.113.9', 'written with last_used_at');
        const shown = await show();
        assert.equal(shown.last_used_ip, '203.0.113.9');
        assert.equal(shown.last_used_at, iso(stored.lastUsedAt!));
        const listed = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth })).json<
          { id: string; last_used_ip: string | null }[]
        >();
        assert.equal(listed.find((x) => x.id === body.id)?.last_used_ip, '203.0.113.9');
      },
    );

    it('introspection with client_address: a valid use from that address, not from the caller', async (t) => {
      const { app, admin } = await setup(t);
      const caller = await mintToken(app, ['api-tokens:read'], 'resource server');
      const held = await mintToken(app, ['apps:read'], 'held');
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens/introspect',
        headers: { ...caller.auth, 'content-type': 'application/x-www-form-urlencoded' },
        payload: `token=${encodeURIComponent(held.secret)}&client_address=198.51.100.23`,
        remoteAddress: '192.0.2.50',
      });
      assert.equal(res.json<{ active: boolean }>().active, true, res.body);
      await assertOneUseFrom(app, admin.auth, held.id, '198.51.100.23');
    });

    it("forward auth behind nginx: last_used_ip is X-Real-IP's address, not the gateway's", async (t) => {
      const { app, admin } = await setup(t, { AUTH_CHECK_GATEWAY: 'nginx' });
      const held = await mintToken(app, ['apps:read'], 'held');
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/auth/check',
        headers: { ...held.auth, 'x-original-method': 'GET', 'x-original-uri': '/apps/1', 'x-real-ip': '203.0.113.77' },
        remoteAddress: '192.0.2.50',
      });
      assert.equal(res.statusCode, 200, res.body);
      await assertOneUseFrom(app, admin.auth, held.id, '203.0.113.77');
    });

    it('introspecting a disabled token: not active, and counted against it as disabled', async (t) => {
      const { app, admin } = await setup(t);
      const caller = await mintToken(app, ['api-tokens:read'], 'resource server');
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: admin.auth,
        payload: { name: 'off', scopes: ['api-tokens:read'], enabled: false },
      });
      assert.equal(created.statusCode, 201, created.body);
      const off = created.json<{ id: string; token: string }>();
      for (let i = 0; i < 2; i++) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens/introspect',
          headers: { ...caller.auth, 'content-type': 'application/x-www-form-urlencoded' },
          payload: `token=${encodeURIComponent(off.token)}&client_address=198.51.100.23`,
        });
        assert.deepEqual(res.json(), { active: false });
      }
      const buckets = await usage(app, admin.auth, `/api/v1/api-tokens/${off.id}/usage`);
      assert.deepEqual(
        buckets.map((b) => [b.valid, b.refused, b.refused_by_reason]),
        [[0, 2, { disabled: 2 }]],
      );
    });

    it('with the default LAST_USED_FLUSH_MS, a use shows in the usage and last_used_at without a flush', async (t) => {
      // No LAST_USED_FLUSH_MS: the instance's own timer writes the use. No rate limit on the polling.
      const db = await backend.fresh(t);
      const { app, store } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, RATE_LIMIT: '0' } });
      const admin = await mintToken(app, ['api-tokens:read'], 'admin');
      const held = await mintToken(app, ['api-tokens:read'], 'held');
      const used = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: held.auth });
      assert.equal(used.statusCode, 200);
      const read = async () => {
        const res = await app.inject({
          method: 'GET',
          url: `/api/v1/api-tokens/${held.id}/usage`,
          headers: admin.auth,
        });
        assert.equal(res.statusCode, 200, res.body);
        return res.json<Bucket[]>();
      };
      const buckets = await polled(read, (b) => b.length > 0, 'the use in the usage, unflushed by the test', 15_000);
      assert.deepEqual(
        buckets.map((b) => [b.valid, b.refused]),
        [[1, 0]],
      );
      // last_used_at as stored (the API shows this instance's pending use at once).
      const stored = await polled(
        () => store.tokens.get(OPERATOR_ACCOUNT_ID, held.id),
        (token) => token?.lastUsedAt !== null,
        'last_used_at stored, unflushed by the test',
        15_000,
      );
      assert.equal(stored?.lastUsedIp, '127.0.0.1', "inject()'s address, written with it");
    });

    it('two instances counting one token at once: the sums are exact once both have flushed', async (t) => {
      const db = await backend.fresh(t);
      const env = { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000', RATE_LIMIT: '0' };
      const a = await build(t, { store: db.open(), env });
      const b = await build(t, { store: db.open(), env });
      const admin = await mintToken(a.app, ['api-tokens:read'], 'admin');
      const token = await mintToken(a.app, ['api-tokens:read'], 'busy');
      const VALID = 120;
      const SCOPE = 30;
      const load = async (app: App) => {
        const statuses: number[] = [];
        for (let round = 0; round < 6; round++) {
          const requests = [
            ...Array.from({ length: VALID / 6 }, () => '/api/v1/api-tokens/current'),
            ...Array.from({ length: SCOPE / 6 }, () => '/api/v1/audit-events'),
          ].map(async (url) => (await app.inject({ method: 'GET', url, headers: token.auth })).statusCode);
          // Flushes run while requests are counted.
          const flush = app.infracat.tokens.usage.flush();
          statuses.push(...(await Promise.all(requests)));
          await flush;
        }
        return statuses;
      };
      const [sa, sb] = await Promise.all([load(a.app), load(b.app)]);
      for (const s of [sa, sb]) {
        assert.equal(s.filter((x) => x === 200).length, VALID);
        assert.equal(s.filter((x) => x === 403).length, SCOPE);
      }
      await a.app.infracat.tokens.usage.flush();
      await b.app.infracat.tokens.usage.flush();
      const buckets = await usage(a.app, admin.auth, `/api/v1/api-tokens/${token.id}/usage`);
      const total = (f: (x: Bucket) => number) => buckets.reduce((n, x) => n + f(x), 0);
      assert.equal(
        total((x) => x.valid),
        2 * VALID,
      );
      assert.equal(
        total((x) => x.refused_by_reason.scope ?? 0),
        2 * SCOPE,
      );
      assert.equal(
        total((x) => x.refused),
        2 * SCOPE,
      );
      assert.ok(a.app.infracat.tokens.usage.stats.flushes >= 2, 'several batches');
    });

    it('pruning: hours older than TOKEN_USAGE_RETENTION_DAYS go, newer ones stay, on each run', async (t) => {
      const clock = { now: T0 };
      const { app, store } = await setup(t, { TOKEN_USAGE_RETENTION_DAYS: '2' }, () => clock.now);
      const counts = [1, 0, 0, 0, 0, 0, 0, 0];
      const hours = [T0 - 3 * DAY, T0 - 2 * DAY - H, T0 - 2 * DAY, T0 - DAY, T0];
      await store.tokens.addUsage(
        hours.flatMap((hour) => ['tok_a', 'tok_b'].map((tokenId) => ({ tokenId, hour, counts }))),
      );
      await app.infracat.usagePruner.run();
      const left = async (id: string) => (await store.tokens.usage(id, 0, T0 + H)).map((c) => c.hour);
      assert.deepEqual(await left('tok_a'), [T0 - 2 * DAY, T0 - DAY, T0], 'the 2 days before now are kept');
      assert.deepEqual(await left('tok_b'), [T0 - 2 * DAY, T0 - DAY, T0]);
      clock.now = T0 + DAY - 1;
      await app.infracat.usagePruner.run();
      assert.deepEqual(await left('tok_a'), [T0 - DAY, T0]);
    });

    it(
      'the pending cells are bounded: past the bound a flush starts at once; a use with no cell left is ' +
        'dropped and counted',
      async (t) => {
        const db = await backend.fresh(t);
        const store = db.open();
        t.after(() => store.close());
        const tracker = new UsageTracker(store.tokens, { intervalMs: 600_000, maxPending: 3 });
        for (const id of ['tok_1', 'tok_2', 'tok_3', 'tok_4']) tracker.record(id, 'verified', T0);
        assert.equal(tracker.stats.dropped, 1, 'the fourth token found no cell');
        assert.equal(tracker.pending, 0, 'the three cells went to the flush that started');
        tracker.record('tok_1', 'scope', T0 + 1);
        assert.equal(tracker.pending, 1);
        await tracker.stop();
        const read = (id: string) => store.tokens.usage(id, 0, T0 + H);
        assert.deepEqual(await read('tok_1'), [{ tokenId: 'tok_1', hour: T0, counts: [1, 0, 0, 0, 0, 1, 0, 0] }]);
        assert.deepEqual(await read('tok_3'), [{ tokenId: 'tok_3', hour: T0, counts: [1, 0, 0, 0, 0, 0, 0, 0] }]);
        assert.deepEqual(await read('tok_4'), []);
      },
    );
  });
}
