// Rotation (POST /api/v1/api-tokens/{id}/rotate), on both backends: the new secret, the
// grace period of the old one (driven by the app's injected clock, never by sleeping),
// at most two live secrets, the expiry rules, the escalation rule, the body rules, and the
// audit event it writes.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { App } from '../../src/http/types.js';
import { checkSecret } from '../../src/tokens/format.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { assertNoSecret } from '../helpers/no-secret.js';

const DAY = 86_400_000;

interface Created {
  id: string;
  name: string;
  token: string;
  scopes: string[];
  created_at: string;
  expires_at: string | null;
}

interface Rotated extends Created {
  previous_secret_expires_at: string | null;
}

for (const backend of backends()) {
  describe(`token rotation on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}) {
      const db = await backend.fresh(t);
      const clock = { now: Date.now() };
      const built = await build(t, {
        store: db.open(),
        now: () => clock.now,
        env: { DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '1000000', ...env },
      });
      const admin = await mintToken(built.app, ['api-tokens:write', 'apps:write', 'images:read'], 'admin');
      return { ...built, clock, admin };
    }

    async function create(app: App, auth: Record<string, string>, payload: object): Promise<Created> {
      const res = await app.inject({ method: 'POST', url: '/api/v1/api-tokens', headers: auth, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<Created>();
    }

    const rotate = (app: App, auth: Record<string, string>, id: string, payload?: object) =>
      app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${id}/rotate`,
        headers: auth,
        ...(payload !== undefined ? { payload } : {}),
      });

    /** The status GET /api-tokens/current answers for a secret. */
    const status = async (app: App, secret: string) =>
      (
        await app.inject({
          method: 'GET',
          url: '/api/v1/api-tokens/current',
          headers: { authorization: `Bearer ${secret}` },
        })
      ).statusCode;

    it('answers 200 with the token and a new secret (same id, name, scopes, created_at), no-store', async (t) => {
      const { app, admin } = await setup(t);
      const before = await create(app, admin.auth, { name: 'deploy', scopes: ['apps:read'] });
      assert.equal(await status(app, before.token), 200, 'cached now');
      const res = await rotate(app, admin.auth, before.id, {});
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers.location, undefined, 'not a new resource');
      const { previous_secret_expires_at: previous, ...after } = res.json<Rotated>();
      assert.deepEqual(Object.keys(res.json()).sort(), [
        'allowed_cidrs',
        'created_at',
        'enabled',
        'expires_at',
        'id',
        'name',
        'not_before',
        'previous_secret_expires_at',
        'scopes',
        'token',
      ]);
      assert.equal(previous, null, 'no grace period: the previous secret works no longer');
      assert.deepEqual({ ...after, token: 'x' }, { ...before, token: 'x' });
      assert.notEqual(after.token, before.token);
      assert.deepEqual(checkSecret(after.token, 'icat'), { ok: true });
      assert.equal(await status(app, after.token), 200, 'the new secret works');
      assert.equal(await status(app, before.token), 401, 'grace 0 (the default): the old one is refused at once');
      // The secret is shown in that answer only.
      for (const url of ['/api/v1/api-tokens', `/api/v1/api-tokens/${after.id}`]) {
        const shown = await app.inject({ method: 'GET', url, headers: admin.auth });
        assert.ok(!shown.body.includes(after.token), url);
      }
    });

    it('the grace period: the old secret works until it ends and is refused (401) from that moment', async (t) => {
      const { app, admin, clock } = await setup(t);
      const first = await create(app, admin.auth, { name: 'ci', scopes: ['apps:read'] });
      const res = await rotate(app, admin.auth, first.id, { grace_period_s: 600 });
      assert.equal(res.statusCode, 200, res.body);
      const second = res.json<Rotated>();
      const graceEnds = clock.now + 600_000;
      assert.equal(second.previous_secret_expires_at, new Date(graceEnds).toISOString(), 'the answer says until when');
      assert.equal(await status(app, first.token), 200, 'in its grace period');
      assert.equal(await status(app, second.token), 200);
      const current = await app.inject({
        method: 'GET',
        url: '/api/v1/api-tokens/current',
        headers: { authorization: `Bearer ${first.token}` },
      });
      assert.equal(current.json<{ id: string }>().id, first.id, 'the old secret is the same token');
      clock.now = graceEnds - 1;
      assert.equal(await status(app, first.token), 200, 'the last millisecond of the grace period');
      clock.now = graceEnds;
      const refused = await app.inject({
        method: 'GET',
        url: '/api/v1/api-tokens/current',
        headers: { authorization: `Bearer ${first.token}` },
      });
      assert.equal(refused.statusCode, 401, 'refused right after it, though this instance had it cached');
      assert.match(String(refused.headers['www-authenticate']), /error="invalid_token"/);
      assert.equal(await status(app, second.token), 200);
      clock.now += 10 * DAY;
      assert.equal(await status(app, first.token), 401);
    });

    it('grace_period_s 0 refuses the old secret at once, even one in a grace period', async (t) => {
      const { app, admin } = await setup(t);
      const first = await create(app, admin.auth, { name: 'ci', scopes: ['apps:read'] });
      const second = (await rotate(app, admin.auth, first.id, { grace_period_s: 3600 })).json<Created>();
      assert.equal(await status(app, first.token), 200);
      const third = await rotate(app, admin.auth, first.id, { grace_period_s: 0 });
      assert.equal(third.statusCode, 200, third.body);
      assert.equal(await status(app, first.token), 401);
      assert.equal(await status(app, second.token), 401);
      assert.equal(await status(app, third.json<Created>().token), 200);
    });

    it(
      'rotating during a grace period ends it at once: the first secret is refused, the second gets its own ' +
        'grace period, the third is current; never more than two live secrets',
      async (t) => {
        const { app, admin, clock } = await setup(t);
        const first = await create(app, admin.auth, { name: 'ci', scopes: ['apps:read'] });
        const second = (await rotate(app, admin.auth, first.id, { grace_period_s: 3600 })).json<Created>();
        assert.equal(await status(app, first.token), 200, 'cached, in its grace period');
        clock.now += 60_000;
        const third = (await rotate(app, admin.auth, first.id, { grace_period_s: 120 })).json<Created>();
        const live = async () => {
          const works: boolean[] = [];
          for (const x of [first, second, third]) works.push((await status(app, x.token)) === 200);
          return works;
        };
        assert.deepEqual(await live(), [false, true, true], 'the first is refused though its hour is not over');
        clock.now += 119_999;
        assert.deepEqual(await live(), [false, true, true], 'the second keeps its own grace period (120 s)');
        clock.now += 1;
        assert.deepEqual(await live(), [false, false, true]);
        // However many rotations, at most two secrets at once.
        const secrets = [third.token];
        for (let i = 0; i < 4; i++) {
          const next = await rotate(app, admin.auth, first.id, { grace_period_s: 86_400 });
          assert.equal(next.statusCode, 200, next.body);
          secrets.push(next.json<Created>().token);
          const working = [];
          for (const s of secrets) if ((await status(app, s)) === 200) working.push(s);
          assert.deepEqual(working, secrets.slice(-2), `after rotation ${i + 1}: the last two only`);
        }
      },
    );

    it('expires_at: kept unless given, set with the creation rules, 422 when past or too far', async (t) => {
      const { app, admin, clock } = await setup(t, { TOKEN_MAX_LIFETIME_DAYS: '30' });
      const inTenDays = new Date(clock.now + 10 * DAY).toISOString();
      const token = await create(app, admin.auth, { name: 'x', scopes: ['apps:read'], expires_at: inTenDays });
      const kept = await rotate(app, admin.auth, token.id, {});
      assert.equal(kept.json<Created>().expires_at, inTenDays, 'kept');
      const inTwenty = new Date(clock.now + 20 * DAY).toISOString();
      const set = await rotate(app, admin.auth, token.id, { expires_at: inTwenty });
      assert.equal(set.statusCode, 200, set.body);
      assert.equal(set.json<Created>().expires_at, inTwenty);
      const listed = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${token.id}`, headers: admin.auth });
      assert.equal(listed.json<{ expires_at: string }>().expires_at, inTwenty);
      const never = await rotate(app, admin.auth, token.id, { expires_at: null });
      assert.equal(never.json<Created>().expires_at, null, 'null: never (the caller never expires)');
      for (const bad of [
        new Date(clock.now - 1000).toISOString(),
        new Date(clock.now).toISOString(),
        new Date(clock.now + 31 * DAY).toISOString(),
        '2030-02-30T00:00:00Z',
        'tomorrow',
        5,
      ]) {
        const res = await rotate(app, admin.auth, token.id, { expires_at: bad });
        assert.equal(res.statusCode, 422, `${String(bad)}: ${res.body}`);
        assert.deepEqual(
          res.json<{ errors: { pointer: string }[] }>().errors.map((e) => e.pointer),
          ['/expires_at'],
        );
      }
      const stillNever = await app.inject({
        method: 'GET',
        url: `/api/v1/api-tokens/${token.id}`,
        headers: admin.auth,
      });
      assert.equal(stillNever.json<{ expires_at: null }>().expires_at, null, 'a refused rotation changed nothing');
    });

    it('the rotated secret never outlives the caller: a later expires_at is 422; absent, capped', async (t) => {
      const { app, admin, clock } = await setup(t);
      const callerExpiry = new Date(clock.now + 2 * DAY).toISOString();
      const caller = await create(app, admin.auth, {
        name: 'short-lived',
        scopes: ['api-tokens:write', 'apps:read'],
        expires_at: callerExpiry,
      });
      const auth = { authorization: `Bearer ${caller.token}` };
      const forever = await mintToken(app, ['apps:read'], 'forever');
      for (const bad of [new Date(clock.now + 3 * DAY).toISOString(), null]) {
        const res = await rotate(app, auth, forever.id, { expires_at: bad });
        assert.equal(res.statusCode, 422, res.body);
        assert.match(res.json<{ errors: { detail: string }[] }>().errors[0]!.detail, /never outlives its creator/);
      }
      assert.equal(await status(app, forever.secret), 200, 'refused rotations change nothing');
      const capped = await rotate(app, auth, forever.id);
      assert.equal(capped.statusCode, 200, capped.body);
      assert.equal(capped.json<Created>().expires_at, callerExpiry, "capped at the caller's expiry");
      const sooner = await mintToken(app, ['apps:read'], 'sooner');
      const within = new Date(clock.now + DAY).toISOString();
      assert.equal((await rotate(app, admin.auth, sooner.id, { expires_at: within })).statusCode, 200);
      const keeps = await rotate(app, auth, sooner.id);
      assert.equal(keeps.json<Created>().expires_at, within, 'an earlier expiry is kept');
    });

    it('an expired token is not rotated (409 CONFLICT); nothing changes', async (t) => {
      const { app, admin, clock } = await setup(t);
      const token = await create(app, admin.auth, {
        name: 'x',
        scopes: ['apps:read'],
        expires_at: new Date(clock.now + 60_000).toISOString(),
      });
      clock.now += 60_000;
      for (const payload of [{}, { expires_at: new Date(clock.now + DAY).toISOString() }]) {
        const res = await rotate(app, admin.auth, token.id, payload);
        assert.equal(res.statusCode, 409, res.body);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        assert.equal(res.json<{ code: string }>().code, 'CONFLICT');
        assert.match(res.json<{ detail: string }>().detail, /expired/);
      }
      const one = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${token.id}`, headers: admin.auth });
      assert.equal(one.json<{ expires_at: string }>().expires_at, token.expires_at);
      assert.equal(await status(app, token.token), 401);
    });

    it('a token rotates itself: the answer holds its new secret; the old one is refused after the grace', async (t) => {
      const { app, clock } = await setup(t);
      const self = await mintToken(app, ['api-tokens:write', 'apps:read'], 'self');
      const res = await rotate(app, self.auth, self.id, { grace_period_s: 30 });
      assert.equal(res.statusCode, 200, res.body);
      const next = res.json<Created>();
      assert.equal(next.id, self.id);
      assert.equal(await status(app, self.secret), 200, 'the old secret, in its grace period');
      const again = await rotate(app, { authorization: `Bearer ${next.token}` }, self.id);
      assert.equal(again.statusCode, 200, 'grace 0 with the new secret');
      assert.equal(await status(app, self.secret), 401, 'the grace period ended');
      assert.equal(await status(app, next.token), 401);
      const last = again.json<Created>().token;
      clock.now += 60_000;
      assert.equal(await status(app, last), 200);
    });

    it('no escalation: 403 for a token it could not delete, or without api-tokens:write; no change', async (t) => {
      const { app, admin } = await setup(t);
      const limited = await mintToken(app, ['api-tokens:write', 'apps:read']);
      const target = await create(app, admin.auth, { name: 'wide', scopes: ['apps:write', 'images:read'] });
      const res = await rotate(app, limited.auth, target.id, { grace_period_s: 60 });
      assert.equal(res.statusCode, 403, res.body);
      const body = res.json<{ code: string; missing_scopes: string[]; detail: string }>();
      assert.equal(body.code, 'INSUFFICIENT_SCOPE');
      assert.deepEqual(body.missing_scopes, ['apps:write', 'images:read']);
      assert.match(body.detail, /rotate/);
      const reader = await mintToken(app, ['api-tokens:read', 'apps:write', 'images:read']);
      const noWrite = await rotate(app, reader.auth, target.id);
      assert.equal(noWrite.statusCode, 403);
      assert.deepEqual(noWrite.json<{ missing_scopes: string[] }>().missing_scopes, ['api-tokens:write']);
      assert.equal((await rotate(app, {}, target.id)).statusCode, 401);
      assert.equal(await status(app, target.token), 200, 'the secret was not changed');
    });

    it('unknown ids are 404; the body: none is {}, and it is read as strictly as any JSON body', async (t) => {
      const { app, admin } = await setup(t);
      const token = await create(app, admin.auth, { name: 'x', scopes: ['apps:read'] });
      for (const id of ['tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H', 'nope', '%00']) {
        const res = await rotate(app, admin.auth, id, {});
        assert.equal(res.statusCode, 404, id);
        assert.equal(res.json<{ code: string }>().code, 'NOT_FOUND');
      }
      // No body at all (what `curl -X POST` sends): {}, grace 0.
      let current = token.token;
      for (const headers of [{}, { 'content-length': '0' }]) {
        const res = await app.inject({
          method: 'POST',
          url: `/api/v1/api-tokens/${token.id}/rotate`,
          headers: { ...admin.auth, ...headers },
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(await status(app, current), 401);
        current = res.json<Created>().token;
      }
      const raw = (payload: string | Buffer, contentType?: string) =>
        app.inject({
          method: 'POST',
          url: `/api/v1/api-tokens/${token.id}/rotate`,
          headers: { ...admin.auth, ...(contentType !== undefined ? { 'content-type': contentType } : {}) },
          payload,
        });
      const refusals: [string | Buffer, string | undefined, number, string][] = [
        ['', 'application/json', 400, 'MALFORMED_JSON'],
        ['{', 'application/json', 400, 'MALFORMED_JSON'],
        ['{"grace_period_s": 1}', 'text/plain', 415, 'UNSUPPORTED_MEDIA_TYPE'],
        ['{"grace_period_s": 1}', 'application/merge-patch+json', 415, 'UNSUPPORTED_MEDIA_TYPE'],
        ['{"grace_period_s": 1}', undefined, 415, 'UNSUPPORTED_MEDIA_TYPE'],
        ['null', 'application/json', 422, 'VALIDATION_FAILED'],
        ['[]', 'application/json', 422, 'VALIDATION_FAILED'],
      ];
      for (const [payload, type, code, name] of refusals) {
        const res = await raw(payload, type);
        assert.equal(res.statusCode, code, `${String(payload)} as ${type}: ${res.body}`);
        assert.equal(res.json<{ code: string }>().code, name);
      }
      const invalid: [object, string][] = [
        [{ grace_period_s: -1 }, '/grace_period_s'],
        [{ grace_period_s: 86_401 }, '/grace_period_s'],
        [{ grace_period_s: 1.5 }, '/grace_period_s'],
        [{ grace_period_s: '60' }, '/grace_period_s'],
        [{ grace_period_s: null }, '/grace_period_s'],
        [{ name: 'renamed' }, '/name'],
        [{ scopes: ['apps:read'] }, '/scopes'],
      ];
      for (const [payload, pointer] of invalid) {
        const res = await rotate(app, admin.auth, token.id, payload);
        assert.equal(res.statusCode, 422, `${JSON.stringify(payload)}: ${res.body}`);
        assert.ok(
          res.json<{ errors: { pointer: string }[] }>().errors.some((e) => e.pointer === pointer),
          `${JSON.stringify(payload)}: ${res.body}`,
        );
      }
      assert.equal(await status(app, current), 200, 'no refused request rotated anything');
      const max = await rotate(app, admin.auth, token.id, { grace_period_s: 86_400 });
      assert.equal(max.statusCode, 200, 'a day is the longest grace period');
    });

    it('writes api_token.rotated: actor, ip, user agent, request id, grace period; never a secret', async (t) => {
      const { app, admin, store, clock, logs } = await setup(t);
      const token = await create(app, admin.auth, { name: 'audited', scopes: ['apps:read'] });
      const res = await app.inject({
        method: 'POST',
        url: `/api/v1/api-tokens/${token.id}/rotate`,
        headers: { ...admin.auth, 'user-agent': 'rotator/1.0', 'x-request-id': 'req-rotate-1' },
        remoteAddress: '203.0.113.7',
        payload: { grace_period_s: 90 },
      });
      assert.equal(res.statusCode, 200, res.body);
      const rotated = res.json<Created>();
      const events = await store.audit.list({ targetId: token.id, action: 'api_token.rotated', limit: 10 });
      assert.equal(events.length, 1);
      const event = events[0]!;
      assert.equal(event.actorType, 'api_token');
      assert.equal(event.actorId, admin.id);
      assert.equal(event.actorName, 'admin');
      assert.equal(event.targetType, 'api_token');
      assert.equal(event.targetName, 'audited');
      assert.equal(event.ip, '203.0.113.7');
      assert.equal(event.userAgent, 'rotator/1.0');
      // The id infracat gave the request: a client's own X-Request-Id is not taken (no TRUST_PROXY).
      assert.equal(event.requestId, res.headers['x-request-id']);
      assert.notEqual(event.requestId, 'req-rotate-1');
      assert.equal(event.occurredAt, clock.now);
      assert.deepEqual(event.details, {
        grace_period_s: 90,
        previous_secret_valid_until: new Date(clock.now + 90_000).toISOString(),
        expires_at: null,
      });
      assertNoSecret(JSON.stringify(event), [token.token, rotated.token]);
      const line = logs.records().find((r) => r.audit === true && JSON.stringify(r).includes('api_token.rotated'));
      assert.ok(line !== undefined, 'the audit log line');
      assertNoSecret(logs.text, [token.token, rotated.token, admin.secret]);
      // A refused rotation writes none.
      await rotate(app, admin.auth, token.id, { grace_period_s: -1 });
      assert.equal((await store.audit.list({ targetId: token.id, action: 'api_token.rotated', limit: 10 })).length, 1);
    });
  });
}
