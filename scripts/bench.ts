// `npm run bench`: infracat as shipped (compiled, info logging, metrics, rate limiter
// running) on SQLite and on PostgreSQL, driven over loopback by autocannon, next to a
// bare node:http server answering the same catalog bytes: the ceiling Node reaches on
// this machine, measured in the same run. Results are ratios to that baseline.
//
//   BENCH_DURATION=15      seconds per throughput scenario, split over the rounds
//   BENCH_ROUNDS=5         interleaved rounds (ratios are taken within a round)
//   BENCH_CONNECTIONS=32   concurrent connections
//   BENCH_PIPELINING=1     requests in flight per connection
//   BENCH_BACKENDS=sqlite,postgres
//   BENCH_JSON=bench-results.json
//
// The rate limits are raised so the limiter runs on every request without tripping
// (one load generator would otherwise be throttled, which is the limiter working).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { freePort, startEmbeddedPostgres } from '../test/helpers/embedded-pg.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');
const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PIPELINING = Number(process.env.BENCH_PIPELINING ?? 1);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'sqlite,postgres').split(',').map((s) => s.trim());

interface Run {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(
  url: string,
  opts: { headers?: Record<string, string>; method?: 'GET' | 'POST'; body?: string; duration?: number } = {},
): Promise<Run> {
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    duration: opts.duration ?? DURATION,
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

async function waitUntilUp(url: string, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not yet listening
    }
    if (Date.now() - started > timeoutMs) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** The ceiling: node:http answering fixed bytes, nothing else. */
async function baseline(body: Buffer): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const code = `
    const http = require('node:http');
    const body = Buffer.from(process.env.BODY, 'base64');
    http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    }).listen(${port}, '127.0.0.1');`;
  const child = spawn(process.execPath, ['-e', code], {
    env: { ...process.env, BODY: body.toString('base64') },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}/`;
  await waitUntilUp(url);
  return { child, url };
}

async function infracat(databaseUrl: string): Promise<{ child: ChildProcess; url: string; startMs: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'info',
      BOOTSTRAP_ADMIN_TOKEN: 'false',
      RATE_LIMIT: '10000000',
      RATE_LIMIT_ANONYMOUS: '10000000',
      TOKEN_MAX_LIVE: '100000',
    },
    // Logs are written as in production (to stdout) and thrown away here.
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitUntilUp(`${url}/healthz`);
  return { child, url, startMs: performance.now() - started };
}

function cliJson(databaseUrl: string, args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args, '--json'], {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as Record<string, unknown>)
        : reject(new Error(`infracat ${args.join(' ')} exited ${code}`)),
    );
  });
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

interface BackendResult {
  backend: string;
  cold_start_ms: number;
  idle_rss_mb: number;
  loaded_rss_mb: number;
  catalog_anonymous: Run;
  catalog_with_token: Run;
  auth_check: Run;
  token_list_1000: Run;
  token_create: Run;
  storage_queries_per_1000_catalog_requests: number;
  storage_queries_per_1000_cached_checks: number;
}

interface Backend {
  name: string;
  databaseUrl: string;
  admin: string;
  coldStartMs: number;
  server: { child: ChildProcess; url: string };
  idleRss: number;
  peakRss: number;
  stopPostgres?: () => Promise<void>;
}

async function startBackend(name: string, dir: string): Promise<Backend> {
  let databaseUrl = `sqlite:${path.join(dir, 'bench.sqlite')}`;
  let stopPostgres: (() => Promise<void>) | undefined;
  if (name === 'postgres') {
    const pg = await startEmbeddedPostgres();
    databaseUrl = pg.url;
    stopPostgres = () => pg.destroy();
  } else if (name !== 'sqlite') throw new Error(`unknown backend ${name}`);
  const admin = (
    await cliJson(databaseUrl, [
      'tokens',
      'create',
      '--name',
      'bench admin',
      '--scopes',
      'api-tokens:write,apps:read,plans:read',
    ])
  ).token as string;
  // Cold start: spawn to the first 200 from /healthz, median of three.
  const starts: number[] = [];
  for (let i = 0; i < 3; i++) {
    const s = await infracat(databaseUrl);
    starts.push(s.startMs);
    await stop(s.child);
  }
  const server = await infracat(databaseUrl);
  await new Promise((r) => setTimeout(r, 1000));
  const idleRss = rssMb(server.child.pid!);
  return {
    name,
    databaseUrl,
    admin,
    coldStartMs: [...starts].sort((a, b) => a - b)[1]!,
    server,
    idleRss,
    peakRss: idleRss,
    ...(stopPostgres ? { stopPostgres } : {}),
  };
}

/** Token create rate, then the list with exactly 1,000 live tokens (no targets; sequential). */
async function tokenScenarios(b: Backend): Promise<{ created: Run; list: Run }> {
  const url = b.server.url;
  const auth = { authorization: `Bearer ${b.admin}` };
  const created = await load(`${url}/api/v1/api-tokens`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', scopes: ['apps:read'] }),
    duration: Math.max(3, Math.round(DURATION / 2)),
  });
  const live = (await (await fetch(`${url}/api/v1/api-tokens`, { headers: auth })).json()) as { id: string }[];
  for (const t of live.slice(1000))
    await fetch(`${url}/api/v1/api-tokens/${t.id}`, { method: 'DELETE', headers: auth });
  for (let i = live.length; i < 1000; i++) {
    await fetch(`${url}/api/v1/api-tokens`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"name":"fill","scopes":["apps:read"]}',
    });
  }
  return { created, list: await load(`${url}/api/v1/api-tokens`, { headers: auth }) };
}

const median = (values: number[]): number => {
  const v = [...values].sort((a, b) => a - b);
  return v.length % 2 === 1 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};

/** Several slices of one scenario as one Run: median rps and latencies. */
function merge(runs: Run[]): Run {
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'infracat-bench-'));
  const machine =
    `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ` +
    `${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const slice = Math.max(2, Math.round(DURATION / ROUNDS));
  process.stdout.write(
    `bench: ${machine}; ${ROUNDS} interleaved rounds of ${slice} s per scenario, ` +
      `${CONNECTIONS} connections, pipelining ${PIPELINING}\n`,
  );

  // The bytes infracat serves for GET /api/v1/plans, for the baseline to answer.
  const probe = await infracat(`sqlite:${path.join(dir, 'probe.sqlite')}`);
  const plansBytes = Buffer.from(await (await fetch(`${probe.url}/api/v1/plans`)).arrayBuffer());
  await stop(probe.child);

  const coldBase = await (async () => {
    const t0 = performance.now();
    const b = await baseline(plansBytes);
    const ms = performance.now() - t0;
    await stop(b.child);
    return ms;
  })();
  const base = await baseline(plansBytes);
  await new Promise((r) => setTimeout(r, 500));
  const baseRss = rssMb(base.child.pid!);

  const backends: Backend[] = [];
  for (const name of BACKENDS) {
    process.stdout.write(`  ${name}: cold starts...\n`);
    backends.push(await startBackend(name, sqliteDir(dir, name)));
  }

  // Every throughput scenario, including the baseline, runs in each round, one after the
  // other, while all servers stay up (idle when not loaded). A ratio is taken within a
  // round, so drift in the machine's speed over minutes (this VM's noise) cancels out.
  interface Scenario {
    key: string;
    url: string;
    headers: Record<string, string>;
    backend?: Backend;
  }
  const scenarios: Scenario[] = [{ key: 'baseline', url: base.url, headers: {} }];
  for (const b of backends) {
    const auth = { authorization: `Bearer ${b.admin}` };
    scenarios.push(
      { key: `${b.name}:catalog_anonymous`, url: `${b.server.url}/api/v1/plans`, headers: {}, backend: b },
      { key: `${b.name}:catalog_with_token`, url: `${b.server.url}/api/v1/plans`, headers: auth, backend: b },
      {
        key: `${b.name}:auth_check`,
        url: `${b.server.url}/api/v1/auth/check?scope=apps:read`,
        headers: auth,
        backend: b,
      },
    );
  }
  const runs = new Map<string, Run[]>();
  const ratios = new Map<string, number[]>();
  const queries = new Map<string, { dq: number; requests: number }>();
  const sampler = setInterval(() => {
    for (const b of backends) b.peakRss = Math.max(b.peakRss, rssMb(b.server.child.pid!));
  }, 200);
  for (let round = 1; round <= ROUNDS; round++) {
    process.stdout.write(`  round ${round}/${ROUNDS}...\n`);
    // Every other round in reverse order: on this VM a scenario's rate depends on what ran
    // just before it (CPU credit, caches), so no scenario may always go first or last.
    const order = round % 2 === 1 ? scenarios : [...scenarios].reverse();
    const thisRound = new Map<string, Run>();
    for (const sc of order) {
      const q0 = sc.backend ? await metric(sc.backend.server.url, 'infracat_storage_queries_total') : 0;
      const run = await load(sc.url, { headers: sc.headers, duration: slice });
      if (sc.backend) {
        const q = queries.get(sc.key) ?? { dq: 0, requests: 0 };
        q.dq += (await metric(sc.backend.server.url, 'infracat_storage_queries_total')) - q0;
        q.requests += run.rps * slice;
        queries.set(sc.key, q);
      }
      thisRound.set(sc.key, run);
      runs.set(sc.key, [...(runs.get(sc.key) ?? []), run]);
    }
    // Ratios within the round: to the baseline, and the comparisons the targets name.
    const add = (key: string, value: number) => ratios.set(key, [...(ratios.get(key) ?? []), value]);
    const rps = (key: string) => thisRound.get(key)!.rps;
    for (const sc of scenarios) add(sc.key, rps(sc.key) / rps('baseline'));
    for (const b of backends)
      add(`${b.name}:token_vs_anonymous`, rps(`${b.name}:catalog_with_token`) / rps(`${b.name}:catalog_anonymous`));
    if (thisRound.has('postgres:auth_check') && thisRound.has('sqlite:auth_check'))
      add('postgres_vs_sqlite_auth_check', rps('postgres:auth_check') / rps('sqlite:auth_check'));
  }
  clearInterval(sampler);

  const results: BackendResult[] = [];
  for (const b of backends) {
    process.stdout.write(`  ${b.name}: token create and list...\n`);
    const { created, list } = await tokenScenarios(b);
    await stop(b.server.child);
    await b.stopPostgres?.();
    const per1000 = (key: string) => {
      const q = queries.get(`${b.name}:${key}`)!;
      return Math.round((q.dq / Math.max(1, q.requests)) * 1000 * 100) / 100;
    };
    results.push({
      backend: b.name,
      cold_start_ms: b.coldStartMs,
      idle_rss_mb: b.idleRss,
      loaded_rss_mb: b.peakRss,
      catalog_anonymous: merge(runs.get(`${b.name}:catalog_anonymous`)!),
      catalog_with_token: merge(runs.get(`${b.name}:catalog_with_token`)!),
      auth_check: merge(runs.get(`${b.name}:auth_check`)!),
      token_list_1000: list,
      token_create: created,
      storage_queries_per_1000_catalog_requests: per1000('catalog_anonymous'),
      storage_queries_per_1000_cached_checks: per1000('auth_check'),
    });
  }
  await stop(base.child);
  rmSync(dir, { recursive: true, force: true });

  const baseRun = merge(runs.get('baseline')!);
  const r3 = (n: number) => Math.round(n * 1000) / 1000;
  const ratio = (backend: string, key: string) => r3(median(ratios.get(`${backend}:${key}`)!));
  const spread = (key: string) => {
    const v = ratios.get(key)!;
    return `${Math.min(...v).toFixed(2)}-${Math.max(...v).toFixed(2)}`;
  };
  const rows: string[][] = [['scenario', ...results.map((r) => r.backend), 'target']];
  const fmt = (backend: string, key: string, r: Run) => {
    const failed = r.non2xx + r.errors > 0 ? ` !${r.non2xx + r.errors}` : '';
    const rounds = spread(`${backend}:${key}`);
    return `${Math.round(r.rps)} rps = ${ratio(backend, key)}x (rounds ${rounds}) p99 ${r.p99} ms${failed}`;
  };
  rows.push([
    'baseline node:http',
    ...results.map(() => `${Math.round(baseRun.rps)} rps (1x) p99 ${baseRun.p99} ms`),
    '',
  ]);
  rows.push([
    'catalog GET, anonymous',
    ...results.map((r) => fmt(r.backend, 'catalog_anonymous', r.catalog_anonymous)),
    '>= 0.9x',
  ]);
  rows.push([
    'catalog GET, valid token',
    ...results.map((r) => fmt(r.backend, 'catalog_with_token', r.catalog_with_token)),
    '',
  ]);
  rows.push([
    'valid token vs anonymous (same round)',
    ...results.map(
      (r) => `${ratio(r.backend, 'token_vs_anonymous')}x (rounds ${spread(`${r.backend}:token_vs_anonymous`)})`,
    ),
    '>= 0.9x (<= 10% cost)',
  ]);
  rows.push(['auth check, valid token', ...results.map((r) => fmt(r.backend, 'auth_check', r.auth_check)), '']);
  if (ratios.has('postgres_vs_sqlite_auth_check')) {
    rows.push([
      'auth check, PostgreSQL vs SQLite (same round)',
      ...results.map((r) =>
        r.backend === 'postgres'
          ? `${r3(median(ratios.get('postgres_vs_sqlite_auth_check')!))}x ` +
            `(rounds ${spread('postgres_vs_sqlite_auth_check')})`
          : '1x',
      ),
      '>= 0.9x',
    ]);
  }
  rows.push([
    'token list, 1000 tokens',
    ...results.map((r) => `${Math.round(r.token_list_1000.rps)} rps p99 ${r.token_list_1000.p99} ms`),
    '',
  ]);
  rows.push([
    'token create',
    ...results.map((r) => `${Math.round(r.token_create.rps)} rps p99 ${r.token_create.p99} ms`),
    '',
  ]);
  rows.push([
    'cold start to first answer',
    ...results.map((r) => `${Math.round(r.cold_start_ms)} ms (node:http ${Math.round(coldBase)} ms)`),
    '< 500 ms',
  ]);
  rows.push([
    'RSS idle / loaded',
    ...results.map(
      (r) => `${r.idle_rss_mb.toFixed(0)} / ${r.loaded_rss_mb.toFixed(0)} MB (node:http ${baseRss.toFixed(0)} MB)`,
    ),
    'idle < 100 MB',
  ]);
  rows.push([
    'storage calls per 1000 catalog GETs',
    ...results.map((r) => String(r.storage_queries_per_1000_catalog_requests)),
    '~0 (background polls only)',
  ]);
  rows.push([
    'storage calls per 1000 cached checks',
    ...results.map((r) => String(r.storage_queries_per_1000_cached_checks)),
    '~0 (batched last-used only)',
  ]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  process.stdout.write(`\n${rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')).join('\n')}\n`);

  const out = process.env.BENCH_JSON ?? 'bench-results.json';
  const ratioJson = Object.fromEntries([...ratios].map(([k, v]) => [k, { median: r3(median(v)), rounds: v.map(r3) }]));
  writeFileSync(
    out,
    JSON.stringify(
      {
        machine,
        rounds: ROUNDS,
        slice_s: slice,
        connections: CONNECTIONS,
        pipelining: PIPELINING,
        baseline: { ...baseRun, cold_start_ms: coldBase, rss_mb: baseRss },
        results,
        ratios: ratioJson,
      },
      null,
      2,
    ),
  );
  process.stdout.write(`\nwrote ${out}\n`);
}

/** Each backend's files in a directory of their own. */
function sqliteDir(dir: string, name: string): string {
  const d = path.join(dir, name);
  mkdirSync(d, { recursive: true });
  return d;
}

await main();
