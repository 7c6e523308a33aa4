// The token endpoints of the spec, on both backends: happy paths, input rules,
// authentication and authorization, escalation, the cap, expiry and current.
import assert from 'node:assert/strict';
import type { Store } from '../../src/storage/types.js';
import { describe, it } from 'node:test';
import { checkSecret, generateSecret, hashSecret } from '../../src/tokens/format.js';
import { TOKEN_ID_PATTERN } from '../../src/tokens/ids.js';
import { backends } from '../helpers/backends.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { ev } from '../helpers/audit.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

for (const backend of backends()) {
  describe(`API tokens on ${backend.name}`, () => {
    async function setup(
      t: Parameters<typeof backend.fresh>[0],
      env: Record<string, string> = {},
      now?: () => number,
      seed?: (store: Store) => Promise<void>,
    ) {
      const db = await backend.fresh(t);
      if (seed !== undefined) {
        const s = db.open();
        await seed(s);
        await s.close();
      }
      const built = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, ...env },
        ...(now !== undefined ? { now } : {}),
      });
      const admin = await mintToken(built.app, ['api-tokens:write', 'apps:write', 'images:read'], 'admin');
      return { ...built, db, admin };
    }

    it('POST creates: 201, Location, exactly id/name/token/scopes/created_at/expires_at, no-store', async (t) => {
      const { app, admin } = await setup(t);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: admin.auth,
        payload: { name: '  deploy bot  ', scopes: ['apps:read'] },
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.headers['cache-control'], 'no-store');
      const body = res.json<Record<string, unknown>>();
      assert.deepEqual(Object.keys(body).sort(), [
        'allowed_cidrs',
        'created_at',
        'enabled',
        'expires_at',
        'id',
        'name',
        'not_before',
        'scopes',
        'token',
      ]);
      assert.equal(res.headers.location, `/api/v1/api-tokens/${String(body.id)}`);
      assert.match(String(body.id), TOKEN_ID_PATTERN);
      assert.equal(body.name, 'deploy bot', 'name is trimmed');
      assert.deepEqual(body.scopes, ['apps:read']);
      assert.match(String(body.created_at), ISO);
      assert.equal(body.expires_at, null);
      assert.ok(!('last_used_at' in body), 'the create response has no last_used_at');
      assert.deepEqual(checkSecret(String(body.token), 'icat'), { ok: true });
    });

    it('the secret is shown once: never in list, get or current bodies', async (t) => {
      const { app, admin } = await setup(t);
      const created = (
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'x', scopes: ['api-tokens:read'] },
        })
      ).json<{ id: string; token: string }>();
      const auth = { authorization: `Bearer ${created.token}` };
      for (const url of ['/api/v1/api-tokens', `/api/v1/api-tokens/${created.id}`, '/api/v1/api-tokens/current']) {
        const res = await app.inject({ method: 'GET', url, headers: auth });
        assert.equal(res.statusCode, 200, url);
        assert.ok(!res.body.includes(created.token), `${url} shows the secret`);
        assert.ok(!res.body.includes(created.token.slice(5, 30)), `${url} shows part of the secret`);
        assert.ok(!res.body.includes(hashSecret(created.token)), `${url} shows the hash`);
        assert.ok(!res.body.includes('"token"'), `${url} has a token field`);
      }
    });

    it('GET lists every live token with exactly the fields of a token view (no secret), oldest first', async (t) => {
      const { app, admin } = await setup(t);
      for (const name of ['a', 'b', 'c']) {
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name, scopes: ['apps:read'] },
        });
      }
      const res = await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['cache-control'], 'no-store');
      const list = res.json<Record<string, unknown>[]>();
      assert.ok(Array.isArray(list), 'a bare array');
      assert.deepEqual(
        list.map((x) => x.name),
        ['admin', 'a', 'b', 'c'],
      );
      for (const item of list) {
        assert.deepEqual(Object.keys(item).sort(), [
          'allowed_cidrs',
          'created_at',
          'enabled',
          'expires_at',
          'id',
          'last_used_at',
          'last_used_ip',
          'name',
          'not_before',
          'scopes',
        ]);
      }
      assert.equal(list[1]!.last_used_at, null, 'null until first use');
      assert.equal(list[1]!.last_used_ip, null, 'null until first use');
      assert.match(String(list[0]!.last_used_at), ISO, 'the admin token was just used');
    });

    it('DELETE answers 204, then 404; the deleted token is refused at once', async (t) => {
      const { app, admin } = await setup(t);
      const victim = await mintToken(app, ['api-tokens:read']);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: victim.auth })).statusCode,
        200,
      );
      const del = await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${victim.id}`, headers: admin.auth });
      assert.equal(del.statusCode, 204);
      assert.equal(del.body, '');
      assert.equal(del.headers['cache-control'], 'no-store');
      const again = await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${victim.id}`, headers: admin.auth });
      assert.equal(again.statusCode, 404);
      assert.equal(again.json<{ code: string }>().code, 'NOT_FOUND');
      const use = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: victim.auth });
      assert.equal(use.statusCode, 401);
      assert.match(String(use.headers['www-authenticate']), /error="invalid_token"/);
      const unknown = await app.inject({
        method: 'DELETE',
        url: '/api/v1/api-tokens/tok_00000000000000000000000000',
        headers: admin.auth,
      });
      assert.equal(unknown.statusCode, 404);
      const list = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth })).json<
        { id: string }[]
      >();
      assert.ok(!list.some((x) => x.id === victim.id));
    });

    it('GET /api-tokens/{id} returns one token or 404', async (t) => {
      const { app, admin } = await setup(t);
      const one = await mintToken(app, ['apps:read'], 'one');
      const res = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${one.id}`, headers: admin.auth });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json<{ name: string }>().name, 'one');
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/tok_nope', headers: admin.auth })).statusCode,
        404,
      );
      // Found by fuzzing: PostgreSQL refuses NUL in text; such an id is simply unknown.
      for (const odd of ['%00', 'tok_%00x', '%F0%9F%92%A5', 'a%20b']) {
        assert.equal(
          (await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${odd}`, headers: admin.auth })).statusCode,
          404,
          odd,
        );
        assert.equal(
          (await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${odd}`, headers: admin.auth })).statusCode,
          404,
          odd,
        );
      }
    });

    it("GET /api-tokens/current: the caller's own metadata, for a token of any scope", async (t) => {
      const { app } = await setup(t);
      const me = await mintToken(app, ['regions:read'], 'me');
      const res = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: me.auth });
      assert.equal(res.statusCode, 200);
      const body = res.json<Record<string, unknown>>();
      assert.equal(body.id, me.id);
      assert.deepEqual(body.scopes, ['regions:read']);
      assert.match(String(body.last_used_at), ISO);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current' })).statusCode, 401);
    });

    it(
      'authentication: missing 401 + realm; malformed or wrong scheme 401; insufficient scope 403 naming ' + 'it',
      async (t) => {
        const { app } = await setup(t);
        const missing = await app.inject({ method: 'GET', url: '/api/v1/api-tokens' });
        assert.equal(missing.statusCode, 401);
        assert.equal(missing.headers['www-authenticate'], 'Bearer realm="infracat"');
        assert.equal(missing.headers['content-type'], PROBLEM_TYPE);
        assert.equal(missing.json<{ code: string }>().code, 'UNAUTHORIZED');

        const basic = await app.inject({
          method: 'GET',
          url: '/api/v1/api-tokens',
          headers: { authorization: 'Basic dTpw' },
        });
        assert.equal(basic.statusCode, 401);
        assert.equal(basic.headers['www-authenticate'], 'Bearer realm="infracat"');

        for (const bad of [
          'Bearer',
          'Bearer ',
          'Bearer not-a-token',
          `Bearer ${generateSecret('ghp')}`,
          'Bearer icat_short',
        ]) {
          const res = await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: { authorization: bad } });
          assert.equal(res.statusCode, 401, bad);
          assert.equal(
            res.json<{ code: string }>().code,
            bad.trim() === 'Bearer' ? 'UNAUTHORIZED' : 'INVALID_TOKEN',
            bad,
          );
        }
        const valid = generateSecret('icat');
        const flipped = valid.slice(0, -1) + (valid.endsWith('A') ? 'B' : 'A');
        const checksum = await app.inject({
          method: 'GET',
          url: '/api/v1/api-tokens',
          headers: { authorization: `Bearer ${flipped}` },
        });
        assert.equal(checksum.statusCode, 401);
        assert.match(
          String(checksum.headers['www-authenticate']),
          /^Bearer realm="infracat", error="invalid_token", error_description="[^"]+"$/,
        );
        const unknown = await app.inject({
          method: 'GET',
          url: '/api/v1/api-tokens',
          headers: { authorization: `Bearer ${valid}` },
        });
        assert.equal(unknown.statusCode, 401);
        assert.equal(unknown.json<{ code: string }>().code, 'INVALID_TOKEN');

        const reader = await mintToken(app, ['api-tokens:read']);
        const forbidden = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: reader.auth,
          payload: { name: 'x', scopes: ['apps:read'] },
        });
        assert.equal(forbidden.statusCode, 403);
        assert.equal(
          forbidden.headers['www-authenticate'],
          'Bearer realm="infracat", error="insufficient_scope", scope="api-tokens:write"',
        );
        const body = forbidden.json<{ code: string; missing_scopes: string[]; detail: string }>();
        assert.equal(body.code, 'INSUFFICIENT_SCOPE');
        assert.deepEqual(body.missing_scopes, ['api-tokens:write']);
        assert.match(body.detail, /api-tokens:write/);
        const del = await app.inject({
          method: 'DELETE',
          url: `/api/v1/api-tokens/${reader.id}`,
          headers: reader.auth,
        });
        assert.equal(del.statusCode, 403);
        const noRead = await mintToken(app, ['apps:write']);
        assert.equal(
          (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: noRead.auth })).statusCode,
          403,
        );
      },
    );

    it('the Bearer scheme is case-insensitive; write implies read', async (t) => {
      const { app } = await setup(t);
      const writer = await mintToken(app, ['api-tokens:write']);
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/api-tokens',
        headers: { authorization: `bearer ${writer.secret}` },
      });
      assert.equal(res.statusCode, 200);
    });

    it('tokens in the query string are refused, even valid ones', async (t) => {
      const { app, admin } = await setup(t);
      for (const param of ['access_token', 'token', 'api_key']) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/api-tokens?${param}=${admin.secret}` });
        assert.equal(res.statusCode, 400, param);
        assert.equal(res.json<{ code: string }>().code, 'TOKEN_IN_QUERY');
        assert.ok(!res.body.includes(admin.secret));
      }
    });

    it('no escalation: a token cannot create a token with a scope it lacks (write implies read)', async (t) => {
      const { app } = await setup(t);
      const limited = await mintToken(app, ['api-tokens:write', 'apps:read']);
      const up = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: limited.auth,
        payload: { name: 'x', scopes: ['apps:read', 'apps:write', 'images:read'] },
      });
      assert.equal(up.statusCode, 403);
      assert.deepEqual(up.json<{ missing_scopes: string[] }>().missing_scopes, ['apps:write', 'images:read']);
      const same = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: limited.auth,
        payload: { name: 'x', scopes: ['apps:read', 'api-tokens:read'] },
      });
      assert.equal(same.statusCode, 201, 'its own scopes, and read under its write, are fine');
      const count = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: limited.auth })).json<
        unknown[]
      >().length;
      assert.equal(count, 3, 'the refused token was not stored');
    });

    it(
      'scopes: unknown, malformed or duplicate entries answer 422 listing the valid scopes; nothing is ' + 'stored',
      async (t) => {
        const { app, admin } = await setup(t);
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'x', scopes: ['apps:read', 'apps:admin', 'billing:read', 'apps:read', 'APPS:READ'] },
        });
        assert.equal(res.statusCode, 422);
        const body = res.json<{
          code: string;
          errors: { pointer: string; detail: string }[];
          valid_scopes: string[];
        }>();
        assert.equal(body.code, 'VALIDATION_FAILED');
        assert.deepEqual(
          body.errors.map((e) => e.pointer),
          ['/scopes/1', '/scopes/2', '/scopes/3', '/scopes/4'],
        );
        assert.match(body.errors[2]!.detail, /duplicate/);
        assert.match(body.errors[1]!.detail, /unknown/);
        assert.ok(body.valid_scopes.includes('apps:write') && body.valid_scopes.includes('api-tokens:read'));
        assert.equal(body.valid_scopes.length, 14);
        for (const scopes of [[], 'apps:read', [1], null]) {
          const r = await app.inject({
            method: 'POST',
            url: '/api/v1/api-tokens',
            headers: admin.auth,
            payload: { name: 'x', scopes },
          });
          assert.equal(r.statusCode, 422, JSON.stringify(scopes));
          assert.ok(r.json<{ errors: { pointer: string }[] }>().errors.some((e) => e.pointer.startsWith('/scopes')));
        }
        const list = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth })).json<
          unknown[]
        >();
        assert.equal(list.length, 1);
      },
    );

    it('name: required, trimmed, 1-100 characters, no control characters; 422 with a pointer', async (t) => {
      const { app, admin } = await setup(t);
      const post = (payload: unknown) =>
        app.inject({ method: 'POST', url: '/api/v1/api-tokens', headers: admin.auth, payload: payload as object });
      const bad: unknown[] = [
        { scopes: ['apps:read'] },
        { name: '', scopes: ['apps:read'] },
        { name: '   \t ', scopes: ['apps:read'] },
        { name: 'x'.repeat(101), scopes: ['apps:read'] },
        { name: 'bell\u0007', scopes: ['apps:read'] },
        { name: 'line\nbreak', scopes: ['apps:read'] },
        { name: 'rtl\u202Eoverride', scopes: ['apps:read'] },
        { name: 42, scopes: ['apps:read'] },
        { name: generateSecret('icat'), scopes: ['apps:read'] },
        { name: `ci ${generateSecret('ghp')} key`, scopes: ['apps:read'] },
      ];
      for (const payload of bad) {
        const res = await post(payload);
        assert.equal(res.statusCode, 422, JSON.stringify(payload));
        assert.deepEqual(
          res.json<{ errors: { pointer: string }[] }>().errors.map((e) => e.pointer),
          ['/name'],
          JSON.stringify(payload),
        );
      }
      const pasted = generateSecret('icat');
      const refusedSecret = await post({ name: pasted, scopes: ['apps:read'] });
      assert.match(
        refusedSecret.json<{ errors: { detail: string }[] }>().errors[0]!.detail,
        /must not contain a secret/,
      );
      assert.ok(!refusedSecret.body.includes(pasted.slice(5)), 'the secret is not quoted back');
      assert.equal(
        (await post({ name: 'deploy_bot v2', scopes: ['apps:read'] })).statusCode,
        201,
        'an underscore alone is fine',
      );
      const max = await post({ name: 'é'.repeat(100), scopes: ['apps:read'] });
      assert.equal(max.statusCode, 201);
      assert.equal(max.json<{ name: string }>().name, 'é'.repeat(100));
      const padded = await post({ name: `  ${'é'.repeat(96)}  `, scopes: ['apps:read'] });
      assert.equal(padded.json<{ name: string }>().name, 'é'.repeat(96), 'surrounding whitespace is trimmed');
      const emoji = await post({ name: 'déploiement 🚀 — 生产', scopes: ['apps:read'] });
      assert.equal(emoji.json<{ name: string }>().name, 'déploiement 🚀 — 生产');
      const extra = await post({ name: 'x', scopes: ['apps:read'], admin: true });
      assert.equal(extra.statusCode, 422);
      assert.deepEqual(
        extra.json<{ errors: { pointer: string }[] }>().errors.map((e) => e.pointer),
        ['/admin'],
      );
    });

    it('a configurable cap on live tokens: 409 when reached', async (t) => {
      const { app, admin } = await setup(t, { TOKEN_MAX_LIVE: '3' });
      const post = () =>
        app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'x', scopes: ['apps:read'] },
        });
      assert.equal((await post()).statusCode, 201);
      assert.equal((await post()).statusCode, 201);
      const over = await post();
      assert.equal(over.statusCode, 409);
      assert.equal(over.json<{ code: string }>().code, 'TOKEN_LIMIT_REACHED');
    });

    it(
      'expires_at: must be RFC 3339, in the future, within the maximum lifetime; shown in create and ' + 'list',
      async (t) => {
        const { app, admin } = await setup(t, { TOKEN_MAX_LIFETIME_DAYS: '30' });
        const post = (expires_at: unknown) =>
          app.inject({
            method: 'POST',
            url: '/api/v1/api-tokens',
            headers: admin.auth,
            payload: { name: 'x', scopes: ['apps:read'], expires_at },
          });
        const inTenDays = new Date(Date.now() + 10 * 86_400_000);
        const ok = await post(inTenDays.toISOString().replace('Z', '+00:00'));
        assert.equal(ok.statusCode, 201, ok.body);
        assert.equal(ok.json<{ expires_at: string }>().expires_at, inTenDays.toISOString());
        const listed = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth })).json<
          { expires_at: string | null }[]
        >();
        assert.deepEqual(
          listed.map((x) => x.expires_at),
          [null, inTenDays.toISOString()],
        );
        for (const bad of [
          new Date(Date.now() - 1000).toISOString(),
          new Date(Date.now() + 31 * 86_400_000).toISOString(),
          'tomorrow',
          '2030-01-01',
          '2030-01-01T00:00:00',
          12,
        ]) {
          const res = await post(bad);
          assert.equal(res.statusCode, 422, String(bad));
          assert.deepEqual(
            res.json<{ errors: { pointer: string }[] }>().errors.map((e) => e.pointer),
            ['/expires_at'],
            String(bad),
          );
        }
        assert.equal((await post(null)).json<{ expires_at: null }>().expires_at, null);
      },
    );

    it(
      'an expired token is refused but stays listed (expires_at in the past) until purged after ' +
        'TOKEN_EXPIRED_RETENTION_DAYS',
      async (t) => {
        const DAY = 86_400_000;
        let clock = Date.now();
        const now = clock;
        const secret = generateSecret('icat');
        const row = (id: string, expiresAt: number) => ({
          id,
          name: id,
          scopes: ['api-tokens:read'],
          secretHash: hashSecret(`${secret}${id}`),
          createdAt: now - 40 * DAY,
          expiresAt,
          lastUsedAt: null,
          lastUsedIp: null,
          accountId: OPERATOR_ACCOUNT_ID,
          previousSecretHash: null,
          previousExpiresAt: null,
          allowedCidrs: null,
          notBefore: null,
          enabled: true,
        });
        const { app, admin, store } = await setup(
          t,
          {},
          () => clock,
          async (s) => {
            await s.tokens.create(
              { ...row('tok_expired', now - 1), secretHash: hashSecret(secret) },
              { maxLive: 100, now },
              ev(),
            );
            await s.tokens.create(row('tok_long_gone', now - 31 * DAY), { maxLive: 100, now }, ev());
            assert.notEqual(await s.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_long_gone'), null);
          },
        );
        const res = await app.inject({
          method: 'GET',
          url: '/api/v1/api-tokens/current',
          headers: { authorization: `Bearer ${secret}` },
        });
        assert.equal(res.statusCode, 401);
        assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
        assert.match(res.json<{ detail: string }>().detail, /expired/);
        const list = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth })).json<
          { id: string; expires_at: string }[]
        >();
        const shown = list.find((x) => x.id === 'tok_expired');
        assert.ok(shown !== undefined, 'an expired token is still listed, so its owner sees why it stopped working');
        assert.ok(Date.parse(shown.expires_at) < now);
        assert.ok(
          !list.some((x) => x.id === 'tok_long_gone'),
          'past the retention (30 days by default) it is not listed',
        );
        const one = await app.inject({ method: 'GET', url: '/api/v1/api-tokens/tok_expired', headers: admin.auth });
        assert.equal(one.statusCode, 200);
        assert.equal(
          (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/tok_long_gone', headers: admin.auth }))
            .statusCode,
          404,
        );

        // The background purge (once the instance listens, then hourly) removes the row past the retention.
        assert.notEqual(
          await store.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_long_gone'),
          null,
          'not purged before the instance listens',
        );
        await app.listen({ port: 0, host: '127.0.0.1' });
        await app.infracat.purger.idle();
        assert.equal(await store.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_long_gone'), null, 'purged once it listens');
        assert.notEqual(await store.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_expired'), null);
        clock = now + 31 * DAY;
        assert.equal(await app.infracat.tokens.service.purgeExpired(), 1);
        assert.equal(await store.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_expired'), null);
        const after = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth })).json<
          { id: string }[]
        >();
        assert.ok(!after.some((x) => x.id === 'tok_expired'));
      },
    );

    it('TOKEN_EXPIRED_RETENTION_DAYS=0: an expired token leaves the list at once', async (t) => {
      const { app, admin, store } = await setup(t, { TOKEN_EXPIRED_RETENTION_DAYS: '0' });
      const now = Date.now();
      await store.tokens.create(
        {
          id: 'tok_gone',
          name: 'gone',
          scopes: ['apps:read'],
          secretHash: hashSecret(generateSecret('icat')),
          createdAt: now - 10_000,
          expiresAt: now - 1,
          lastUsedAt: null,
          lastUsedIp: null,
          accountId: OPERATOR_ACCOUNT_ID,
          previousSecretHash: null,
          previousExpiresAt: null,
          allowedCidrs: null,
          notBefore: null,
          enabled: true,
        },
        { maxLive: 100, now },
        ev(),
      );
      const list = (await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: admin.auth })).json<
        { id: string }[]
      >();
      assert.ok(!list.some((x) => x.id === 'tok_gone'));
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/tok_gone', headers: admin.auth })).statusCode,
        404,
      );
    });

    it('a token that expires while cached is refused from that moment', async (t) => {
      const { app, store } = await setup(t);
      const secret = generateSecret('icat');
      const now = Date.now();
      await store.tokens.create(
        {
          id: 'tok_soon',
          name: 'soon',
          scopes: ['apps:read'],
          secretHash: hashSecret(secret),
          createdAt: now,
          expiresAt: now + 400,
          lastUsedAt: null,
          lastUsedIp: null,
          accountId: OPERATOR_ACCOUNT_ID,
          previousSecretHash: null,
          previousExpiresAt: null,
          allowedCidrs: null,
          notBefore: null,
          enabled: true,
        },
        { maxLive: 100, now },
        ev(),
      );
      const auth = { authorization: `Bearer ${secret}` };
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: auth })).statusCode,
        200,
      );
      await new Promise((r) => setTimeout(r, Math.max(0, now + 450 - Date.now())));
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: auth })).statusCode,
        401,
      );
    });

    it(
      'GET /api/v1/scopes lists the registry with a one-line description each; the registry is ' + 'configurable',
      async (t) => {
        const { app } = await setup(t);
        const res = await app.inject({ method: 'GET', url: '/api/v1/scopes' });
        assert.equal(res.statusCode, 200);
        const scopes = res.json<{ scope: string; description: string }[]>();
        assert.deepEqual(
          scopes.map((s) => s.scope),
          [
            'api-tokens:read',
            'api-tokens:write',
            'apps:read',
            'apps:write',
            'images:read',
            'plans:read',
            'regions:read',
            'catalog:read',
            'catalog:write',
            'audit-events:read',
            'accounts:read',
            'accounts:write',
            'webhooks:read',
            'webhooks:write',
          ],
          'read-only resources: the catalog kinds change through catalog:write; ' +
            'the audit trail only by the changes it records',
        );
        for (const s of scopes) assert.ok(s.description.length > 5 && !s.description.includes('\n'));
        // api-tokens:write names everything it allows, the conditions included.
        const write = scopes.find((s) => s.scope === 'api-tokens:write')!.description;
        for (const verb of [
          /\bcreate\b/i,
          /\brotate\b/i,
          /\brename\b/i,
          /\bre-scope\b/i,
          /\bdelete\b/i,
          /\benable\b/i,
          /\bdisable\b/i,
          /\bnetworks\b/i,
          /\bnot_before\b/,
        ])
          assert.match(write, verb);
        const custom = await build(t, { env: { SCOPE_RESOURCES: 'api-tokens,apps,billing' } });
        const names = (await custom.app.inject({ method: 'GET', url: '/api/v1/scopes' }))
          .json<{ scope: string }[]>()
          .map((s) => s.scope);
        assert.deepEqual(names, [
          'api-tokens:read',
          'api-tokens:write',
          'apps:read',
          'apps:write',
          'billing:read',
          'billing:write',
        ]);
      },
    );
  });
}
