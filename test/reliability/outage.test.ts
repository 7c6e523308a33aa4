// A PostgreSQL outage under load: catalogs keep answering 200 from memory, token
// endpoints answer 503 + Retry-After within a bound (nothing hangs), /readyz says 503;
// when PostgreSQL returns everything recovers without restarting infracat, and no
// acknowledged write is lost.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { startEmbeddedPostgres } from '../helpers/embedded-pg.js';
import { fetchAll } from '../helpers/pages.js';

const TIMEOUT_MS = 800;
// A request may wait for one connect/statement time-out plus the client-side margin.
const BOUND_MS = TIMEOUT_MS + 1000 + 700;

interface Outcome {
  url: string;
  status: number;
  ms: number;
  retryAfter: string | null;
}

describe('PostgreSQL outage under load', () => {
  it('degrades as designed and recovers by itself', { timeout: 120_000 }, async (t) => {
    const server = await startEmbeddedPostgres();
    t.after(() => server.destroy());
    const store = new PostgresStore({ url: server.url, poolMax: 4, timeoutMs: TIMEOUT_MS });
    const { app } = await build(t, {
      store,
      env: {
        DATABASE_URL: server.url,
        DATABASE_TIMEOUT_MS: String(TIMEOUT_MS),
        CATALOG_REFRESH_MS: '200',
        RATE_LIMIT: '0',
        RATE_LIMIT_ANONYMOUS: '0',
        AUTH_FAILURE_LIMIT: '1000000',
        LAST_USED_FLUSH_MS: '100',
      },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const base = `http://127.0.0.1:${port}`;
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);

    // Acknowledged before the outage.
    const before: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${base}/api/v1/api-tokens`, {
        method: 'POST',
        headers: { ...admin.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `before ${i}`, scopes: ['apps:read'] }),
      });
      assert.equal(res.status, 201);
      before.push(((await res.json()) as { id: string }).id);
    }

    const outcomes: Outcome[] = [];
    const ackedIds: string[] = [];
    let stop = false;
    const targets: { url: string; init: RequestInit | (() => RequestInit) }[] = [
      { url: '/api/v1/plans', init: {} },
      { url: '/api/v1/regions/nyc3', init: {} },
      { url: '/api/v1/api-tokens', init: { headers: admin.auth } },
      {
        url: '/api/v1/api-tokens/current',
        init: () => ({ headers: { authorization: `Bearer ${generateSecret('icat')}` } }),
      }, // never cached: needs storage
      {
        url: '/api/v1/api-tokens',
        init: {
          method: 'POST',
          headers: { ...admin.auth, 'content-type': 'application/json' },
          body: '{"name":"during","scopes":["apps:read"]}',
        },
      },
      { url: '/readyz', init: {} },
    ];
    const loop = async (w: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const target = targets[(w + i) % targets.length]!;
        const init = typeof target.init === 'function' ? target.init() : target.init;
        const started = Date.now();
        try {
          const res = await fetch(`${base}${target.url}`, { ...init, signal: AbortSignal.timeout(10_000) });
          const text = await res.text();
          if (init.method === 'POST' && res.status === 201) ackedIds.push((JSON.parse(text) as { id: string }).id);
          outcomes.push({
            url: `${init.method ?? 'GET'} ${target.url}`,
            status: res.status,
            ms: Date.now() - started,
            retryAfter: res.headers.get('retry-after'),
          });
        } catch (err) {
          outcomes.push({ url: target.url, status: -1, ms: Date.now() - started, retryAfter: String(err) });
        }
      }
    };
    const workers = Array.from({ length: 6 }, (_, w) => loop(w));

    await new Promise((r) => setTimeout(r, 500));
    const outageStarts = outcomes.length;
    await server.stop();
    await new Promise((r) => setTimeout(r, 3000));
    const during = outcomes.slice(outageStarts);
    await server.start();
    // Recovery without a restart.
    const deadline = Date.now() + 15_000;
    while ((await fetch(`${base}/readyz`)).status !== 200) {
      assert.ok(Date.now() < deadline, '/readyz recovers');
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 500));
    stop = true;
    await Promise.all(workers);

    assert.ok(during.length > 20, `load continued during the outage (${during.length} answers)`);
    assert.ok(
      during.every((o) => o.status !== -1),
      `no request failed at the connection level: ${JSON.stringify(during.find((o) => o.status === -1))}`,
    );
    assert.ok(
      during.every((o) => o.ms <= BOUND_MS),
      `no request hung past ${BOUND_MS} ms: ${JSON.stringify(during.filter((o) => o.ms > BOUND_MS).slice(0, 3))}`,
    );
    for (const o of during.filter((x) => x.url.includes('/plans') || x.url.includes('/regions')))
      assert.equal(o.status, 200, `catalog from memory: ${JSON.stringify(o)}`);
    const storageBound = during.filter((o) => o.url.includes('api-tokens') || o.url.includes('readyz'));
    assert.ok(
      storageBound.some((o) => o.status === 503),
      'storage-bound requests saw 503',
    );
    for (const o of storageBound.filter((x) => x.status === 503)) assert.equal(o.retryAfter, '5', JSON.stringify(o));
    for (const o of during) assert.ok([200, 201, 401, 503].includes(o.status), JSON.stringify(o));

    // After recovery: everything works again, and nothing acknowledged was lost.
    const listed = await fetchAll<{ id: string }>(base, '/api/v1/api-tokens?per_page=1000', admin.auth);
    const ids = new Set(listed.map((x) => x.id));
    for (const id of before) assert.ok(ids.has(id), `${id} (acknowledged before the outage) is still there`);
    assert.ok(ackedIds.length > 0);
    for (const id of ackedIds) assert.ok(ids.has(id), `${id} (acknowledged under load) is still there`);
    const created = await fetch(`${base}/api/v1/api-tokens`, {
      method: 'POST',
      headers: { ...admin.auth, 'content-type': 'application/json' },
      body: '{"name":"after","scopes":["apps:read"]}',
    });
    assert.equal(created.status, 201);
  });
});
