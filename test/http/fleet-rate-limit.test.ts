// One rate limit across instances: several apps on one database (in-process "instances",
// each with its own store, heartbeating on its timer), a round-robin client in the test
// playing the balancer and sending a burst. A token (or an anonymous address) gets its
// configured limit per window across the fleet, not N times it, as instances leave, stop
// beating or come; a storage outage falls back to the split; the RateLimit fields say what
// the client can expect across the fleet. Paced clients pinned, spread and moving, and
// the account limit: test/fleet/limits.test.ts.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { FleetRegistry, shareOf } from '../../src/fleet/registry.js';
import { windowEnd, windowOffset } from '../../src/http/rate-limit.js';
import type { App } from '../../src/http/types.js';
import { build, mintToken, type LogCapture } from '../helpers/app.js';
import { admin, backends, postgresBackend, type Backend, type BackendDb } from '../helpers/backends.js';
import { parseExposition, value } from '../helpers/prometheus.js';
import { sleep, until } from '../helpers/until.js';

const QUOTA = 20; // not a multiple of 3: the shares are 7, 7 and 6
const WINDOW_S = 600;
const STATE = /^"(token|anonymous)";r=(\d+);t=(\d+)$/;

function state(res: LightMyRequestResponse): { r: number; t: number } {
  const m = STATE.exec(String(res.headers.ratelimit));
  assert.ok(m, `RateLimit: ${String(res.headers.ratelimit)}`);
  return { r: Number(m[2]), t: Number(m[3]) };
}

interface Fleet {
  db: BackendDb;
  apps: App[];
  logs: LogCapture[];
}

/** `n` instances on one fresh database, heartbeating every 300 ms, once each sees all `n`. */
async function fleetOf(t: TestContext, backend: Backend, n: number, env: Record<string, string> = {}): Promise<Fleet> {
  const db = await backend.fresh(t);
  const apps: App[] = [];
  const logs: LogCapture[] = [];
  for (let i = 0; i < n; i++) {
    const built = await build(t, {
      store: db.open(),
      env: {
        DATABASE_URL: db.url,
        INSTANCE_HEARTBEAT_MS: '300',
        RATE_LIMIT: String(QUOTA),
        RATE_LIMIT_ANONYMOUS: String(QUOTA),
        // The account limit has its own tests (test/fleet/limits.test.ts).
        RATE_LIMIT_ACCOUNT: '0',
        RATE_LIMIT_WINDOW_S: String(WINDOW_S),
        ...env,
      },
    });
    // An instance registers in the fleet once it listens.
    await built.app.listen({ port: 0, host: '127.0.0.1' });
    apps.push(built.app);
    logs.push(built.logs);
  }
  await until(() => apps.every((a) => a.infracat.fleet.count === n), `every instance sees ${n}`);
  return { db, apps, logs };
}

type Client = { headers?: Record<string, string>; remoteAddress?: string };

const get = (app: App, client: Client) =>
  app.inject({
    method: 'GET',
    url: '/api/v1/regions',
    headers: client.headers ?? {},
    remoteAddress: client.remoteAddress ?? '10.7.7.7',
  });

/** A client that saw no admission for this long has had what the window gives it: five syncs. */
const SETTLE_MS = 1000;

/**
 * The answers that were not 429 within one window, for a client sending a burst of
 * `3 x QUOTA` requests round-robin over `apps`, then going on (one request every 50 ms)
 * until SETTLE_MS pass without an admission: between two syncs an instance judges on what
 * it last learnt of the others, and a unit it held back while their counts were in flight
 * is admitted once it learns them. The first answer's `t` says how long its window has
 * left; with too little left for the rest to fit in, the count starts over in the next one.
 */
async function admittedInOneWindow(apps: App[], client: Client): Promise<number> {
  const first = await get(apps[0]!, client);
  let admitted = first.statusCode === 200 ? 1 : 0;
  const { t } = state(first);
  if (t < 20) {
    await sleep((t + 1) * 1000);
    admitted = 0;
  }
  let lastAdmittedAt = Date.now();
  for (let i = 1; i < 3 * QUOTA || Date.now() - lastAdmittedAt < SETTLE_MS; i++) {
    if (i >= 3 * QUOTA) await sleep(50);
    const res = await get(apps[i % apps.length]!, client);
    assert.ok(res.statusCode === 200 || res.statusCode === 429, `${res.statusCode} ${res.body}`);
    if (res.statusCode === 200) {
      admitted += 1;
      lastAdmittedAt = Date.now();
    }
    assert.ok(admitted <= 3 * QUOTA, 'the admissions stop');
  }
  return admitted;
}

function assertWithinBand(admitted: number, what: string): void {
  assert.ok(
    admitted >= 0.9 * QUOTA && admitted <= 1.2 * QUOTA,
    `${what}: ${admitted} admitted in one window for a limit of ${QUOTA}`,
  );
}

