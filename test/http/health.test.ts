import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { build, PROBLEM_TYPE } from '../helpers/app.js';
import { freePort } from '../helpers/embedded-pg.js';
import { backends } from '../helpers/backends.js';
import { tempDir } from '../helpers/sqlite.js';

describe('health endpoints', () => {
  it('GET /healthz answers 200 while the process is alive', async (t) => {
    const { app } = await build(t);
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, '{"status":"ok"}', 'the exact JSON text');
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  for (const backend of backends()) {
    it(`GET /readyz answers 200 on ${backend.name}, naming it`, async (t) => {
      const db = await backend.fresh(t);
      const { app } = await build(t, { store: db.open({ timeoutMs: 2000 }) });
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), { status: 'ready', storage: backend.name });
    });
  }

  it('GET /readyz answers 503 + Retry-After, promptly, when PostgreSQL is unreachable', async (t) => {
    const port = await freePort(); // nothing listens there
    const store = new PostgresStore({ url: `postgres://u:p@127.0.0.1:${port}/none`, poolMax: 2, timeoutMs: 500 });
    const { app } = await build(t, { store });
    const started = Date.now();
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    assert.ok(Date.now() - started < 3000, 'the probe does not hang');
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers['content-type'], PROBLEM_TYPE);
    assert.equal(res.headers['retry-after'], '5');
    const body = res.json<{ code: string; detail: string }>();
    assert.equal(body.code, 'STORAGE_UNAVAILABLE');
    assert.ok(!res.body.includes(String(port)), 'no connection details in the body');
    const alive = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(alive.statusCode, 200, 'liveness does not depend on storage');
  });

  it('GET /readyz answers 503 when the SQLite handle is gone', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 100 });
    await store.migrate();
    const { app } = await build(t, { store });
    await store.close();
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers['retry-after'], '5');
  });
});
