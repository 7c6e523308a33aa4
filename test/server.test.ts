// The real process: `infracat serve` on both backends, and its shutdown.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Drain } from '../src/http/drain.js';
import type { App } from '../src/http/types.js';
import { createLogger } from '../src/logging.js';
import { readyWithin } from '../src/server.js';
import { SqliteStore } from '../src/storage/sqlite/store.js';
import { LogCapture } from './helpers/app.js';
import { backends } from './helpers/backends.js';
import { freePort } from './helpers/embedded-pg.js';
import { serve } from './helpers/process.js';
import { tempDir } from './helpers/sqlite.js';
import { until } from './helpers/until.js';

describe('infracat serve', () => {
  it('with no DATABASE_URL: creates ./data/infracat.sqlite and answers /healthz and /readyz', async (t) => {
    const cwd = tempDir();
    t.after(() => cwd.remove());
    const { child, url } = await serve({ DATABASE_URL: undefined }, cwd.dir);
    t.after(() => child.proc.kill('SIGKILL'));
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200);
    const ready = await fetch(`${url}/readyz`);
    assert.deepEqual(await ready.json(), { status: 'ready', storage: 'sqlite' });
    assert.ok(existsSync(path.join(cwd.dir, 'data/infracat.sqlite')));
  });

  // Under npm test this is the built command: the bundled YAML library writes the document.
  it('serves the OpenAPI document as YAML (/docs/yaml)', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const { child, url } = await serve({ DATABASE_URL: `sqlite:${tmp.file()}` });
    t.after(() => child.proc.kill('SIGKILL'));
    const res = await fetch(`${url}/docs/yaml`);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /^openapi: 3\.1\.0$/m);
    assert.match(text, /^ {2}\/api\/v1\/plans:$/m, 'the paths are there');
  });

  for (const backend of backends()) {
    it(
      `with DATABASE_URL of a new ${backend.name} database: migrates, answers, logs where (no ` + 'password)',
      async (t) => {
        const db = await backend.create();
        t.after(() => db.drop());
        const { child, url } = await serve({ DATABASE_URL: db.url });
        t.after(() => child.proc.kill('SIGKILL'));
        const ready = await fetch(`${url}/readyz`);
        assert.deepEqual(await ready.json(), { status: 'ready', storage: backend.name });
        const logs = child.stdout.join('\n');
        const password = new URL(db.url).password;
        const where = password === '' ? db.url : db.url.replace(`:${password}@`, ':***@');
        assert.ok(logs.includes(`"storage":"${where}"`), `the start is logged with ${where}`);
        if (password !== '') assert.ok(!logs.includes(password), 'the database password is not logged');
      },
    );
  }

  it('SIGTERM: stops, closes storage cleanly (no WAL left behind) and exits 0', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const file = tmp.file();
    const { child, url } = await serve({ DATABASE_URL: `sqlite:${file}` });
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    assert.ok(existsSync(`${file}-wal`), 'WAL file exists while running');
    child.proc.kill('SIGTERM');
    const { code } = await child.exited;
    assert.equal(code, 0);
    await child.waitFor(/"msg":"shutdown complete"/);
    assert.ok(!existsSync(`${file}-wal`), 'the database was closed (WAL checkpointed and removed)');
    assert.ok(readFileSync(file).length > 0);
  });

  it('SIGTERM: every access line is written before the exit, though lines are written in batches', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    // This test is the proxy (loopback, trusted): the request ids it sends name the lines.
    const { child, url } = await serve({ DATABASE_URL: `sqlite:${tmp.file()}`, TRUST_PROXY: '127.0.0.1,::1' });
    // Fewer lines than one batch holds, sent just before the signal: nothing forces them out
    // but the shutdown.
    const ids = Array.from({ length: 20 }, (_, i) => `flush-check-${i}`);
    for (const id of ids)
      assert.equal((await fetch(`${url}/healthz`, { headers: { 'x-request-id': id } })).status, 200);
    child.proc.kill('SIGTERM');
    assert.equal((await child.exited).code, 0);
    const logged = child.stdout
      .filter((l) => l.includes('"msg":"request completed"'))
      .map((l) => (JSON.parse(l) as { request_id: string }).request_id);
    assert.deepEqual(
      logged.filter((id) => id.startsWith('flush-check-')),
      ids,
    );
  });

  it('SIGINT is handled the same way', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const { child } = await serve({ DATABASE_URL: `sqlite:${tmp.file()}` });
    child.proc.kill('SIGINT');
    assert.equal((await child.exited).code, 0);
    await child.waitFor(/"signal":"SIGINT"/);
  });

  it('close() lets an in-flight request finish, refuses new connections, then closes storage', async (t) => {
    const { app, store, port, release, entered } = await listeningWithSlowRoute(t);
    const inflight = getJson(port, '/test/slow');
    await entered;
    const closing = app.close();
    await until(() => !app.server.listening, 'the listening socket closed');
    await assert.rejects(getJson(port, '/healthz'), /ECONNREFUSED/, 'no new connections while closing');
    release();
    assert.deepEqual(await inflight, { status: 200, body: { finished: true } });
    await closing;
    await assert.rejects(store.ping(), 'storage is closed after the app');
  });

  // The app arms no timer per plugin (pluginTimeout: 0, src/http/instance.ts): the start's one deadline
  // is what stops a step that never settles. Without it this ready() would wait forever.
  it('a start whose ready() never settles fails at its deadline, with what to look at', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 1000 });
    await store.migrate();
    t.after(() => store.close());
    const config = loadConfig({ DATABASE_URL: `sqlite:${tmp.file()}` });
    const stuck = buildApp({ config, store, logger: createLogger('info', new LogCapture()) });
    stuck.addHook('onReady', () => new Promise<void>(() => undefined));
    const started = performance.now();
    await assert.rejects(readyWithin(stuck, 300), {
      message:
        /^the server was not ready within 300 ms: a plugin or start-up step \(storage, the catalog\) never finished$/,
    });
    assert.ok(performance.now() - started >= 290, 'not before its deadline');

    const fine = buildApp({ config, store, logger: createLogger('info', new LogCapture()) });
    t.after(() => fine.close());
    await readyWithin(fine, 10_000);
    assert.equal((await fine.inject('/healthz')).statusCode, 200);
  });

  it('listens only once it can serve: the first connection accepted gets the catalog, /readyz is ready', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const port = await freePort();
    // Knocks from before the start until the first answer; a listen before the catalog is
    // loaded would answer an empty list (or a 503) to one of these.
    let first: { status: number; plans: unknown } | undefined;
    const knocking = (async () => {
      while (first === undefined) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/api/v1/plans`);
          first = { status: res.status, plans: await res.json() };
        } catch {
          await new Promise((r) => setTimeout(r, 2));
        }
      }
    })();
    const { child } = await serve({ DATABASE_URL: `sqlite:${tmp.file()}`, PORT: String(port) });
    t.after(() => child.proc.kill('SIGKILL'));
    await knocking;
    assert.equal(first!.status, 200);
    assert.ok(Array.isArray(first!.plans) && first!.plans.length > 0, 'the catalog is loaded');
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  });
});

describe('drain before a stop (SHUTDOWN_DRAIN_MS)', () => {
  it('SIGTERM: /readyz 503, all else as usual; then no new connection, open ones closed after an answer', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const { child, url } = await serve({ DATABASE_URL: `sqlite:${tmp.file()}`, SHUTDOWN_DRAIN_MS: '3000' });
    t.after(() => child.proc.kill('SIGKILL'));
    const port = Number(new URL(url).port);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    const before = await get(agent, port, '/api/v1/plans');
    assert.deepEqual([before.status, before.connection], [200, 'keep-alive']);

    child.proc.kill('SIGTERM');
    // Step 1: unready, all else as usual (the pooled connection stays in use).
    await child.waitFor(/"msg":"draining: \/readyz answers 503/);
    const ready = await get(agent, port, '/readyz');
    assert.deepEqual([ready.status, ready.connection, ready.headers['retry-after']], [503, 'keep-alive', '5']);
    assert.equal(ready.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal((JSON.parse(ready.body) as { code: string }).code, 'SERVICE_UNAVAILABLE');
    const served = await get(agent, port, '/api/v1/regions');
    assert.deepEqual([served.status, served.connection, served.reused], [200, 'keep-alive', true]);
    assert.equal((await get(new http.Agent(), port, '/healthz')).status, 200, 'new connections are still accepted');

    // Step 2: no new connections; the open one is answered, then closed.
    await child.waitFor(/"msg":"draining: no new connections/);
    await assert.rejects(get(new http.Agent(), port, '/healthz'), /ECONNREFUSED/);
    const last = await get(agent, port, '/api/v1/images');
    assert.deepEqual([last.status, last.connection, last.reused], [200, 'close', true]);
    assert.equal((await child.exited).code, 0);
    await child.waitFor(/"msg":"shutdown complete"/);
  });

  it('letting go: refuses new connections; answers on open ones, in flight or idle, then closes them', async (t) => {
    const drain = new Drain();
    const { app, port, release } = await listeningWithSlowRoute(t, drain);
    t.after(() => app.close());
    const agent = new http.Agent({ keepAlive: true });
    t.after(() => agent.destroy());
    assert.equal((await get(agent, port, '/readyz')).status, 200);
    drain.start();
    assert.deepEqual(
      [(await get(agent, port, '/readyz')).status, (await get(agent, port, '/healthz')).connection],
      [503, 'keep-alive'],
    );

    // A connection a balancer opened a moment ago, its request not sent yet, and one in flight.
    const idle = net.connect(port, '127.0.0.1');
    t.after(() => idle.destroy());
    await new Promise((r) => idle.once('connect', r));
    const inflight = get(agent, port, '/test/slow');
    await new Promise((r) => setTimeout(r, 50)); // both accepted by the server
    const lettingGo = drain.letGo(app.server, 10_000);
    await assert.rejects(get(new http.Agent(), port, '/healthz'), /ECONNREFUSED/, 'no longer listening');

    release();
    const slow = await inflight;
    assert.deepEqual([slow.status, slow.connection], [200, 'close'], 'the answer in flight closes its connection');
    const answer = new Promise<string>((resolve) => {
      let text = '';
      idle.on('data', (c: Buffer) => (text += c.toString('latin1')));
      idle.on('close', () => resolve(text));
      idle.on('error', () => undefined);
    });
    idle.write('GET /api/v1/plans HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 200 /, 'answered as usual, not dropped, not a 503');
    assert.match(text, /\r\nconnection: close\r\n/i);
    await lettingGo; // every connection is gone
  });
});

/**
 * The app on SQLite, listening on a free port, with GET /test/slow answering only once
 * `release()` is called: a request in flight for as long as a test needs.
 */
async function listeningWithSlowRoute(
  t: TestContext,
  drain?: Drain,
): Promise<{ app: App; store: SqliteStore; port: number; release: () => void; entered: Promise<void> }> {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 1000 });
  await store.migrate();
  const config = loadConfig({ DATABASE_URL: `sqlite:${tmp.file()}` });
  const app = buildApp({ config, store, logger: createLogger('info', new LogCapture()), drain });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let enter!: () => void;
  // Settled when a request to the slow route is being handled.
  const entered = new Promise<void>((r) => (enter = r));
  app.get('/test/slow', async () => {
    enter();
    await gate;
    return { finished: true };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return { app, store, port, release, entered };
}

interface Answer {
  status: number;
  connection: string | undefined;
  reused: boolean;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A GET through `agent` (keep-alive): whether it reused a pooled connection, and what the answer said of it. */
function get(agent: http.Agent, port: number, urlPath: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          connection: res.headers.connection,
          reused: req.reusedSocket,
          headers: res.headers,
          body,
        }),
      );
    });
    req.on('error', reject);
  });
}

function getJson(port: number, urlPath: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      let data = '';
      res.on('data', (c: Buffer) => (data += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) as unknown }));
    });
    req.on('error', reject);
  });
}
