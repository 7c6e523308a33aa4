// End to end: a real nginx protects a small upstream with auth_request pointed at a
// listening infracat, configured with the very snippet docs/forward-auth.md shows.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { build, mintToken } from '../helpers/app.js';
import { freePort } from '../helpers/embedded-pg.js';
import { nginxSnippet } from '../helpers/forward-auth-doc.js';
import { spoofs } from '../helpers/gateways.js';
import { ensureNginx } from '../helpers/nginx.js';
import { rawRequest } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/sqlite.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/accounts/ids.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * Starts nginx on a free port and waits until nginx itself answers there. A port that
 * freePort() handed out can be taken by another test file's server before nginx binds
 * it; a check that only waited for "something listening" would then talk to that
 * server (an infracat answering 404). So a reply counts only with nginx's Server header,
 * and a bind failure picks another port.
 */
async function startNginx(
  t: TestContext,
  nginx: string,
  dir: string,
  confFor: (port: number) => string,
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const conf = path.join(dir, `nginx-${attempt}.conf`);
    writeFileSync(conf, confFor(port));
    const proc: ChildProcess = spawn(nginx, ['-p', dir, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    let exited = false;
    proc.on('exit', () => (exited = true));
    t.after(() => {
      proc.kill('SIGTERM');
    });
    const started = Date.now();
    for (;;) {
      if (exited) break;
      const server = await fetch(`http://127.0.0.1:${port}/`).then(
        (res) => res.headers.get('server') ?? '',
        () => '',
      );
      if (server.startsWith('nginx')) return port;
      if (Date.now() - started > 10_000) throw new Error(`nginx did not answer on ${port}\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const log = readFileSync(path.join(dir, 'logs/error.log'), 'utf8');
    if (attempt >= 5 || !/Address already in use/.test(stderr + log))
      throw new Error(`nginx exited\n${stderr}\n${log}`);
  }
}

/** infracat, a recording upstream and nginx running the documented snippet, all listening. */
async function startStack(t: TestContext, nginx: string, env: Record<string, string> = {}) {
  const tmp = tempDir('infracat-nginx-');
  t.after(() => tmp.remove());

  // infracat, listening for real on a port the kernel picks; nginx is the only client,
  // so trust it for X-Forwarded-For.
  const { app } = await build(t, { env: { TRUST_PROXY: '127.0.0.1', LAST_USED_FLUSH_MS: '600000', ...env } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const infracatPort = (app.server.address() as AddressInfo).port;

  // The protected service: records what reaches it.
  const seen: Seen[] = [];
  const upstream = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => upstream.close(() => r())));
  const upstreamPort = (upstream.address() as AddressInfo).port;

  for (const dir of ['logs', 'tmp']) mkdirSync(path.join(tmp.dir, dir));
  const port = await startNginx(t, nginx, tmp.dir, (nginxPort) => {
    const snippet = nginxSnippet()
      .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${infracatPort};`)
      .replace('server 127.0.0.1:3000;', `server 127.0.0.1:${upstreamPort};`)
      .replace('listen 127.0.0.1:80;', `listen 127.0.0.1:${nginxPort};`);
    return `user root;
worker_processes 1;
daemon off;
pid ${tmp.file('nginx.pid')};
error_log ${tmp.file('logs/error.log')} warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${tmp.file('tmp/body')};
  proxy_temp_path ${tmp.file('tmp/proxy')};
  fastcgi_temp_path ${tmp.file('tmp/fastcgi')};
  uwsgi_temp_path ${tmp.file('tmp/uwsgi')};
  scgi_temp_path ${tmp.file('tmp/scgi')};
${snippet}
}
`;
  });
  const base = `http://127.0.0.1:${port}`;
  return { app, seen, base, port };
}

describe('forward auth behind a real nginx', () => {
  const nginx = ensureNginx();

  it(
    'allows, denies and passes identity exactly as documented',
    {
      skip:
        nginx === undefined
          ? 'nginx is not installed (apt-get install nginx-light); under CI=true the test installs it'
          : false,
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
