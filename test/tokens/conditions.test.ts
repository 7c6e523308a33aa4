// Token conditions (allowed_cidrs, not_before, enabled), on both backends: set on both
// create routes and by PATCH (null clears), shown in every token object, kept by rotation
// (held against the previous secret in its grace period as against the new one), audited,
// validated strictly, never widened by the token that sets them, and judged on every path
// that accepts a token (the API, forward auth through each gateway's header,
// introspection) before any quota is spent.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { App } from '../../src/http/types.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

interface View {
  id: string;
  token?: string;
  allowed_cidrs: string[] | null;
  not_before: string | null;
  enabled: boolean;
}
interface Problem {
  code: string;
  detail: string;
  errors?: { pointer: string; detail: string }[];
}

const OUTSIDE = '198.51.100.7';
const INSIDE = '203.0.113.9';
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
const hourFromNow = () => new Date(Date.now() + 3_600_000).toISOString();

for (const backend of backends()) {
  describe(`token conditions on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}, now?: () => number) {
      const db = await backend.fresh(t);
      const built = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '1000000', LAST_USED_FLUSH_MS: '600000', ...env },
        ...(now !== undefined ? { now } : {}),
      });
      const admin = await mintToken(
        built.app,
        ['api-tokens:write', 'apps:write', 'accounts:write', 'audit-events:read'],
        'admin',
      );
      return { ...built, admin };
    }

    const create = (app: App, auth: Record<string, string>, payload: object, url = '/api/v1/api-tokens') =>
      app.inject({ method: 'POST', url, headers: auth, payload });
    const patch = (app: App, auth: Record<string, string>, id: string, payload: object) =>
      app.inject({
        method: 'PATCH',
        url: `/api/v1/api-tokens/${id}`,
        headers: { ...auth, 'content-type': 'application/merge-patch+json' },
        payload,
      });
    const current = (app: App, secret: string, from = INSIDE) =>
      app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: bearer(secret), remoteAddress: from });

    it('allowed_cidrs: canonical, shown everywhere; from outside 403 before any quota is spent', async (t) => {
      const { app, admin } = await setup(t, { RATE_LIMIT: '3' });
      const res = await create(app, admin.auth, {
        name: 'office',
        scopes: ['apps:read'],
        allowed_cidrs: ['203.0.113.0/24', '2001:DB8:0:0::/32', '::ffff:192.0.2.0/120', '192.0.2.77'],
      });
      assert.equal(res.statusCode, 201, res.body);
      const created = res.json<View>();
      const canonical = ['203.0.113.0/24', '2001:db8::/32', '192.0.2.0/24', '192.0.2.77/32'];
      assert.deepEqual([created.allowed_cidrs, created.not_before, created.enabled], [canonical, null, true]);
      const listed = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth })).json<
        View[]
      >();
      assert.deepEqual(listed.find((v) => v.id === created.id)?.allowed_cidrs, canonical);
      const one = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${created.id}`, headers: admin.auth });
      assert.deepEqual(one.json<View>().allowed_cidrs, canonical);

      // Outside: refused with its own code, and the token's quota (3) untouched.
      for (let i = 0; i < 5; i++) {
        const refused = await current(app, created.token!, OUTSIDE);
        assert.equal(refused.statusCode, 403, refused.body);
        assert.equal(refused.headers['content-type'], PROBLEM_TYPE);
        assert.equal(refused.json<Problem>().code, 'TOKEN_ADDRESS_NOT_ALLOWED');
        assert.match(refused.json<Problem>().detail, new RegExp(OUTSIDE.replaceAll('.', '\\.')));
      }
      const mapped = await current(app, created.token!, '::ffff:192.0.2.77');
      assert.equal(mapped.statusCode, 200, 'an IPv4 client on a dual-stack socket is its IPv4 address');
      assert.deepEqual(mapped.json<View>().allowed_cidrs, canonical, '`current` shows the conditions');
      assert.equal((await current(app, created.token!, '2001:db8:ffff::1')).statusCode, 200);
      assert.equal((await current(app, created.token!)).statusCode, 200);
      assert.equal((await current(app, created.token!)).statusCode, 429, 'the quota was spent by these three alone');
    });

    it('validation: malformed, host bits, duplicates, empty or too many: 422 naming each', async (t) => {
      const { app, admin } = await setup(t);
      const cases: [unknown, string[], RegExp][] = [
        [['10.0.0.1/8'], ['/allowed_cidrs/0'], /host bits set.*10\.0\.0\.0\/8/],
        [['2001:db8::1/32'], ['/allowed_cidrs/0'], /host bits set.*2001:db8::\/32/],
        [['10.0.0.0/33'], ['/allowed_cidrs/0'], /prefix length must be 0 to 32/],
        [
          ['010.0.0.0/8', 'fe80::%eth0/64', '[::1]/128', '10.0.0.0/08', 'example.com/8', ''],
          [0, 1, 2, 3, 4, 5].map((i) => `/allowed_cidrs/${i}`),
          /CIDR notation/,
        ],
        [['10.0.0.0/8', '10.0.0.0/8'], ['/allowed_cidrs/1'], /listed twice/],
        [['::ffff:10.0.0.0/104', '10.0.0.0/8'], ['/allowed_cidrs/1'], /listed twice/],
        [[], ['/allowed_cidrs'], /fewer than 1 items/],
        [Array.from({ length: 51 }, (_, i) => `10.0.${i}.0/24`), ['/allowed_cidrs'], /more than 50 items/],
        ['10.0.0.0/8', ['/allowed_cidrs'], /array|null/],
      ];
      for (const [allowed_cidrs, pointers, detail] of cases) {
        const res = await create(app, admin.auth, { name: 'x', scopes: ['apps:read'], allowed_cidrs });
        assert.equal(res.statusCode, 422, `${JSON.stringify(allowed_cidrs)}: ${res.body}`);
        const errors = res.json<Problem>().errors!;
        assert.deepEqual(
          errors.map((e) => e.pointer),
          pointers,
          JSON.stringify(errors),
        );
        assert.match(errors[0]!.detail, detail);
      }
      for (const [field, value, pointer] of [
        ['not_before', '2027-02-30T00:00:00Z', '/not_before'],
        ['not_before', 'tomorrow', '/not_before'],
        ['enabled', 'no', '/enabled'],
      ] as const) {
        const res = await create(app, admin.auth, { name: 'x', scopes: ['apps:read'], [field]: value });
        assert.equal(res.statusCode, 422, res.body);
        assert.equal(res.json<Problem>().errors![0]!.pointer, pointer);
      }
      const never = await create(app, admin.auth, {
        name: 'x',
        scopes: ['apps:read'],
        expires_at: hourFromNow(),
        not_before: new Date(Date.now() + 7_200_000).toISOString(),
      });
      assert.equal(never.statusCode, 422, never.body);
      assert.match(never.json<Problem>().errors![0]!.detail, /before the token's expiry/);
    });

    it('not_before and enabled: 401 invalid_token saying why; PATCH null or true restores; audited', async (t) => {
      const { app, admin } = await setup(t);
      const later = hourFromNow();
      const res = await create(app, admin.auth, { name: 'later', scopes: ['apps:read'], not_before: later });
      assert.equal(res.statusCode, 201, res.body);
      const token = res.json<View>();
      assert.equal(
        token.not_before,
        later.replace(/\.\d+Z$/, (z) => z),
      );
      const early = await current(app, token.token!);
      assert.equal(early.statusCode, 401);
      assert.equal(early.json<Problem>().code, 'INVALID_TOKEN');
      assert.match(String(early.headers['www-authenticate']), /error="invalid_token".*not valid yet/);

      const cleared = await patch(app, admin.auth, token.id, { not_before: null });
      assert.equal(cleared.statusCode, 200, cleared.body);
      assert.equal(cleared.json<View>().not_before, null);
      assert.equal((await current(app, token.token!)).statusCode, 200, 'valid at once');

      const off = await patch(app, admin.auth, token.id, { enabled: false });
      assert.equal(off.json<View>().enabled, false);
      const refused = await current(app, token.token!);
      assert.equal(refused.statusCode, 401);
      assert.match(String(refused.headers['www-authenticate']), /disabled/);
      const check = await app.inject({
        method: 'GET',
        url: '/api/v1/auth/check?scope=apps:read',
        headers: bearer(token.token!),
      });
      assert.equal(check.statusCode, 401, 'forward auth refuses it too');
      const listed = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${token.id}`, headers: admin.auth });
      assert.equal(listed.json<View>().enabled, false, 'kept, not deleted');
      const on = await patch(app, admin.auth, token.id, { enabled: true });
      assert.equal(on.json<View>().enabled, true);
      assert.equal((await current(app, token.token!)).statusCode, 200, 'restored');
      const back = await patch(app, admin.auth, token.id, { enabled: false });
      assert.equal(back.statusCode, 200);
      assert.equal(
        (await patch(app, admin.auth, token.id, { enabled: null })).json<View>().enabled,
        true,
        'null: the default',
      );

      const trail = await app.inject({
        method: 'GET',
        url: `/api/v1/audit-events?target_id=${token.id}`,
        headers: admin.auth,
      });
      const changes = trail
        .json<{ action: string; details: { changes?: Record<string, unknown> } }[]>()
        .filter((e) => e.action === 'api_token.updated')
        .map((e) => e.details.changes)
        .reverse();
      assert.deepEqual(changes, [
        { not_before: { from: token.not_before, to: null } },
        { enabled: { from: true, to: false } },
        { enabled: { from: false, to: true } },
        { enabled: { from: true, to: false } },
        { enabled: { from: false, to: true } },
      ]);
    });

    it('PATCH allowed_cidrs: set, kept when left out, cleared by null, audited; rotation keeps all', async (t) => {
      const { app, admin } = await setup(t);
      const res = await create(app, admin.auth, { name: 'x', scopes: ['apps:read'] });
      const token = res.json<View>();
      assert.deepEqual([token.allowed_cidrs, token.not_before, token.enabled], [null, null, true]);
      const set = await patch(app, admin.auth, token.id, { allowed_cidrs: ['203.0.113.0/24'] });
      assert.deepEqual(set.json<View>().allowed_cidrs, ['203.0.113.0/24']);
      assert.equal((await current(app, token.token!, OUTSIDE)).statusCode, 403, 'narrowed at once');
      const renamed = await patch(app, admin.auth, token.id, { name: 'renamed' });
      assert.deepEqual(renamed.json<View>().allowed_cidrs, ['203.0.113.0/24'], 'left out: kept');
      const bad = await patch(app, admin.auth, token.id, { allowed_cidrs: ['203.0.113.1/24'] });
      assert.equal(bad.statusCode, 422);
      const later = hourFromNow();
      await patch(app, admin.auth, token.id, { not_before: later, enabled: false });

      const rotated = await app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${token.id}/rotate`,
        headers: admin.auth,
      });
      assert.equal(rotated.statusCode, 200, rotated.body);
      const after = rotated.json<View>();
      assert.deepEqual([after.allowed_cidrs, after.not_before, after.enabled], [['203.0.113.0/24'], later, false]);
      const cleared = await patch(app, admin.auth, token.id, { allowed_cidrs: null, not_before: null, enabled: true });
      assert.deepEqual(
        [cleared.json<View>().allowed_cidrs, cleared.json<View>().not_before, cleared.json<View>().enabled],
        [null, null, true],
      );
      assert.equal((await current(app, after.token!, OUTSIDE)).statusCode, 200, 'the new secret, from anywhere now');

      const trail = await app.inject({
        method: 'GET',
        url: `/api/v1/audit-events?target_id=${token.id}`,
        headers: admin.auth,
      });
      const updates = trail
        .json<{ action: string; details: { changes?: Record<string, unknown> } }[]>()
        .filter((e) => e.action === 'api_token.updated')
        .map((e) => e.details.changes);
      assert.deepEqual(updates[0], {
        allowed_cidrs: { from: ['203.0.113.0/24'], to: null },
        not_before: { from: later, to: null },
        enabled: { from: false, to: true },
      });
      const createdEvent = trail.json<{ action: string; details: Record<string, unknown> }[]>().at(-1)!;
      assert.equal(createdEvent.action, 'api_token.created');
      assert.deepEqual(
        [createdEvent.details.allowed_cidrs, createdEvent.details.not_before, createdEvent.details.enabled],
        [null, null, true],
      );
    });

    it(
      'rotated with a grace period: the new and the previous secret alike are refused while disabled, ' +
        'before not_before and from outside allowed_cidrs, on the API, forward auth and introspection',
      async (t) => {
        // The clock of token rules: not_before comes, within the grace period, without a wait.
        const clock = { now: Date.now() };
        const { app, admin } = await setup(t, { AUTH_CHECK_GATEWAY: 'nginx' }, () => clock.now);
        const caller = await mintToken(app, ['api-tokens:read'], 'resource server');
        const notBefore = clock.now + 3_600_000;
        const res = await create(app, admin.auth, {
          name: 'kept',
          scopes: ['apps:read'],
          allowed_cidrs: ['203.0.113.0/24'],
          not_before: new Date(notBefore).toISOString(),
          enabled: false,
        });
        assert.equal(res.statusCode, 201, res.body);
        const { id, token: previous } = res.json<View>();
        const rotated = await app.inject({
          method: 'POST',
          url: `/api/v1/api-tokens/${id}/rotate`,
          headers: admin.auth,
          payload: { grace_period_s: 7200 },
        });
        assert.equal(rotated.statusCode, 200, rotated.body);
        const secrets = { new: rotated.json<View>().token!, previous: previous! };
        assert.notEqual(secrets.new, secrets.previous);

        // Each path, from `from`: the API by the request's address, forward auth by nginx's
        // X-Real-IP, introspection by client_address.
        const api = (secret: string, from: string) => current(app, secret, from);
        const check = (secret: string, from: string) =>
          app.inject({
            method: 'GET',
            url: '/api/v1/auth/check',
            headers: { ...bearer(secret), 'x-original-method': 'GET', 'x-original-uri': '/apps/1', 'x-real-ip': from },
          });
        const introspect = async (secret: string, from: string) =>
          (
            await app.inject({
              method: 'POST',
              url: '/api/v1/api-tokens/introspect',
              headers: { ...caller.auth, 'content-type': 'application/x-www-form-urlencoded' },
              payload: `token=${encodeURIComponent(secret)}&client_address=${from}`,
            })
          ).json<Record<string, unknown>>();
        const refused = async (from: string, status: number, code: string, why: RegExp) => {
          for (const [kind, secret] of Object.entries(secrets)) {
            for (const [path, answer] of [
              ['API', await api(secret, from)],
              ['forward auth', await check(secret, from)],
            ] as const) {
              const what = `the ${kind} secret on ${path} from ${from}`;
              assert.equal(answer.statusCode, status, `${what}: ${answer.body}`);
              assert.equal(answer.json<Problem>().code, code, what);
              const text = status === 401 ? String(answer.headers['www-authenticate']) : answer.json<Problem>().detail;
              assert.match(text, why, what);
            }
            assert.deepEqual(await introspect(secret, from), { active: false }, `the ${kind} secret, introspected`);
          }
        };

        await refused(INSIDE, 401, 'INVALID_TOKEN', /error="invalid_token".*disabled/);
        const on = await patch(app, admin.auth, id, { enabled: true });
        assert.equal(on.statusCode, 200, on.body);
        await refused(INSIDE, 401, 'INVALID_TOKEN', /error="invalid_token".*not valid yet/);

        clock.now = notBefore;
        await refused(OUTSIDE, 403, 'TOKEN_ADDRESS_NOT_ALLOWED', new RegExp(OUTSIDE.replaceAll('.', '\\.')));
        // Inside, on time, enabled: both secrets work on every path, so each refusal above
        // was the condition's.
        for (const [kind, secret] of Object.entries(secrets)) {
          assert.equal((await api(secret, INSIDE)).statusCode, 200, `the ${kind} secret on the API`);
          assert.equal((await check(secret, INSIDE)).statusCode, 200, `the ${kind} secret on forward auth`);
          const active = await introspect(secret, INSIDE);
          assert.equal(active.active, true, `the ${kind} secret, introspected`);
          assert.deepEqual([active.token_id, active.allowed_cidrs], [id, ['203.0.113.0/24']]);
          assert.equal(active.nbf, Math.floor(notBefore / 1000));
        }
      },
    );

    it(
      'no escalation: a limited token sets, creating or editing, only networks within its own and no earlier ' +
        'not_before',
      async (t) => {
        const { app, admin } = await setup(t);
        const start = new Date(Date.now() - 60_000).toISOString();
        const limitedRes = await create(app, admin.auth, {
          name: 'limited',
          scopes: ['api-tokens:write', 'apps:read'],
          allowed_cidrs: ['10.0.0.0/8', '2001:db8::/32'],
          not_before: start,
        });
        const limited = { ...limitedRes.json<View>(), auth: bearer(limitedRes.json<View>().token!) };
        const as = (payload: object) =>
          app.inject({
            method: 'POST',
            url: '/api/v1/api-tokens',
            headers: limited.auth,
            payload,
            remoteAddress: '10.1.2.3',
          });

        const inherited = await as({ name: 'child', scopes: ['apps:read'] });
        assert.equal(inherited.statusCode, 201, inherited.body);
        assert.deepEqual(
          [inherited.json<View>().allowed_cidrs, inherited.json<View>().not_before],
          [['10.0.0.0/8', '2001:db8::/32'], start],
          "left out: the creator's",
        );
        const narrower = await as({
          name: 'c',
          scopes: ['apps:read'],
          allowed_cidrs: ['10.9.0.0/16', '2001:db8:1::/48'],
        });
        assert.equal(narrower.statusCode, 201, narrower.body);
        for (const [payload, pointer] of [
          [{ allowed_cidrs: ['10.0.0.0/7'] }, '/allowed_cidrs/0'],
          [{ allowed_cidrs: ['10.0.0.0/8', '192.168.0.0/16'] }, '/allowed_cidrs/1'],
          [{ allowed_cidrs: ['2001:db9::/32'] }, '/allowed_cidrs/0'],
          [{ allowed_cidrs: null }, '/allowed_cidrs'],
          [{ not_before: null }, '/not_before'],
          [{ not_before: new Date(Date.parse(start) - 1000).toISOString() }, '/not_before'],
        ] as const) {
          const res = await as({ name: 'c', scopes: ['apps:read'], ...payload });
          assert.equal(res.statusCode, 422, `${JSON.stringify(payload)}: ${res.body}`);
          assert.deepEqual(
            res.json<Problem>().errors!.map((e) => e.pointer),
            [pointer],
          );
        }

        // Managing: a token usable more widely is neither rotated nor edited by it.
        const wide = await mintToken(app, ['apps:read'], 'wide');
        const rotate = await app.inject({
          method: 'POST',
          url: `/api/v1/api-tokens/${wide.id}/rotate`,
          headers: limited.auth,
          remoteAddress: '10.1.2.3',
        });
        assert.equal(rotate.statusCode, 403, rotate.body);
        assert.equal(rotate.json<Problem>().code, 'CONDITIONS_NOT_HELD');
        assert.match(rotate.json<Problem>().detail, /anywhere/);
        const rename = await app.inject({
          method: 'PATCH',
          url: `/api/v1/api-tokens/${wide.id}`,
          headers: { ...limited.auth, 'content-type': 'application/json' },
          payload: { name: 'mine now' },
          remoteAddress: '10.1.2.3',
        });
        assert.equal(rename.json<Problem>().code, 'CONDITIONS_NOT_HELD');
        const narrow = await app.inject({
          method: 'PATCH',
          url: `/api/v1/api-tokens/${wide.id}`,
          headers: { ...limited.auth, 'content-type': 'application/json' },
          payload: { allowed_cidrs: ['10.0.0.0/24'] },
          remoteAddress: '10.1.2.3',
        });
        assert.equal(narrow.statusCode, 200, 'narrowing it into its own networks is allowed');
        const again = await app.inject({
          method: 'POST',
          url: `/api/v1/api-tokens/${wide.id}/rotate`,
          headers: limited.auth,
          remoteAddress: '10.1.2.3',
        });
        assert.equal(again.statusCode, 200, 'now within: rotated');

        // Editing, as creating: not_before at or after its own, never earlier nor at once.
        const edit = (payload: object) =>
          app.inject({
            method: 'PATCH',
            url: `/api/v1/api-tokens/${wide.id}`,
            headers: { ...limited.auth, 'content-type': 'application/json' },
            payload,
            remoteAddress: '10.1.2.3',
          });
        const same = await edit({ not_before: start });
        assert.equal(same.statusCode, 200, same.body);
        assert.equal(same.json<View>().not_before, start);
        for (const not_before of [new Date(Date.parse(start) - 1000).toISOString(), null]) {
          const earlier = await edit({ not_before });
          assert.equal(earlier.statusCode, 422, `${not_before}: ${earlier.body}`);
          const errors = earlier.json<Problem>().errors!;
          assert.deepEqual(
            errors.map((e) => e.pointer),
            ['/not_before'],
          );
          assert.match(errors[0]!.detail, new RegExp(`works only from ${start.replaceAll('.', '\\.')}`));
        }
        const kept = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${wide.id}`, headers: admin.auth });
        assert.equal(kept.json<View>().not_before, start, 'the refused edits changed nothing');
      },
    );

    it("the operator's POST /api/v1/accounts/{id}/api-tokens takes and shows the conditions", async (t) => {
      const { app, admin } = await setup(t);
      const acc = await app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: admin.auth,
        payload: { name: 'Acme' },
      });
      const url = `/api/v1/accounts/${acc.json<{ id: string }>().id}/api-tokens`;
      const res = await create(
        app,
        admin.auth,
        { name: 'ci', scopes: ['apps:read'], allowed_cidrs: ['2001:db8::/48'], enabled: false },
        url,
      );
      assert.equal(res.statusCode, 201, res.body);
      assert.deepEqual([res.json<View>().allowed_cidrs, res.json<View>().enabled], [['2001:db8::/48'], false]);
      const listed = (await app.inject({ method: 'GET', url, headers: admin.auth })).json<View[]>();
      assert.deepEqual(listed[0]!.allowed_cidrs, ['2001:db8::/48']);
      const off = await app.inject({
        method: 'PATCH',
        url: `${url}/${res.json<View>().id}`,
        headers: { ...admin.auth, 'content-type': 'application/merge-patch+json' },
        payload: { enabled: true, allowed_cidrs: null },
      });
      assert.deepEqual([off.json<View>().allowed_cidrs, off.json<View>().enabled], [null, true]);
    });

    describe('forward auth reads the address from the configured gateway only', () => {
      const NGINX = { 'x-original-method': 'GET', 'x-original-uri': '/apps/1' };
      const TRAEFIK = { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/apps/1' };
      const checkAt = (app: App, secret: string, url: string, headers: Record<string, string | string[] | undefined>) =>
        app.inject({ method: 'GET', url, headers: { ...bearer(secret), ...headers }, remoteAddress: INSIDE });

      async function tokens(app: App, admin: { auth: Record<string, string> }) {
        const limited = (
          await create(app, admin.auth, { name: 'l', scopes: ['apps:read'], allowed_cidrs: ['192.0.2.0/24'] })
        ).json<View>().token!;
        const open = (await create(app, admin.auth, { name: 'o', scopes: ['apps:read'] })).json<View>().token!;
        return { limited, open };
      }

      it('nginx: X-Real-IP, once; the request address and X-Forwarded-For are not read', async (t) => {
        const { app, admin } = await setup(t, { AUTH_CHECK_GATEWAY: 'nginx' });
        const { limited, open } = await tokens(app, admin);
        const check = (secret: string, extra: Record<string, string | string[] | undefined>) =>
          checkAt(app, secret, '/api/v1/auth/check', { ...NGINX, ...extra });
        assert.equal((await check(limited, { 'x-real-ip': '192.0.2.10' })).statusCode, 200);
        const outside = await check(limited, { 'x-real-ip': OUTSIDE, 'x-forwarded-for': '192.0.2.10' });
        assert.equal(outside.statusCode, 403);
        assert.equal(outside.json<Problem>().code, 'TOKEN_ADDRESS_NOT_ALLOWED');
        for (const extra of [
          {},
          { 'x-real-ip': ['192.0.2.10', '192.0.2.11'] },
          { 'x-real-ip': '192.0.2.10, 192.0.2.11' },
          { 'x-real-ip': '192.0.2.10:443' },
        ]) {
          const res = await check(limited, extra);
          assert.equal(res.statusCode, 403, `${JSON.stringify(extra)}: fail closed`);
          assert.match(res.json<Problem>().detail, /cannot be read.*X-Real-IP/);
          assert.equal((await check(open, extra)).statusCode, 200, 'a token without allowed_cidrs is not affected');
        }
        // With scope parameters the named gateway's header is read as well.
        const scoped = await checkAt(app, limited, '/api/v1/auth/check?scope=apps:read', { 'x-real-ip': '192.0.2.10' });
        assert.equal(scoped.statusCode, 200);
      });

      it('traefik: X-Forwarded-For holding one address', async (t) => {
        const { app, admin } = await setup(t, { AUTH_CHECK_GATEWAY: 'traefik' });
        const { limited } = await tokens(app, admin);
        const check = (extra: Record<string, string>) =>
          checkAt(app, limited, '/api/v1/auth/check', { ...TRAEFIK, ...extra });
        assert.equal((await check({ 'x-forwarded-for': '192.0.2.10' })).statusCode, 200);
        assert.equal((await check({ 'x-forwarded-for': OUTSIDE, 'x-real-ip': '192.0.2.10' })).statusCode, 403);
        const list = await check({ 'x-forwarded-for': '192.0.2.10, 192.0.2.11' });
        assert.match(list.json<Problem>().detail, /holds a list/);
      });

      it('envoy: the last address of X-Forwarded-For (the one Envoy appends)', async (t) => {
        const { app, admin } = await setup(t, { AUTH_CHECK_GATEWAY: 'envoy' });
        const { limited } = await tokens(app, admin);
        const check = (xff: string) => checkAt(app, limited, '/api/v1/auth/check/apps/1', { 'x-forwarded-for': xff });
        assert.equal((await check(`${OUTSIDE}, 192.0.2.10`)).statusCode, 200);
        assert.equal((await check(`192.0.2.10, ${OUTSIDE}`)).statusCode, 403, 'a client-sent entry is not the address');
        assert.equal((await check('192.0.2.10,')).statusCode, 403);
      });

      it('auto: the form tells the gateway; scope parameters cannot, so a limited token is refused', async (t) => {
        const { app, admin } = await setup(t);
        const { limited, open } = await tokens(app, admin);
        assert.equal(
          (await checkAt(app, limited, '/api/v1/auth/check', { ...NGINX, 'x-real-ip': '192.0.2.1' })).statusCode,
          200,
        );
        assert.equal(
          (await checkAt(app, limited, '/api/v1/auth/check', { ...TRAEFIK, 'x-forwarded-for': '192.0.2.1' }))
            .statusCode,
          200,
        );
        assert.equal(
          (await checkAt(app, limited, '/api/v1/auth/check', { ...TRAEFIK, 'x-real-ip': '192.0.2.1' })).statusCode,
          403,
        );
        const scoped = await checkAt(app, limited, '/api/v1/auth/check?scope=apps:read', { 'x-real-ip': '192.0.2.1' });
        assert.equal(scoped.statusCode, 403);
        assert.match(scoped.json<Problem>().detail, /AUTH_CHECK_GATEWAY=auto/);
        assert.equal((await checkAt(app, open, '/api/v1/auth/check?scope=apps:read', {})).statusCode, 200);
      });
    });

    it('introspection: active only from a client_address within allowed_cidrs; nbf shown', async (t) => {
      const { app, admin } = await setup(t);
      const caller = await mintToken(app, ['api-tokens:read'], 'resource server');
      const res = await create(app, admin.auth, { name: 'l', scopes: ['apps:read'], allowed_cidrs: ['192.0.2.0/24'] });
      const token = res.json<View>();
      const introspect = (payload: string) =>
        app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens/introspect',
          headers: { ...caller.auth, 'content-type': 'application/x-www-form-urlencoded' },
          payload,
        });
      const of = (extra = '') => introspect(`token=${encodeURIComponent(token.token!)}${extra}`);
      assert.deepEqual((await of()).json(), { active: false }, 'no client_address: not active (fail closed)');
      assert.deepEqual((await of(`&client_address=${OUTSIDE}`)).json(), { active: false });
      const inside = (await of('&client_address=192.0.2.200')).json<Record<string, unknown>>();
      assert.equal(inside.active, true);
      assert.deepEqual(inside.allowed_cidrs, ['192.0.2.0/24']);
      const bad = await of('&client_address=192.0.2.200:80');
      assert.equal(bad.statusCode, 422);
      assert.equal(bad.json<Problem>().errors![0]!.pointer, '/client_address');

      const nb = new Date(Date.now() - 60_000);
      await patch(app, admin.auth, token.id, { allowed_cidrs: null, not_before: nb.toISOString() });
      const open = (await of()).json<Record<string, unknown>>();
      assert.equal(open.active, true);
      assert.equal(open.nbf, Math.floor(nb.getTime() / 1000));
      assert.equal(open.allowed_cidrs, undefined);
      await patch(app, admin.auth, token.id, { enabled: false });
      assert.deepEqual((await of()).json(), { active: false }, 'disabled');
      await patch(app, admin.auth, token.id, { enabled: true, not_before: hourFromNow() });
      assert.deepEqual((await of()).json(), { active: false }, 'not valid yet');
      assert.equal((await current(app, caller.secret)).statusCode, 200);
      assert.equal(OPERATOR_ACCOUNT_ID.startsWith('acc_'), true);
    });
  });
}
