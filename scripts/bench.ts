// `npm run bench`: infracat as shipped (compiled, info logging, metrics, rate limiter
// running) on SQLite and on PostgreSQL, driven over loopback by autocannon, next to a
// bare node:http server answering the same catalog bytes: the ceiling Node reaches on
// this machine, measured in the same run. Results are ratios to that baseline.
//
//   BENCH_DURATION=10      seconds per scenario
//   BENCH_CONNECTIONS=32   concurrent connections
//   BENCH_PIPELINING=1     requests in flight per connection
//   BENCH_BACKENDS=sqlite,postgres
//   BENCH_JSON=bench-results.json
//
// The rate limits are raised so the limiter runs on every request without tripping
// (one load generator would otherwise be throttled, which is the limiter working).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { freePort, startEmbeddedPostgres } from '../test/helpers/embedded-pg.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
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

async function load(url: string, opts: { headers?: Record<string, string>; method?: 'GET' | 'POST'; body?: string; duration?: number } = {}): Promise<Run> {
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    duration: opts.duration ?? DURATION,
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts };
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
  const child = spawn(process.execPath, ['-e', code], { env: { ...process.env, BODY: body.toString('base64') }, stdio: 'ignore' });
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
    const child = spawn(process.execPath, [CLI, ...args, '--json'], { env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Record<string, unknown>) : reject(new Error(`infracat ${args.join(' ')} exited ${code}`))));
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

