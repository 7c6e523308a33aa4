// `npm run bench`: infracat as shipped (the bundled dist/cli/main.js, info access log to
// stdout, metrics, rate limiter running with limits raised so it never trips) next to
// reference servers answering the same GET /api/v1/plans bytes, measured the fair way
// (scripts/lib/load.ts): every server pinned to CPU 0, wrk pinned to CPU 1,
// all servers up at once, interleaved rounds (order reversed every other round, each run
// waiting for CPU steal to settle), medians of within-round ratios to C (bare node:http
// with infracat's headers, scripts/lib/baselines.ts) and of server CPU time per request.
//
//   BENCH_ROUNDS=9         interleaved rounds (the figures in BENCHMARKS.md use 29)
//   BENCH_SECONDS=4        seconds per run
//   BENCH_CONNECTIONS=32   concurrent connections
//   BENCH_STARTS=9         cold starts of each backend and of C, in turn
//   BENCH_BACKENDS=sqlite,postgres
//   BENCH_JSON=bench-results.json
//
// Without taskset or two CPUs nothing is pinned; without wrk (Debian's package, installed
// when running as root) autocannon drives the load. The report says which.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { copiedHeaders, startNginx, startNodeBaseline } from './lib/baselines.js';
import { runCli, startInfracat, stopServer } from './lib/builds.js';
import { canPin, drive, ensureWrk, median, rssMb, type Run as LoadRun } from './lib/load.js';
import { ensureDebianBinary } from '../test/helpers/apt.js';
import { startEmbeddedPostgres } from '../test/helpers/embedded-pg.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const STARTS = Number(process.env.BENCH_STARTS ?? 9);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'sqlite,postgres').split(',').map((s) => s.trim());

type Run = LoadRun & { cpu_us_per_request: number };
interface Server {
  name: string;
  child: ChildProcess;
  url: string;
}
interface Scenario {
  key: string;
  label: string;
  server: Server;
  path: string;
  headers: Record<string, string>;
  /** infracat's base URL, for reading its storage-call counter around the runs. */
  metrics?: string;
}

const load = { wrk: ensureWrk(), pin: canPin() };
const dir = mkdtempSync(path.join(tmpdir(), 'infracat-bench-'));
const servers: Server[] = [];

const stop = (child: ChildProcess): Promise<void> => stopServer(child);

/** `infracat ARGS` on the database; its standard output. */
const cli = (databaseUrl: string, args: string[]): string => runCli(CLI, databaseUrl, args);

/** Status, raw headers (names as sent) and body of one GET. */
function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw: Record<string, string> = {};
        for (let i = 0; i < res.rawHeaders.length; i += 2) raw[res.rawHeaders[i]!] = res.rawHeaders[i + 1]!;
        resolve({ status: res.statusCode ?? 0, headers: raw, body: Buffer.concat(chunks) });
      });
    })
      .on('error', reject)
      .end();
  });
}

async function storageQueries(base: string): Promise<number> {
  const text = (await get(`${base}/metrics`)).body.toString();
  const line = text.split('\n').find((l) => l.startsWith('infracat_storage_queries_total '));
  return Number(line?.split(' ')[1] ?? NaN);
}

/**
 * Cold starts (spawn to the first answer from /healthz) of `start` and of C's `baseline`, in
 * turn (STARTS of each, median): the machine's speed drifts over a run, so both are read in
 * the same minutes and infracat's own share is the difference.
 */
async function coldStarts(
  start: () => Promise<ChildProcess>,
  baseline: () => Promise<ChildProcess>,
): Promise<{ coldMs: number; baselineMs: number }> {
  const ms: number[] = [];
  const baselineMs: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    for (const [begin, into] of [
      [start, ms],
      [baseline, baselineMs],
    ] as const) {
      const t0 = performance.now();
      const child = await begin();
      into.push(performance.now() - t0);
      await stop(child);
    }
  }
  return { coldMs: median(ms), baselineMs: median(baselineMs) };
}

/**
 * The RSS of an idle server 1 s after it answered and, with `settled`, again once V8 has had
 * its idle-time collection (its memory reducer starts one about 8 s after a start and gives
 * back the young generation and the start-up garbage): at 12 s.
 */
