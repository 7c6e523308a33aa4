// `npm run bench:limits`: how closely the fleet-wide rate limit holds, and what sharing the
// counts costs a request. `infracat serve` processes (the bundled dist/cli/main.js) on one
// embedded PostgreSQL (src/fleet/counts.ts, docs/deployment.md "Rate limits across the fleet").
//
// 1. Accuracy: fleets of LIMITS_INSTANCES instances (grown one size to the next) with a
//    small token limit (LIMITS_LIMIT per LIMITS_WINDOW_S, RATE_LIMIT_ACCOUNT=0 so only the
//    token's limit applies). A client sends GET /api/v1/plans with its token at 3 times its
//    limit, paced evenly (each request after the one before was answered), from this
//    process with fetch (keep-alive, a connection per instance), for LIMITS_WINDOWS whole
//    windows of its key; the 200s of each window are counted against the limit. Three
//    clients per fleet: pinned to one instance, spread round robin over all of them, and
//    moving to the next instance every 40 requests (a balancer moving its connection).
//    Reported: admitted / limit, min-max over the windows (goal 0.9x-1.2x).
// 2. Cost: the server's CPU time per request (user + system, from /proc: lib/load.ts) of a
//    token GET /api/v1/plans (limits raised: nothing refused) driven by wrk pinned to CPU 1
//    against one instance pinned to CPU 0, in a fleet of three (its counts shared every
//    200 ms) against an instance alone on another database of the same PostgreSQL (alone,
//    it writes nothing). Interleaved rounds, the order alternating; reported: fleet / alone
//    within each round, median and min-max.
//
//   LIMITS_INSTANCES=1,3,10  fleet sizes for the accuracy
//   LIMITS_LIMIT=100         the token's limit per window
//   LIMITS_WINDOW_S=2        the window
//   LIMITS_WINDOWS=3         whole windows measured per client and fleet size
//   LIMITS_ROUNDS=5          rounds of the cost comparison
//   LIMITS_SECONDS=4         seconds each server is driven per round
//   LIMITS_CONNECTIONS=32    wrk's connections
//   BENCH_JSON=file          also write the figures as JSON
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { windowEnd, windowOffset } from '../src/fleet/counts.js';
import { startInfracat, stopServer } from './lib/builds.js';
import { canPin, drive, ensureWrk, median } from './lib/load.js';
import { startEmbeddedPostgres } from '../test/helpers/embedded-pg.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');
const SIZES = (process.env.LIMITS_INSTANCES ?? '1,3,10')
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const LIMIT = Number(process.env.LIMITS_LIMIT ?? 100);
const WINDOW_S = Number(process.env.LIMITS_WINDOW_S ?? 2);
const WINDOWS = Number(process.env.LIMITS_WINDOWS ?? 3);
const ROUNDS = Number(process.env.LIMITS_ROUNDS ?? 5);
const SECONDS = Number(process.env.LIMITS_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.LIMITS_CONNECTIONS ?? 32);
/** Requests per second a client sends: three times its limit's rate. */
const RATE = (3 * LIMIT) / WINDOW_S;