async function benchBackend(name: string, databaseUrl: string, baselineRps: number): Promise<BackendResult> {
  const admin = (await cliJson(databaseUrl, ['tokens', 'create', '--name', 'bench admin', '--scopes', 'api-tokens:write,apps:read,plans:read'])).token as string;
  // Cold start: spawn to the first 200 from /healthz, median of three.
  const starts: number[] = [];
  for (let i = 0; i < 3; i++) {
    const s = await infracat(databaseUrl);
    starts.push(s.startMs);
    await stop(s.child);
  }
  const server = await infracat(databaseUrl);
  const pid = server.child.pid!;
  await new Promise((r) => setTimeout(r, 1000));
  const idle = rssMb(pid);
  const auth = { authorization: `Bearer ${admin}` };
  process.stdout.write(`  ${name}: catalog...\n`);

  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 200);
  const q0 = await metric(server.url, 'infracat_storage_queries_total');
  const anon = await load(`${server.url}/api/v1/plans`);
  const q1 = await metric(server.url, 'infracat_storage_queries_total');
  const withToken = await load(`${server.url}/api/v1/plans`, { headers: auth });
  process.stdout.write(`  ${name}: auth check...\n`);
  const q2 = await metric(server.url, 'infracat_storage_queries_total');
  const check = await load(`${server.url}/api/v1/auth/check?scope=apps:read`, { headers: auth });
  const q3 = await metric(server.url, 'infracat_storage_queries_total');
  process.stdout.write(`  ${name}: tokens...\n`);
  const created = await load(`${server.url}/api/v1/api-tokens`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', scopes: ['apps:read'] }),
    duration: Math.max(3, Math.round(DURATION / 2)),
  });
  // Exactly 1,000 live tokens for the list scenario.
  const list = (await (await fetch(`${server.url}/api/v1/api-tokens`, { headers: auth })).json()) as { id: string }[];
  for (const t of list.slice(1000)) await fetch(`${server.url}/api/v1/api-tokens/${t.id}`, { method: 'DELETE', headers: auth });
  for (let i = list.length; i < 1000; i++) {
    await fetch(`${server.url}/api/v1/api-tokens`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"fill","scopes":["apps:read"]}' });
  }
  const tokenList = await load(`${server.url}/api/v1/api-tokens`, { headers: auth });
  clearInterval(sampler);
  await stop(server.child);

  const per1000 = (dq: number, run: Run) => Math.round((dq / Math.max(1, run.rps * DURATION)) * 1000 * 100) / 100;
  void baselineRps;
  return {
    backend: name,
    cold_start_ms: [...starts].sort((a, b) => a - b)[1]!,
    idle_rss_mb: idle,
    loaded_rss_mb: peak,
    catalog_anonymous: anon,
    catalog_with_token: withToken,
    auth_check: check,
    token_list_1000: tokenList,
    token_create: created,
    storage_queries_per_1000_catalog_requests: per1000(q1 - q0, anon),
    storage_queries_per_1000_cached_checks: per1000(q3 - q2, check),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'infracat-bench-'));
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  process.stdout.write(`bench: ${machine}; ${DURATION} s per scenario, ${CONNECTIONS} connections, pipelining ${PIPELINING}\n`);

  // The bytes infracat serves for GET /api/v1/plans, for the baseline to answer.
  const probe = await infracat(`sqlite:${path.join(dir, 'probe.sqlite')}`);
  const plansBytes = Buffer.from(await (await fetch(`${probe.url}/api/v1/plans`)).arrayBuffer());
  await stop(probe.child);

  const base = await baseline(plansBytes);
  const baseStarted = performance.now();
  const baseRss = rssMb(base.child.pid!);
  process.stdout.write('  baseline: node:http...\n');
  const baseRun = await load(base.url);
  await stop(base.child);
  const coldBase = await (async () => {
    const t0 = performance.now();
    const b = await baseline(plansBytes);
    const ms = performance.now() - t0;
    await stop(b.child);
    return ms;
  })();
  void baseStarted;

  const results: BackendResult[] = [];
  for (const name of BACKENDS) {
    if (name === 'sqlite') results.push(await benchBackend('sqlite', `sqlite:${path.join(dir, 'bench.sqlite')}`, baseRun.rps));
    else if (name === 'postgres') {
      const pg = await startEmbeddedPostgres();
      try {
        results.push(await benchBackend('postgres', pg.url, baseRun.rps));
      } finally {
        await pg.destroy();
      }
    }
  }
  rmSync(dir, { recursive: true, force: true });

  const ratio = (r: Run) => Math.round((r.rps / baseRun.rps) * 1000) / 1000;
  const rows: string[][] = [['scenario', ...results.map((r) => r.backend), 'target']];
  const fmt = (r: Run) => `${Math.round(r.rps)} rps (${ratio(r)}x) p99 ${r.p99} ms${r.non2xx + r.errors > 0 ? ` !${r.non2xx + r.errors}` : ''}`;
  rows.push(['baseline node:http', ...results.map(() => `${Math.round(baseRun.rps)} rps (1x) p99 ${baseRun.p99} ms`), '']);
  rows.push(['catalog GET, anonymous', ...results.map((r) => fmt(r.catalog_anonymous)), '>= 0.9x']);
  rows.push(['catalog GET, valid token', ...results.map((r) => fmt(r.catalog_with_token)), '<= 10% below anonymous']);
  rows.push(['token cost vs anonymous', ...results.map((r) => `${(((r.catalog_anonymous.rps - r.catalog_with_token.rps) / r.catalog_anonymous.rps) * 100).toFixed(1)}% slower`), '<= 10%']);
  rows.push(['auth check, valid token', ...results.map((r) => fmt(r.auth_check)), 'PostgreSQL within 10% of SQLite']);
  rows.push(['token list, 1000 tokens', ...results.map((r) => fmt(r.token_list_1000)), '']);
  rows.push(['token create', ...results.map((r) => fmt(r.token_create)), '']);
  rows.push(['cold start to first answer', ...results.map((r) => `${Math.round(r.cold_start_ms)} ms (node:http ${Math.round(coldBase)} ms)`), '< 500 ms']);
  rows.push(['RSS idle / loaded', ...results.map((r) => `${r.idle_rss_mb.toFixed(0)} / ${r.loaded_rss_mb.toFixed(0)} MB (node:http ${baseRss.toFixed(0)} MB)`), 'idle < 100 MB']);
  rows.push(['storage calls per 1000 catalog GETs', ...results.map((r) => String(r.storage_queries_per_1000_catalog_requests)), '~0 (background polls only)']);
  rows.push(['storage calls per 1000 cached checks', ...results.map((r) => String(r.storage_queries_per_1000_cached_checks)), '~0 (batched last-used only)']);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  process.stdout.write(`\n${rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')).join('\n')}\n`);

  const out = process.env.BENCH_JSON ?? 'bench-results.json';
  writeFileSync(out, JSON.stringify({ machine, duration_s: DURATION, connections: CONNECTIONS, pipelining: PIPELINING, baseline: { ...baseRun, cold_start_ms: coldBase, rss_mb: baseRss }, results, ratios: results.map((r) => ({ backend: r.backend, catalog_anonymous: ratio(r.catalog_anonymous), catalog_with_token: ratio(r.catalog_with_token), auth_check: ratio(r.auth_check) })) }, null, 2));
  process.stdout.write(`\nwrote ${out}\n`);
}

await main();
