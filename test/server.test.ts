// The real process: `infracat serve` on both backends, and its shutdown.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, it } from 'node:test';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Drain } from '../src/http/drain.js';
import { createLogger } from '../src/logging.js';
import { SqliteStore } from '../src/storage/sqlite/store.js';
import { LogCapture } from './helpers/app.js';
import { backends } from './helpers/backends.js';
import { freePort } from './helpers/embedded-pg.js';
import { serve } from './helpers/process.js';
import { tempDir } from './helpers/sqlite.js';

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
    const { child, url } = await serve({ DATABASE_URL: `sqlite:${tmp.file()}` });
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
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 1000 });
    await store.migrate();
    const config = loadConfig({ DATABASE_URL: `sqlite:${tmp.file()}` });
    const app = buildApp({ config, store, logger: createLogger('info', new LogCapture()) });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    app.get('/test/slow', async () => {
      await gate;
      return { finished: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const inflight = getJson(port, '/test/slow');
    await new Promise((r) => setTimeout(r, 50)); // the request is now being handled
    const closing = app.close();
    await new Promise((r) => setTimeout(r, 50));
    await assert.rejects(getJson(port, '/healthz'), /ECONNREFUSED/, 'no new connections while closing');
    release();
    assert.deepEqual(await inflight, { status: 200, body: { finished: true } });
    await closing;
    await assert.rejects(store.ping(), 'storage is closed after the app');
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
  it('SIGTERM: serves on with Connection: close on every answer, /readyz 503, then refuses connections', async (t) => {
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
    await child.waitFor(/"msg":"draining/);
    // The connection pooled before the drain: its next answer is served, then closes it.
    const pooled = await get(agent, port, '/api/v1/plans');
    assert.deepEqual([pooled.status, pooled.connection, pooled.reused], [200, 'close', true]);
    // New connections are still accepted, each for one answer.
    const fresh = await get(agent, port, '/api/v1/regions');
    assert.deepEqual([fresh.status, fresh.connection, fresh.reused], [200, 'close', false]);
    const ready = await get(agent, port, '/readyz');
    assert.deepEqual([ready.status, ready.connection, ready.headers['retry-after']], [503, 'close', '5']);
    assert.equal(ready.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal((JSON.parse(ready.body) as { code: string }).code, 'SERVICE_UNAVAILABLE');
    const health = await get(agent, port, '/healthz');
    assert.deepEqual([health.status, health.connection], [200, 'close'], 'alive while draining');

    await child.waitFor(/"msg":"stopping: no new connections/);
    await assert.rejects(get(agent, port, '/healthz'), /ECONNREFUSED/);
    assert.equal((await child.exited).code, 0);
    await child.waitFor(/"msg":"shutdown complete"/);
  });

  it('an answer written during the drain closes its connection, also one whose request came before it', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 1000 });
    await store.migrate();
    const config = loadConfig({ DATABASE_URL: `sqlite:${tmp.file()}` });
    const drain = new Drain();
    const app = buildApp({ config, store, logger: createLogger('info', new LogCapture()), drain });
    t.after(() => app.close());
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    app.get('/test/slow', async () => {
      await gate;
      return { finished: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const agent = new http.Agent({ keepAlive: true });
    t.after(() => agent.destroy());
    assert.deepEqual(
      [(await get(agent, port, '/readyz')).status, (await get(agent, port, '/healthz')).connection],
      [200, 'keep-alive'],
      'not draining: ready, connections kept',
    );

    const inflight = get(agent, port, '/test/slow');
    await new Promise((r) => setTimeout(r, 50)); // the request is now being handled
    drain.start();
    release();
    const slow = await inflight;
    assert.deepEqual([slow.status, slow.connection], [200, 'close']);
    const ready = await get(agent, port, '/readyz');
    assert.deepEqual([ready.status, ready.connection], [503, 'close']);
    const catalog = await get(agent, port, '/api/v1/images');
    assert.deepEqual([catalog.status, catalog.connection], [200, 'close']);
    const unknown = await get(agent, port, '/nowhere');
    assert.deepEqual([unknown.status, unknown.connection], [404, 'close'], 'error answers too');
  });
});

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