for (const backend of backends()) {
  describe(`one rate limit across instances (${backend.name})`, () => {
    it(
      '3 instances behind a round-robin balancer: a token gets 0.9x-1.2x ' +
        'its limit per window, an anonymous address too',
      async (t) => {
        const { apps } = await fleetOf(t, backend, 3);
        const tok = await mintToken(apps[0]!, ['regions:read']);
        const admitted = await admittedInOneWindow(apps, { headers: tok.auth });
        assertWithinBand(admitted, 'token');
        assertWithinBand(await admittedInOneWindow(apps, { remoteAddress: '10.1.2.3' }), 'anonymous');
        for (const app of apps) {
          const metrics = parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body);
          assert.equal(value(metrics, 'infracat_fleet_instances'), 3);
          assert.equal(value(metrics, 'infracat_fleet_heartbeat_failures_total'), 0);
          assert.ok(value(metrics, 'infracat_fleet_heartbeat_age_seconds')! >= 0);
        }
      },
    );

    it(
      'rebalancing: after a graceful stop the other two enforce half each; ' +
        'an instance whose heartbeats stop counts until its row expires',
      async (t) => {
        const { db, apps } = await fleetOf(t, backend, 3);
        const tok = await mintToken(apps[0]!, ['regions:read']);
        await apps[2]!.close();
        const two = apps.slice(0, 2);
        await until(() => two.every((a) => a.infracat.fleet.count === 2), 'the other two see 2');
        assert.deepEqual(
          two.map((a) => shareOf(QUOTA, a.infracat.fleet)),
          [10, 10],
        );
        assertWithinBand(await admittedInOneWindow(two, { headers: tok.auth }), 'two instances');

        // A frozen instance: its row was written once and is never refreshed nor deleted.
        const store = db.open();
        t.after(() => store.close());
        const frozen = new FleetRegistry({ store: store.instances, heartbeatMs: 1000 });
        await frozen.beat();
        // Fresh while the window is measured (on a busy machine that can outlast the row's
        // 3 s of life), then frozen: no more beats, no leave.
        const keepFresh = setInterval(() => void frozen.beat(), 250);
        try {
          await until(() => two.every((a) => a.infracat.fleet.count === 3), 'the frozen one counts while fresh');
          const twoShares = two.reduce((sum, a) => sum + shareOf(QUOTA, a.infracat.fleet), 0);
          assert.ok(twoShares === 13 || twoShares === 14, `two of the shares 7, 7, 6: ${twoShares}`);
          const whileFrozen = await admittedInOneWindow(two, {
            headers: (await mintToken(apps[0]!, ['regions:read'])).auth,
          });
          assert.ok(
            two.every((a) => a.infracat.fleet.count === 3),
            'still three while it beats',
          );
          assertWithinBand(whileFrozen, 'while the frozen one counts');
        } finally {
          clearInterval(keepFresh);
        }
        await until(() => two.every((a) => a.infracat.fleet.count === 2), 'the frozen one drops out after 3 s');
        assertWithinBand(
          await admittedInOneWindow(two, { headers: (await mintToken(apps[0]!, ['regions:read'])).auth }),
          'after the frozen one dropped out',
        );

        // And one that comes: the others shrink their shares at their next heartbeat.
        const { app: third } = await build(t, {
          store: db.open(),
          env: {
            DATABASE_URL: db.url,
            INSTANCE_HEARTBEAT_MS: '300',
            RATE_LIMIT: String(QUOTA),
            RATE_LIMIT_ACCOUNT: '0',
            RATE_LIMIT_WINDOW_S: String(WINDOW_S),
          },
        });
        await third.listen({ port: 0, host: '127.0.0.1' });
        const three = [...two, third];
        await until(() => three.every((a) => a.infracat.fleet.count === 3), 'all three see 3');
        assertWithinBand(
          await admittedInOneWindow(three, { headers: (await mintToken(apps[0]!, ['regions:read'])).auth }),
          'after a third came',
        );
      },
    );

    it(
      'RateLimit fields: the fleet quota in the policy; r what the fleet still admits as the answering ' +
        'instance knows it (0 on a refusal); t to the aligned window end',
      async (t) => {
        const { apps } = await fleetOf(t, backend, 3);
        const tok = await mintToken(apps[0]!, ['regions:read']);
        const ts: number[] = [];
        let refused: LightMyRequestResponse | undefined;
        for (let i = 0; i < 3 * QUOTA && refused === undefined; i++) {
          const res = await get(apps[i % 3]!, { headers: tok.auth });
          assert.equal(res.headers['ratelimit-policy'], `"token";q=${QUOTA};w=${WINDOW_S}`, 'the fleet quota');
          const { r, t: left } = state(res);
          ts.push(left);
          if (res.statusCode === 429) refused = res;
          else assert.ok(r >= 0 && r <= QUOTA - 1, `r=${r}`);
        }
        assert.ok(refused !== undefined, 'refused within the burst');
        assert.equal(state(refused).r, 0);
        assert.equal(Number(refused.headers['retry-after']), state(refused).t, 'Retry-After is the end of the window');
        // Every instance's window for this token ends at the same moment (t may straddle a second).
        assert.ok(Math.max(...ts) - Math.min(...ts) <= 1, `t values ${ts.join(',')}`);
        assert.ok(ts.every((x) => x >= 1 && x <= WINDOW_S));
      },
    );
  });
}