async function idleRss(
  start: () => Promise<ChildProcess>,
  settled: boolean,
): Promise<{ idleRssMb: number; settledRssMb: number }> {
  const child = await start();
  await new Promise((r) => setTimeout(r, 1000));
  const idleRssMb = rssMb(child.pid!);
  if (settled) await new Promise((r) => setTimeout(r, 11_000));
  const settledRssMb = rssMb(child.pid!);
  await stop(child);
  return { idleRssMb, settledRssMb };
}

interface Backend {
  name: string;
  databaseUrl: string;
  token: string;
  coldMs: number;
  /** C's cold start, read in turn with this backend's. */
  cColdMs: number;
  idleRssMb: number;
  settledRssMb: number;
  stopPostgres?: () => Promise<void>;
}

async function prepareBackend(name: string, cStarter: () => Promise<ChildProcess>): Promise<Backend> {
  let databaseUrl = `sqlite:${path.join(dir, name, 'bench.sqlite')}`;
  let stopPostgres: (() => Promise<void>) | undefined;
  mkdirSync(path.join(dir, name), { recursive: true });
  if (name === 'postgres') {
    const pg = await startEmbeddedPostgres();
    databaseUrl = pg.url;
    stopPostgres = () => pg.destroy();
  } else if (name !== 'sqlite') throw new Error(`unknown backend ${name}`);
  cli(databaseUrl, ['migrate']);
  const created = cli(databaseUrl, [
    'tokens',
    'create',
    '--name',
    'bench',
    '--scopes',
    'api-tokens:write,apps:read,plans:read',
    '--json',
  ]);
  const { token } = JSON.parse(created) as { token: string };
  const start = async () => (await startInfracat(CLI, databaseUrl, { pin: load.pin })).child;
  await stop(await start()); // the first start seeds the catalog; not a cold start of a running service
  const { coldMs, baselineMs: cColdMs } = await coldStarts(start, cStarter);
  const { idleRssMb, settledRssMb } = await idleRss(start, true);
  return {
    name,
    databaseUrl,
    token,
    coldMs,
    cColdMs,
    idleRssMb,
    settledRssMb,
    ...(stopPostgres ? { stopPostgres } : {}),
  };
}

/** Token create rate, then the list with 1,000 live tokens (not pinned-ratio figures). */
async function tokenScenarios(b: Backend, base: Server, pid: number): Promise<{ create: Run; list: Run }> {
  const auth = { authorization: `Bearer ${b.token}` };
  const create = await drive(load, pid, `${base.url}/api/v1/api-tokens`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: '{"name":"bench","scopes":["apps:read"]}',
    seconds: 2,
    connections: 8,
    dir,
  });
  // Back to exactly 1,000 live tokens, one request at a time.
  const live = (await (await fetch(`${base.url}/api/v1/api-tokens`, { headers: auth })).json()) as { id: string }[];
  for (const t of live.slice(1000))
    await fetch(`${base.url}/api/v1/api-tokens/${t.id}`, { method: 'DELETE', headers: auth });
  for (let i = live.length; i < 1000; i++)
    await fetch(`${base.url}/api/v1/api-tokens`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"name":"fill","scopes":["apps:read"]}',
    });
  const list = await drive(load, pid, `${base.url}/api/v1/api-tokens`, {
    headers: auth,
    seconds: 2,
    connections: 8,
    dir,
  });
  return { create, list };
}

