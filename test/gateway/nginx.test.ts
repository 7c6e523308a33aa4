// End to end: a real nginx protects a small upstream with auth_request pointed at a
// listening infracat, configured with the very snippet docs/forward-auth.md shows. The
// token conditions (allowed_cidrs, not_before, enabled) hold through it as through the API,
// on both backends.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import type { Store } from '../../src/storage/types.js';
import { build, changeFeedSettled, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { nginxJwtSnippet, nginxSnippet } from '../helpers/forward-auth-doc.js';
import { spoofs } from '../helpers/gateways.js';
import { ensureNginx, NGINX_MISSING, nginxConf, startNginx } from '../helpers/nginx.js';
import { rawRequest } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/sqlite.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/accounts/ids.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * How long a change made on one instance may take to be enforced by another: the bound
 * docs/contract.md states (and test/fleet/propagation.test.ts holds every instance to).
 */
const PROPAGATION_BOUND_MS = 1000;

/**
 * infracat, a recording upstream and nginx running the documented snippet (or `snippet`),
 * all listening. `answer` answers for the upstream after recording (default: `{"ok": true}`).
 * `now` and `store` go to the app (a clock, a store shared with another instance).
 */
async function startStack(
  t: TestContext,
  nginx: string,
  env: Record<string, string> = {},
  options: {
    now?: () => number;
    store?: Store;
    snippet?: () => string;
    answer?: (req: http.IncomingMessage, res: http.ServerResponse, infracatPort: number) => void;
  } = {},
) {
  const tmp = tempDir('infracat-nginx-');
  t.after(() => tmp.remove());

  // infracat, listening for real on a port the kernel picks; nginx is the only client,
  // so trust it for X-Forwarded-For.
  const { snippet = nginxSnippet, answer, ...appOptions } = options;
  const { app } = await build(t, {
    env: { TRUST_PROXY: '127.0.0.1', LAST_USED_FLUSH_MS: '600000', ...env },
    ...appOptions,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const infracatPort = (app.server.address() as AddressInfo).port;

  // The protected service: records what reaches it.
  const seen: Seen[] = [];
  const upstream = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    if (answer !== undefined) return answer(req, res, infracatPort);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => upstream.close(() => r())));
  const upstreamPort = (upstream.address() as AddressInfo).port;

  const nginxRun = await startNginx(nginx, tmp.dir, (nginxPort) => {
    const config = snippet()
      .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${infracatPort};`)
      .replace('server 127.0.0.1:3000;', `server 127.0.0.1:${upstreamPort};`)
      .replace('listen 127.0.0.1:80;', `listen 127.0.0.1:${nginxPort};`);
    return nginxConf(tmp.dir, config);
  });
  t.after(() => nginxRun.stop());
  const port = nginxRun.port;
  const base = `http://127.0.0.1:${port}`;
  return { app, seen, base, port };
}

describe('forward auth behind a real nginx', () => {
  const nginx = ensureNginx();

  it(
    'allows, denies and passes identity exactly as documented',
    {
      skip: nginx === undefined ? NGINX_MISSING : false,
    },
    async (t) => {
      const { app, seen, base } = await startStack(t, nginx!);

      const reader = await mintToken(app, ['apps:read'], 'reader ✓');
      const admin = await mintToken(app, ['api-tokens:write', 'apps:write'], 'admin');

      // Allowed: the upstream sees who is calling, never the secret, never a forged identity.
      seen.length = 0;
      const ok = await fetch(`${base}/apps/42?verbose=1`, {
        headers: {
          authorization: `Bearer ${reader.secret}`,
          'x-token-id': 'tok_FORGED',
          'x-account-id': 'acc_FORGED',
        },
      });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { ok: true });
      assert.equal(seen.length, 1);
      assert.equal(seen[0]!.url, '/apps/42?verbose=1');
      assert.equal(seen[0]!.headers['x-token-id'], reader.id);
      assert.equal(seen[0]!.headers['x-token-name'], encodeURIComponent('reader ✓'));
      assert.equal(seen[0]!.headers['x-token-scopes'], 'apps:read');
      assert.equal(seen[0]!.headers['x-account-id'], OPERATOR_ACCOUNT_ID, "the token's account, not the client's");
      assert.equal(seen[0]!.headers.authorization, undefined, 'the secret does not reach the service');

      // Writes need apps:write.
      const write = await fetch(`${base}/apps/42`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${reader.secret}` },
      });
      assert.equal(write.status, 403);
      const adminWrite = await fetch(`${base}/apps/42`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin.secret}`, 'content-type': 'application/json' },
        body: '{"name":"x"}',
      });
      assert.equal(adminWrite.status, 200);
      assert.equal(seen.at(-1)!.headers['x-token-id'], admin.id);

      // Missing and malformed: 401 with infracat's challenge.
      seen.length = 0;
      const missing = await fetch(`${base}/apps/42`);
      assert.equal(missing.status, 401);
      assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="infracat"');
      const malformed = await fetch(`${base}/apps/42`, { headers: { authorization: 'Bearer not-a-token' } });
      assert.equal(malformed.status, 401);
      assert.match(malformed.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      assert.equal(seen.length, 0, 'denied requests never reach the service');

      // last_used_at: the checks counted.
      await app.infracat.tokens.lastUsed.flush();
      const listed = await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${reader.id}`, headers: admin.auth });
      assert.notEqual(listed.json<{ last_used_at: string | null }>().last_used_at, null);

      // Just deleted: refused at once.
      const del = await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${reader.id}`, headers: admin.auth });
      assert.equal(del.statusCode, 204);
      const after = await fetch(`${base}/apps/42`, { headers: { authorization: `Bearer ${reader.secret}` } });
      assert.equal(after.status, 401);
      assert.equal(seen.length, 0);
    },
  );

  it(
    'AUTH_CHECK_JWT: nginx passes X-Token-Jwt as the Authorization of a service that verifies it with jose',
    { skip: nginx === undefined ? NGINX_MISSING : false },
    async (t) => {
      // The service: a verifier as docs/signed-tokens.md shows it, keys fetched from infracat's JWKS.
      let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
      const verified: Record<string, unknown>[] = [];
      const { app, seen, base } = await startStack(
        t,
        nginx!,
        { AUTH_CHECK_JWT: 'true' },
        {
          snippet: nginxJwtSnippet,
          answer: (req, res, infracatPort) => {
            jwks ??= createRemoteJWKSet(new URL(`http://127.0.0.1:${infracatPort}/.well-known/jwks.json`));
            const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
            jwtVerify(token, jwks, {
              issuer: 'http://localhost:8080',
              audience: 'http://localhost:8080',
              typ: 'at+jwt',
              algorithms: ['ES256'],
            }).then(
              ({ payload }) => {
                verified.push(payload);
                res.setHeader('content-type', 'application/json');
                res.end(JSON.stringify({ token_id: payload.sub, scope: payload.scope }));
              },
              (err: Error) => {
                res.statusCode = 401;
                res.end(err.message);
              },
            );
          },
        },
      );
      const reader = await mintToken(app, ['apps:read'], 'reader');
      const admin = await mintToken(app, ['api-tokens:write', 'apps:write'], 'admin');
      const read = () => fetch(`${base}/apps/7`, { headers: { authorization: `Bearer ${reader.secret}` } });

      for (let i = 0; i < 5; i++) {
        const res = await read();
        assert.equal(res.status, 200, await res.clone().text());
        assert.deepEqual(await res.json(), { token_id: reader.id, scope: 'apps:read' });
      }
      assert.equal(verified.length, 5);
      assert.equal(verified[0]!.account_id, OPERATOR_ACCOUNT_ID);
      const jwts = new Set(seen.map((r) => r.headers.authorization));
      assert.equal(jwts.size, 1, 'the same signed token for every check of the token');
      assert.ok(![...jwts][0]!.includes(reader.secret), 'the service never sees the secret');
      assert.equal(app.infracat.signed!.signer.signed.forward_auth, 1, 'signed once, not per request');

      // A forged header from the client changes nothing: nginx replaces Authorization with the JWT.
      const forged = await fetch(`${base}/apps/7`, {
        headers: { authorization: `Bearer ${reader.secret}`, 'x-token-jwt': 'forged' },
      });
      assert.equal(forged.status, 200);

      // Deleted: the check refuses it at once, so nothing reaches the service.
      seen.length = 0;
      await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${reader.id}`, headers: admin.auth });
      assert.equal((await read()).status, 401);
      assert.equal(seen.length, 0);
    },
  );

  // The conditions on each backend: on PostgreSQL the instance nginx asks hears changes
  // through LISTEN/NOTIFY, on SQLite through the file's change counter.
  for (const backend of backends()) {
    /** The stack on a fresh database of the backend, its change feed connected. */
    const stackOn = async (
      t: TestContext,
      env: Record<string, string> = {},
      options: { now?: () => number; store?: Store } = {},
    ) => {
      const db = await backend.fresh(t);
      const stack = await startStack(t, nginx!, { DATABASE_URL: db.url, ...env }, { store: db.open(), ...options });
      await changeFeedSettled(stack.app);
      return { ...stack, db };
    };

    it(
      `allowed_cidrs on ${backend.name}: judged by the address nginx reports in X-Real-IP, never the client's copy`,
      { skip: nginx === undefined ? NGINX_MISSING : false },
      async (t) => {
        const { app, seen, base } = await stackOn(t);
        const admin = await mintToken(app, ['api-tokens:write', 'apps:write'], 'admin');
        const make = async (allowed_cidrs: string[]) => {
          const res = await app.inject({
            method: 'POST',
            url: '/api/v1/api-tokens',
            headers: admin.auth,
            payload: { name: 'limited', scopes: ['apps:read'], allowed_cidrs },
          });
          assert.equal(res.statusCode, 201, res.body);
          return res.json<{ token: string }>().token;
        };
        const local = await make(['127.0.0.0/8']);
        const elsewhere = await make(['192.0.2.0/24']);
        seen.length = 0;
        const ok = await fetch(`${base}/apps/1`, { headers: { authorization: `Bearer ${local}` } });
        assert.equal(ok.status, 200);
        for (const forged of [{ 'x-real-ip': '192.0.2.1' }, { 'x-forwarded-for': '192.0.2.1' }] as Record<
          string,
          string
        >[]) {
          const res = await fetch(`${base}/apps/1`, { headers: { authorization: `Bearer ${elsewhere}`, ...forged } });
          assert.equal(res.status, 403, `${JSON.stringify(forged)} does not choose the address`);
        }
        assert.equal(seen.length, 1, 'the refused requests never reach the service');
      },
    );

    it(
      `not_before on ${backend.name}: a token not valid yet is refused through nginx until its time comes, ` +
        'then let through',
      { skip: nginx === undefined ? NGINX_MISSING : false },
      async (t) => {
        // The service's clock of token rules: the time comes without a wait.
        const clock = { now: Date.now() };
        const { app, seen, base } = await stackOn(t, {}, { now: () => clock.now });
        const admin = await mintToken(app, ['api-tokens:write', 'apps:write'], 'admin');
        const notBefore = clock.now + 3_600_000;
        const made = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'later', scopes: ['apps:read'], not_before: new Date(notBefore).toISOString() },
        });
        assert.equal(made.statusCode, 201, made.body);
        const later = made.json<{ id: string; token: string }>();
        const call = () => fetch(`${base}/apps/1`, { headers: { authorization: `Bearer ${later.token}` } });

        seen.length = 0;
        for (const at of [clock.now, notBefore - 1]) {
          clock.now = at;
          const early = await call();
          assert.equal(early.status, 401, `${notBefore - at} ms before not_before`);
          assert.match(early.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
        }
        assert.equal(seen.length, 0, 'refused before it reaches the service');

        clock.now = notBefore;
        const onTime = await call();
        assert.equal(onTime.status, 200);
        assert.equal(seen.length, 1);
        assert.equal(seen[0]!.headers['x-token-id'], later.id);

        // The refusals are counted against the token, by their reason.
        await app.infracat.tokens.usage.flush();
        const usage = await app.inject({
          method: 'GET',
          url: `/api/v1/api-tokens/${later.id}/usage`,
          headers: admin.auth,
        });
        assert.equal(usage.statusCode, 200, usage.body);
        const hours = usage.json<{ valid: number; refused_by_reason: { not_yet_valid?: number } }[]>();
        assert.equal(
          hours.reduce((n, h) => n + (h.refused_by_reason.not_yet_valid ?? 0), 0),
          2,
        );
        assert.equal(
          hours.reduce((n, h) => n + h.valid, 0),
          1,
        );
      },
    );

    it(
      `enabled on ${backend.name}: a token disabled on another instance is refused through nginx ` +
        `within ${PROPAGATION_BOUND_MS} ms; enabled again, let through`,
      { skip: nginx === undefined ? NGINX_MISSING : false },
      async (t) => {
        // Two instances on one database: nginx asks one; the changes are made on the other.
        // The first trusts a cached verification for 10 minutes, so only the change feed can
        // explain a change it enforces within the bound. The polls refused while a change is
        // on its way count as failed authentications from one address; past AUTH_FAILURE_LIMIT
        // they would answer 429, which nginx turns into a 500.
        const env = { TOKEN_CACHE_TTL_MS: '600000', AUTH_FAILURE_LIMIT: '1000000' };
        const { app: gateway, seen, base, db } = await stackOn(t, env);
        const { app: other } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...env } });
        await changeFeedSettled(other);
        const admin = await mintToken(other, ['api-tokens:write', 'apps:write'], 'admin');
        const target = await mintToken(other, ['apps:read'], 'switched');
        const status = async () =>
          (await fetch(`${base}/apps/1`, { headers: { authorization: `Bearer ${target.secret}` } })).status;
        const within = async (expected: number, what: string) => {
          const started = performance.now();
          for (;;) {
            const got = await status();
            if (got === expected) return;
            assert.equal(got, expected === 200 ? 401 : 200, `${what}: only the old or the new answer`);
            assert.ok(performance.now() - started < PROPAGATION_BOUND_MS, `${what} within ${PROPAGATION_BOUND_MS} ms`);
            await new Promise((r) => setTimeout(r, 10));
          }
        };
        const patch = async (enabled: boolean) => {
          const res = await other.inject({
            method: 'PATCH',
            url: `/api/v1/api-tokens/${target.id}`,
            headers: admin.auth,
            payload: { enabled },
          });
          assert.equal(res.statusCode, 200, res.body);
          assert.equal(res.json<{ enabled: boolean }>().enabled, enabled);
        };

        assert.equal(await status(), 200, 'verified, and cached by the instance nginx asks');
        await patch(false);
        await within(401, 'the disabled token refused through nginx');
        const refused = await fetch(`${base}/apps/1`, { headers: { authorization: `Bearer ${target.secret}` } });
        assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
        seen.length = 0;
        for (let i = 0; i < 3; i++) assert.equal(await status(), 401, 'and stays refused');
        assert.equal(seen.length, 0, 'refused before it reaches the service');

        await patch(true);
        await within(200, 'the enabled token let through nginx again');
        assert.equal(seen.at(-1)!.headers['x-token-id'], target.id);

        // The instance nginx asks counted the refusals as the token's, by their reason.
        await gateway.infracat.tokens.usage.flush();
        const usage = await other.inject({
          method: 'GET',
          url: `/api/v1/api-tokens/${target.id}/usage`,
          headers: admin.auth,
        });
        const hours = usage.json<{ refused_by_reason: { disabled?: number } }[]>();
        assert.ok(hours.reduce((n, h) => n + (h.refused_by_reason.disabled ?? 0), 0) >= 4);
      },
    );
  }

  for (const mode of ['auto', 'nginx']) {
    it(
      `AUTH_CHECK_GATEWAY=${mode}: no header a client adds, no ?scope= and no odd path gets a denied request through`,
      { skip: nginx === undefined ? 'nginx is not installed' : false },
      async (t) => {
        const { app, seen, port } = await startStack(t, nginx!, {
          AUTH_CHECK_GATEWAY: mode,
          RATE_LIMIT: '0',
          AUTH_FAILURE_LIMIT: '1000000',
        });
        const reader = await mintToken(app, ['apps:read']);
        const auth = ['Authorization', `Bearer ${reader.secret}`] as const;

        // Every spoof on a write the token may not do: nginx replaces X-Original-* and
        // clears X-Forwarded-Method/-Uri, so infracat sees DELETE /apps/x each time.
        // The scope the client puts in its query never reaches the check.
        seen.length = 0;
        for (const target of ['/apps/x', '/apps/x?scope=apps:read', '/apps/x?scope=']) {
          for (const spoof of [[], ...spoofs()]) {
            const res = await rawRequest(port, 'DELETE', target, [auth, ...spoof]);
            assert.equal(res.status, 403, `DELETE ${target} with ${JSON.stringify(spoof)}`);
          }
        }
        assert.equal(seen.length, 0, 'no denied request reached the service');

        // The same spoofs on a read the token may do change nothing either.
        for (const spoof of spoofs()) {
          const res = await rawRequest(port, 'GET', '/apps/x', [auth, ...spoof]);
          assert.equal(res.status, 200, `GET /apps/x with ${JSON.stringify(spoof)}`);
          assert.equal(seen.at(-1)?.method, 'GET');
        }

        // Paths that leave /apps, or cannot be read unambiguously, never reach the service:
        // nginx routes them elsewhere (404) or infracat refuses the check (nginx: 500).
        seen.length = 0;
        for (const target of [
          '/apps/%2e%2e/admin/%C0',
          '/apps/%2e%2e/admin',
          '/apps/..;/admin',
          '/apps/%252e%252e/admin',
          '/apps/x/..%2f..%2fadmin',
          '/apps/x%5c..%5c..%5cadmin',
          '/apps/x/%00',
          '//apps/../admin',
        ]) {
          const res = await rawRequest(port, 'GET', target, [auth]);
          assert.notEqual(res.status, 200, target);
        }
        assert.deepEqual(
          seen.map((r) => r.url),
          [],
          'none reached the service',
        );
      },
    );
  }
});