describe('one instance: the share is the whole limit, headers as before', () => {
  it('r counts down from q-1 to 0, then 429 with r=0; t is the time to the aligned window end', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT_ANONYMOUS: '5', RATE_LIMIT_WINDOW_S: '60' } });
    assert.equal(app.infracat.fleet.count, 1);
    const before = Date.now();
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await app.inject({ url: '/api/v1/plans', remoteAddress: '10.3.3.3' }));
    const after = Date.now();
    assert.deepEqual(
      answers.map((a) => [a.statusCode, state(a).r]),
      [
        [200, 4],
        [200, 3],
        [200, 2],
        [200, 1],
        [200, 0],
        [429, 0],
      ],
    );
    // The window of this address is the one windowEnd() places it in, whatever the moment.
    const offset = windowOffset('a:10.3.3.3', 60_000);
    const ends = new Set([windowEnd(before, 60_000, offset), windowEnd(after, 60_000, offset)]);
    for (const a of answers) {
      const { t } = state(a);
      assert.ok(
        [...ends].some((end) => t >= Math.ceil((end - after) / 1000) && t <= Math.ceil((end - before) / 1000)),
        `t=${t}`,
      );
    }
  });
});

describe('aligned windows', () => {
  it('a key has the same offset in every process (no per-process seed); offsets spread over the window', () => {
    // Pinned: an offset computed differently by another instance (or release) would misalign its windows.
    assert.equal(windowOffset('a:10.0.0.1', 60_000), 23_530);
    const buckets = new Array<number>(10).fill(0);
    for (let i = 0; i < 2000; i++) buckets[Math.floor(windowOffset(`t:tok_${i}`, 60_000) / 6000)]! += 1;
    assert.ok(Math.min(...buckets) > 100, `spread: ${buckets.join(',')}`);
  });

  it('windowEnd: windows of one key are contiguous, w long, and every moment is in exactly one', () => {
    const w = 60_000;
    for (const offset of [0, 1, 38_285, w - 1]) {
      for (const now of [0, offset, offset + 1, 1_800_000_000_000, 1_800_000_000_000 + offset, 1_800_000_059_999]) {
        const end = windowEnd(now, w, offset);
        assert.ok(end > now && end - now <= w, `${now} ${offset}`);
        assert.equal((end - offset) % w, 0);
        assert.equal(windowEnd(end, w, offset), end + w, 'the next window starts where this one ends');
        assert.equal(windowEnd(end - 1, w, offset), end);
      }
    }
  });
});

describe('a storage outage keeps the split', () => {
  it(
    'PostgreSQL read-only: heartbeats fail (counted, one warning a minute), ' +
      'every instance keeps 3, a token still gets its limit once; recovery',
    async (t) => {
      const pg = postgresBackend(t);
      if (pg === undefined) return;
      const { db, apps, logs } = await fleetOf(t, pg, 3);
      const tok = await mintToken(apps[0]!, ['regions:read']);
      const name = new URL(db.url).pathname.slice(1);
      const cut =
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity ' +
        `WHERE datname = '${name}' AND pid <> pg_backend_pid()`;
      await admin(pg.adminUrl, `ALTER DATABASE ${name} SET default_transaction_read_only = on`);
      await admin(pg.adminUrl, cut);
      await until(() => apps.every((a) => a.infracat.fleet.stats.failures >= 3), 'heartbeats fail on every instance');
      assert.deepEqual(
        apps.map((a) => a.infracat.fleet.count),
        [3, 3, 3],
        'the last known count, not "alone"',
      );
      assertWithinBand(await admittedInOneWindow(apps, { headers: tok.auth }), 'during the outage');
      for (const app of apps) {
        const metrics = parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body);
        assert.equal(value(metrics, 'infracat_fleet_instances'), 3);
        assert.ok(value(metrics, 'infracat_fleet_heartbeat_failures_total')! >= 3);
      }
      // One warning per instance however many heartbeats failed (all within the minute).
      for (const capture of logs) {
        const warnings = capture.records().filter((r) => String(r.msg).startsWith('instance heartbeat failed'));
        assert.equal(warnings.length, 1);
        assert.equal(warnings[0]!.instances, 3);
      }

      await admin(pg.adminUrl, `ALTER DATABASE ${name} RESET default_transaction_read_only`);
      await admin(pg.adminUrl, cut);
      const since = Date.now();
      await until(() => apps.every((a) => a.infracat.fleet.stats.lastBeatAt > since), 'heartbeats succeed again');
      assert.deepEqual(
        apps.map((a) => a.infracat.fleet.count),
        [3, 3, 3],
      );
    },
  );
});