async function main(): Promise<void> {
  const gib = Math.round(totalmem() / 2 ** 30);
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${gib} GiB, Node ${process.version}`;
  const method =
    `${load.pin ? 'server on CPU 0, load on CPU 1' : 'NOT pinned (no taskset or one CPU)'}; ` +
    `${load.wrk ? 'wrk -t1' : 'autocannon (wrk unavailable)'} -c${CONNECTIONS}, ${ROUNDS} rounds of ${SECONDS} s`;
  process.stdout.write(`bench: ${machine}\n       ${method}\n`);
  if (process.env.NODE_EXTRA_CA_CERTS !== undefined)
    process.stdout.write('       NODE_EXTRA_CA_CERTS is set: the servers start without it (lib/load.ts serverEnv)\n');

  // The bytes and headers infracat serves for GET /api/v1/plans, for the baselines.
  const probe = await startInfracat(CLI, `sqlite:${path.join(dir, 'probe.sqlite')}`);
  const sample = await get(`${probe.url}/api/v1/plans`);
  await stop(probe.child);
  const headers = copiedHeaders(sample.headers);

  const scenarios: Scenario[] = [];
  const plain = (key: string, label: string, server: Server): Scenario => ({
    key,
    label,
    server,
    path: '/api/v1/plans',
    headers: {},
  });
  // C's start, the baseline of infracat's: what Node itself takes to start and hold a server.
  const cStarter = async () => (await startNodeBaseline('C', sample.body, headers, load.pin)).child;
  const cStart = await idleRss(cStarter, false);
  const C = await startNodeBaseline('C', sample.body, headers, load.pin);
  servers.push(C);
  scenarios.push(plain('C', 'C: node:http, same body and headers', C));
  for (const [name, label] of [
    ['D', 'D: node:http, minimal headers'],
    ['F', 'F: minimal Fastify route, same headers'],
  ] as const) {
    const s = await startNodeBaseline(name, sample.body, name === 'D' ? {} : headers, load.pin);
    servers.push(s);
    scenarios.push(plain(name, label, s));
  }
  const nginxPath = ensureDebianBinary('nginx-light', ['/usr/sbin/nginx', '/usr/bin/nginx'], { install: true });
  if (nginxPath !== undefined) {
    const s = await startNginx(nginxPath, dir, sample.body, headers, load.pin);
    servers.push(s);
    scenarios.push(plain('nginx', 'nginx-light, static file, same headers', s));
  }

  const backends: Backend[] = [];
  const shipped = new Map<string, Server>();
  for (const name of BACKENDS) {
    process.stdout.write(`  ${name}: cold starts...\n`);
    const b = await prepareBackend(name, cStarter);
    backends.push(b);
    const s = await startInfracat(CLI, b.databaseUrl, { pin: load.pin, env: { TOKEN_MAX_LIVE: '100000' } });
    const server = { name: `infracat ${name}`, child: s.child, url: s.url.replace(/\/$/, '') };
    servers.push(server);
    shipped.set(name, server);
    const auth = { authorization: `Bearer ${b.token}` };
    const on = (key: string, label: string, p: string, h: Record<string, string>): Scenario => ({
      key: `${name}:${key}`,
      label: `${label} (${name})`,
      server,
      path: p,
      headers: h,
      metrics: server.url,
    });
    // The anonymous GET runs just before the token GET and the check it is compared with.
    if (name === 'sqlite') {
      const q = await startInfracat(CLI, b.databaseUrl, { pin: load.pin, env: { ACCESS_LOG: 'errors' } });
      const quiet = { name: 'infracat ACCESS_LOG=errors', child: q.child, url: q.url };
      servers.push(quiet);
      scenarios.push({
        ...plain(`${name}:catalog_errors_log`, `infracat ACCESS_LOG=errors, catalog GET (${name})`, quiet),
      });
    }
    scenarios.push(on('catalog', 'infracat as shipped, catalog GET', '/api/v1/plans', {}));
    scenarios.push(on('catalog_token', 'infracat, catalog GET with a valid token', '/api/v1/plans', auth));
    scenarios.push(
      on('auth_check', 'infracat, auth check with a valid token', '/api/v1/auth/check?scope=apps:read', auth),
    );
  }

  for (const sc of scenarios) {
    const r = await get(`${sc.server.url}${sc.path}`, sc.headers);
    if (r.status !== 200) throw new Error(`${sc.label}: ${r.status} before the bench`);
    await drive(load, sc.server.child.pid!, `${sc.server.url}${sc.path}`, {
      headers: sc.headers,
      seconds: 1,
      connections: CONNECTIONS,
      dir,
    });
  }

  const runs = new Map<string, Run[]>();
  const ratios = new Map<string, number[]>();
  const queries = new Map<string, { dq: number; requests: number }>();
  const peakRss = new Map<string, number>();
  const push = <T>(m: Map<string, T[]>, k: string, v: T) => m.set(k, [...(m.get(k) ?? []), v]);
  for (let round = 1; round <= ROUNDS; round++) {
    process.stdout.write(`  round ${round}/${ROUNDS}\n`);
    const order = round % 2 === 1 ? scenarios : [...scenarios].reverse();
    const thisRound = new Map<string, Run>();
    for (const sc of order) {
      const q0 = sc.metrics ? await storageQueries(sc.metrics) : 0;
      const run = await drive(load, sc.server.child.pid!, `${sc.server.url}${sc.path}`, {
        headers: sc.headers,
        seconds: SECONDS,
        connections: CONNECTIONS,
        dir,
      });
      if (sc.metrics) {
        const q = queries.get(sc.key) ?? { dq: 0, requests: 0 };
        q.dq += (await storageQueries(sc.metrics)) - q0;
        q.requests += run.requests;
        queries.set(sc.key, q);
      }
      peakRss.set(sc.server.name, Math.max(peakRss.get(sc.server.name) ?? 0, rssMb(sc.server.child.pid!)));
      thisRound.set(sc.key, run);
      push(runs, sc.key, run);
    }
    const c = thisRound.get('C')!;
    for (const sc of scenarios) {
      const r = thisRound.get(sc.key)!;
      push(ratios, sc.key, r.rps / c.rps);
    }
    for (const b of backends) {
      const anon = thisRound.get(`${b.name}:catalog`)!;
      for (const [key, scenario] of [
        ['token_vs_anonymous', 'catalog_token'],
        ['check_vs_anonymous', 'auth_check'],
      ] as const) {
        const run = thisRound.get(`${b.name}:${scenario}`)!;
        push(ratios, `${b.name}:${key}`, run.rps / anon.rps);
        // The same comparison by the server's CPU time per request (anonymous / this: below 1
        // costs more), which a CPU stolen from the machine between the two runs does not move.
        push(ratios, `${b.name}:${key}_cpu`, anon.cpu_us_per_request / run.cpu_us_per_request);
      }
    }
  }

  const tokenRuns = new Map<string, { create: Run; list: Run }>();
  for (const b of backends) {
    process.stdout.write(`  ${b.name}: token create and list...\n`);
    const server = shipped.get(b.name)!;
    tokenRuns.set(b.name, await tokenScenarios(b, server, server.child.pid!));
  }

  const r3 = (n: number) => Math.round(n * 1000) / 1000;
  const spread = (v: number[]) => `${Math.min(...v).toFixed(2)}-${Math.max(...v).toFixed(2)}`;
  const cMed = median(runs.get('C')!.map((r) => r.cpu_us_per_request));
  const cP99 = median(runs.get('C')!.map((r) => r.p99));
  const rows: string[][] = [['server / scenario', 'ratio to C (rounds)', 'p99 (x C)', 'CPU us/request', 'non-2xx']];
  const summary: Record<string, unknown> = {};
  for (const sc of scenarios) {
    const rs = runs.get(sc.key)!;
    const ratio = median(ratios.get(sc.key)!);
    const cpu = median(rs.map((r) => r.cpu_us_per_request));
    const p99 = median(rs.map((r) => r.p99));
    const bad = rs.reduce((n, r) => n + r.non2xx + r.errors, 0);
    summary[sc.key] = {
      label: sc.label,
      ratio_to_C: r3(ratio),
      rounds: ratios.get(sc.key)!.map(r3),
      rps: Math.round(median(rs.map((r) => r.rps))),
      p99_ms: p99,
      cpu_us_per_request: r3(cpu),
      requests: rs.reduce((n, r) => n + r.requests, 0),
      non2xx_or_errors: bad,
      ...(queries.has(sc.key)
        ? { storage_calls_per_1000: r3((queries.get(sc.key)!.dq / Math.max(1, queries.get(sc.key)!.requests)) * 1000) }
        : {}),
    };
    rows.push([
      sc.label,
      `${ratio.toFixed(2)}x (${spread(ratios.get(sc.key)!)})`,
      `${p99.toFixed(2)} ms (${(p99 / cP99).toFixed(2)}x)`,
      sc.metrics === undefined && !sc.key.includes(':')
        ? cpu.toFixed(1)
        : `${cpu.toFixed(1)} (infracat's own: ${(cpu - cMed).toFixed(1)})`,
      String(bad),
    ]);
  }
  const table = (t: string[][]) => {
    const w = t[0]!.map((_, i) => Math.max(...t.map((r) => r[i]!.length)));
    return t.map((r) => r.map((cell, i) => cell.padEnd(w[i]!)).join(' | ')).join('\n');
  };
  process.stdout.write(`\n${table(rows)}\n\n`);

  const per: string[][] = [
    [
      'backend',
      'token GET vs anonymous: rate / CPU per request',
      'auth check vs anonymous: rate / CPU per request',
      `cold start (C's, in turn: ${STARTS} each)`,
      `RSS idle at 1 s / at 12 s / loaded (C idle: ${cStart.idleRssMb.toFixed(0)} MB)`,
      'storage calls / 1000 cached checks',
      'token create',
      'token list (1,000)',
    ],
  ];
  for (const b of backends) {
    const t = ratios.get(`${b.name}:token_vs_anonymous`)!;
    const k = ratios.get(`${b.name}:check_vs_anonymous`)!;
    const tCpu = ratios.get(`${b.name}:token_vs_anonymous_cpu`)!;
    const kCpu = ratios.get(`${b.name}:check_vs_anonymous_cpu`)!;
    const q = queries.get(`${b.name}:auth_check`)!;
    const tr = tokenRuns.get(b.name)!;
    const rss = [b.idleRssMb, b.settledRssMb, peakRss.get(`infracat ${b.name}`) ?? 0];
    per.push([
      b.name,
      `${median(t).toFixed(2)}x (${spread(t)}) / ${median(tCpu).toFixed(2)}x (${spread(tCpu)})`,
      `${median(k).toFixed(2)}x (${spread(k)}) / ${median(kCpu).toFixed(2)}x (${spread(kCpu)})`,
      `${Math.round(b.coldMs)} ms (${Math.round(b.cColdMs)} ms; own: ${Math.round(b.coldMs - b.cColdMs)} ms)`,
      `${rss.map((mb) => mb.toFixed(0)).join(' / ')} MB`,
      (Math.round((q.dq / Math.max(1, q.requests)) * 1000 * 100) / 100).toString(),
      `${Math.round(tr.create.rps)} rps`,
      `${Math.round(tr.list.rps)} rps, p99 ${tr.list.p99} ms`,
    ]);
    summary[`${b.name}:token_vs_anonymous`] = {
      median: r3(median(t)),
      rounds: t.map(r3),
      by_cpu_per_request: { median: r3(median(tCpu)), rounds: tCpu.map(r3) },
    };
    summary[`${b.name}:check_vs_anonymous`] = {
      median: r3(median(k)),
      rounds: k.map(r3),
      by_cpu_per_request: { median: r3(median(kCpu)), rounds: kCpu.map(r3) },
    };
    summary[`${b.name}:startup`] = {
      cold_start_ms: Math.round(b.coldMs),
      c_cold_start_ms: Math.round(b.cColdMs),
      c_idle_rss_mb: r3(cStart.idleRssMb),
      idle_rss_mb: r3(b.idleRssMb),
      settled_idle_rss_mb: r3(b.settledRssMb),
    };
    summary[`${b.name}:tokens`] = { create_rps: Math.round(tr.create.rps), list_1000_rps: Math.round(tr.list.rps) };
  }
  process.stdout.write(`${table(per)}\n`);

  const out = process.env.BENCH_JSON ?? 'bench-results.json';
  writeFileSync(
    out,
    JSON.stringify(
      { machine, method, rounds: ROUNDS, seconds: SECONDS, connections: CONNECTIONS, results: summary },
      null,
      2,
    ),
  );
  process.stdout.write(`\nwrote ${out}\n`);
  for (const b of backends) await b.stopPostgres?.();
  const failures = scenarios.filter((sc) => (summary[sc.key] as { non2xx_or_errors: number }).non2xx_or_errors > 0);
  if (failures.length > 0)
    throw new Error(`non-2xx answers or socket errors in: ${failures.map((s) => s.label).join(', ')}`);
}

try {
  await main();
} finally {
  await Promise.all(servers.map((s) => stop(s.child)));
  rmSync(dir, { recursive: true, force: true });
}