if (SIZES.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('LIMITS_INSTANCES: positive integers');

interface Instance {
  child: ChildProcess;
  url: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

function cli(databaseUrl: string, args: string[]): string {
  return execFileSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A token reading the catalog, made through the CLI: its id (the limiter's key is `t:` + id) and secret. */
function token(databaseUrl: string, name: string): { id: string; auth: { authorization: string } } {
  const out = cli(databaseUrl, ['tokens', 'create', '--name', name, '--scopes', 'plans:read', '--json']);
  const { id, token: secret } = JSON.parse(out) as { id: string; token: string };
  return { id, auth: { authorization: `Bearer ${secret}` } };
}

/** The live instances `x` counts (infracat_fleet_instances). */
async function fleetCount(x: Instance): Promise<number> {
  const text = await (await fetch(`${x.url}/metrics`)).text();
  return Number(/^infracat_fleet_instances (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** Waits until every instance counts `n` live instances (heartbeats: within a few INSTANCE_HEARTBEAT_MS). */
async function untilFleet(instances: Instance[], n: number): Promise<void> {
  const started = Date.now();
  for (;;) {
    const counts = await Promise.all(instances.map(fleetCount));
    if (counts.every((c) => c === n)) return;
    if (Date.now() - started > 30_000) throw new Error(`instances count ${counts.join(',')}, not ${n}, after 30 s`);
    await sleep(100);
  }
}

interface Window {
  admitted: number;
  sent: number;
}

/**
 * `WINDOWS` whole windows of `key`, from the start of its next window: a request every
 * 1/RATE s (each after the one before was answered) to `pick(i)`, the 200s of each window
 * counted. A margin at each end of a window: every request counted is judged in it.
 */
async function windows(key: string, pick: (i: number) => Instance, auth: { authorization: string }) {
  const windowMs = WINDOW_S * 1000;
  const margin = 30;
  let start = windowEnd(Date.now() + margin, windowMs, windowOffset(key, windowMs));
  const result: Window[] = [];
  let i = 0;
  for (let w = 0; w < WINDOWS; w++, start += windowMs) {
    const end = start + windowMs;
    const m: Window = { admitted: 0, sent: 0 };
    for (let j = 0; ; j++, i++) {
      await sleep(start + margin + (j * 1000) / RATE - Date.now());
      if (Date.now() >= end - margin) break;
      const res = await fetch(`${pick(i).url}/api/v1/plans`, { headers: auth });
      await res.arrayBuffer();
      m.sent += 1;
      if (res.status === 200) m.admitted += 1;
      else if (res.status !== 429) throw new Error(`GET /api/v1/plans: ${res.status}`);
    }
    result.push(m);
  }
  return result;
}

interface Accuracy {
  instances: number;
  client: 'pinned' | 'spread' | 'moving';
  /** admitted / limit of each window. */
  ratios: number[];
  min: number;
  max: number;
  /** Requests sent in each window (3 × the limit when the client kept its pace). */
  sent: number[];
}

async function accuracy(databaseUrl: string, all: Instance[]): Promise<Accuracy[]> {
  const env = {
    RATE_LIMIT: String(LIMIT),
    RATE_LIMIT_WINDOW_S: String(WINDOW_S),
    RATE_LIMIT_ACCOUNT: '0',
    AUTH_FAILURE_LIMIT: '1000000',
    DATABASE_POOL_MAX: '3',
  };
  const results: Accuracy[] = [];
  const fleet: Instance[] = [];
  for (const n of SIZES) {
    while (fleet.length < n) {
      const x = await startInfracat(CLI, databaseUrl, { env });
      fleet.push(x);
      all.push(x);
    }
    await untilFleet(fleet, n);
    process.stdout.write(`  ${n} instance(s) counting each other\n`);
    const clients = {
      pinned: (_i: number) => fleet[0]!,
      spread: (i: number) => fleet[i % n]!,
      moving: (i: number) => fleet[Math.floor(i / 40) % n]!,
    };
    for (const [client, pick] of Object.entries(clients) as [Accuracy['client'], (i: number) => Instance][]) {
      const tok = token(databaseUrl, `${client}-${n}`);
      const ws = await windows(`t:${tok.id}`, pick, tok.auth);
      const ratios = ws.map((w) => round(w.admitted / LIMIT));
      const r = {
        instances: n,
        client,
        ratios,
        min: Math.min(...ratios),
        max: Math.max(...ratios),
        sent: ws.map((w) => w.sent),
      };
      process.stdout.write(`    ${client}: admitted/limit ${ratios.join(' ')} (sent ${r.sent.join(' ')})\n`);
      results.push(r);
    }
  }
  await Promise.all(fleet.map((x) => stopServer(x.child)));
  return results;
}

interface CostRound {
  fleet_cpu_us: number;
  alone_cpu_us: number;
  ratio: number;
  fleet_rps: number;
  alone_rps: number;
}

async function cost(fleetUrl: string, aloneUrl: string, all: Instance[], dir: string) {
  const load = { wrk: ensureWrk(), pin: canPin() };
  // The measured two pinned to the server CPU; the fleet's other two wherever they run (idle).
  const env = { AUTH_FAILURE_LIMIT: '1000000' };
  const measured = await startInfracat(CLI, fleetUrl, { env, pin: load.pin });
  const others = [await startInfracat(CLI, fleetUrl, { env }), await startInfracat(CLI, fleetUrl, { env })];
  const alone = await startInfracat(CLI, aloneUrl, { env, pin: load.pin });
  all.push(measured, ...others, alone);
  await untilFleet([measured, ...others], 3);
  await untilFleet([alone], 1);
  const servers = {
    fleet: { x: measured, auth: token(fleetUrl, 'cost').auth },
    alone: { x: alone, auth: token(aloneUrl, 'cost').auth },
  };
  const run = async (s: (typeof servers)['fleet'], seconds: number) => {
    const r = await drive(load, s.x.child.pid!, `${s.x.url}/api/v1/plans`, {
      headers: s.auth,
      seconds,
      connections: CONNECTIONS,
      dir,
    });
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx answers, ${r.errors} socket errors`);
    return r;
  };
  // Warm-up: both JIT-compiled, both caches full.
  for (const s of Object.values(servers)) await run(s, 1);
  const rounds: CostRound[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? (['fleet', 'alone'] as const) : (['alone', 'fleet'] as const);
    const got: Record<string, Awaited<ReturnType<typeof run>>> = {};
    for (const k of order) got[k] = await run(servers[k], SECONDS);
    const f = got.fleet!;
    const a = got.alone!;
    const r = {
      fleet_cpu_us: round(f.cpu_us_per_request, 1),
      alone_cpu_us: round(a.cpu_us_per_request, 1),
      ratio: round(f.cpu_us_per_request / a.cpu_us_per_request, 3),
      fleet_rps: Math.round(f.rps),
      alone_rps: Math.round(a.rps),
    };
    process.stdout.write(
      `  round ${i + 1}: CPU/request fleet ${r.fleet_cpu_us} us, alone ${r.alone_cpu_us} us: x${r.ratio}` +
        ` (${r.fleet_rps} and ${r.alone_rps} req/s)\n`,
    );
    rounds.push(r);
  }
  await Promise.all([measured, ...others, alone].map((x) => stopServer(x.child)));
  const ratios = rounds.map((r) => r.ratio);
  return {
    wrk: load.wrk !== undefined,
    pinned: load.pin,
    seconds: SECONDS,
    connections: CONNECTIONS,
    rounds,
    ratio: { median: round(median(ratios), 3), min: Math.min(...ratios), max: Math.max(...ratios) },
  };
}

const pgServer = await startEmbeddedPostgres();
const dir = mkdtempSync(path.join(tmpdir(), 'bench-limits-'));
const all: Instance[] = [];
try {
  // The fleet's database and another on the same server for the instance alone.
  const admin = new pg.Client({ connectionString: pgServer.url });
  await admin.connect();
  await admin.query('CREATE DATABASE alone');
  await admin.end();
  const aloneUrl = pgServer.url.replace(/\/postgres$/, '/alone');
  for (const url of [pgServer.url, aloneUrl]) cli(url, ['migrate']);

  process.stdout.write(`accuracy: limit ${LIMIT} per ${WINDOW_S} s, a client sending ${RATE} req/s\n`);
  const acc = await accuracy(pgServer.url, all);
  process.stdout.write(`cost: ${ROUNDS} rounds of ${SECONDS} s each\n`);
  const c = await cost(pgServer.url, aloneUrl, all, dir);

  const x = (v: number) => `${v.toFixed(2)}x`;
  const band = (r: Accuracy) => (r.min === r.max ? x(r.min) : `${x(r.min)}-${x(r.max)}`);
  const lines = [
    '',
    `Limit accuracy (RATE_LIMIT=${LIMIT}, RATE_LIMIT_WINDOW_S=${WINDOW_S}, RATE_LIMIT_ACCOUNT=0; ` +
      `a client sending 3 × its limit; admitted / limit over ${WINDOWS} whole windows, min-max):`,
    '',
    '| Instances | Pinned to one | Spread round robin | Moving every 40 requests |',
    '| --- | --- | --- | --- |',
    ...SIZES.map((n) => {
      const of = (client: string) => acc.find((r) => r.instances === n && r.client === client)!;
      return `| ${n} | ${band(of('pinned'))} | ${band(of('spread'))} | ${band(of('moving'))} |`;
    }),
    '',
    `CPU per request, token GET /api/v1/plans${c.pinned ? ' (server on CPU 0, wrk on CPU 1)' : ''}, ` +
      `${c.connections} connections, ${c.seconds} s runs:`,
    '',
    '| Round | In a fleet of 3 (us) | Alone (us) | Fleet / alone |',
    '| --- | --- | --- | --- |',
    ...c.rounds.map((r, i) => `| ${i + 1} | ${r.fleet_cpu_us} | ${r.alone_cpu_us} | ${x(r.ratio)} |`),
    `| median (min-max) | | | ${x(c.ratio.median)} (${x(c.ratio.min)}-${x(c.ratio.max)}) |`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
  const result = {
    accuracy: { limit: LIMIT, window_s: WINDOW_S, windows: WINDOWS, rate_per_s: RATE, runs: acc },
    cost: c,
  };
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(result, null, 2));
  if (acc.some((r) => r.min < 0.9 || r.max > 1.2)) {
    process.stderr.write('admitted / limit outside 0.9x-1.2x\n');
    process.exitCode = 1;
  }
} finally {
  await Promise.all(all.map((x) => stopServer(x.child)));
  await pgServer.destroy();
  rmSync(dir, { recursive: true, force: true });
}
