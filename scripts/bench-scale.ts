// `npm run bench:scale`: how infracat's paged lists, filters, token verification, memory and
// start grow with the rows it holds, on SQLite and on an embedded PostgreSQL. At each size
// (SCALE_SIZES) the database is grown by writing rows directly (scripts/lib/seed.ts), then
// the built server, pinned to CPU 0, answers wrk pinned to CPU 1 (scripts/lib/load.ts) for
// each endpoint; an endpoint slower than 100 ms a request is timed over 20 requests in turn
// instead. Verification with a cold cache presents tokens never presented before, each once,
// in turn. Then the catalog lists at each catalog size (SCALE_CATALOG_SIZES plans), and
// the time to apply a catalog of 20,000 plans, 1,000 images and 50 regions through the
// API (diff, then PUT) and through `infracat catalog apply`, on a database of its own.
// BENCHMARKS.md says what it reports and the goals; it prints PASS/FAIL for each and
// exits 0 unless something errored (a non-2xx answer included).
//
//   SCALE_STEPS=rows,catalog,apply          what to run: the sizes, the catalog lists, the applies
//   SCALE_SIZES=1000,10000,100000,1000000   rows of each kind per size
//   SCALE_BACKENDS=sqlite,postgres
//   SCALE_CATALOG_SIZES=100,1000,10000      plans per catalog
//   SCALE_SECONDS=3  SCALE_CONNECTIONS=8    each wrk run
//   SCALE_STARTS=3                          starts of each kind per size (medians)
//   SCALE_COLD_CHECKS=500                   verifications with a cold cache per size
//   SCALE_APPLY_ROUNDS=3                    applies of the large catalog, each way
//   SCALE_JSON=FILE                         every figure, as JSON
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { planSlug } from '../src/catalog/model.js';
import { encodeCursor } from '../src/tokens/query.js';
import { startEmbeddedPostgres } from '../test/helpers/embedded-pg.js';
import { largeCatalog } from '../test/helpers/large-catalog.js';
import { NoAnswerError, runCli, startInfracat, stopServer } from './lib/builds.js';
import { canPin, drive, ensureWrk, median, rssMb } from './lib/load.js';
import {
  applyTable,
  catalogTable,
  cell,
  goals,
  markdown,
  ms,
  sizeTable,
  type ApplyResult,
  type BackendResult,
  type CatalogResult,
  type Endpoint,
  type Figure,
  type Goal,
  type SizeResult,
} from './lib/scale-report.js';
import { grow, openWriter, ScaleLayout, SEEDED_SCOPE, TOKENS_PER_ACCOUNT, topUpBacklog } from './lib/seed.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');

const list = (name: string, fallback: string): string[] =>
  (process.env[name] ?? fallback)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
const counts = (name: string, fallback: string): number[] =>
  list(name, fallback)
    .map((s) => {
      const n = Number(s);
      if (!Number.isSafeInteger(n) || n < 10) throw new Error(`${name}: ${s} is not a whole number of at least 10`);
      return n;
    })
    .sort((a, b) => a - b);

const STEPS = list('SCALE_STEPS', 'rows,catalog,apply');
for (const step of STEPS)
  if (!['rows', 'catalog', 'apply'].includes(step))
    throw new Error(`SCALE_STEPS: unknown step ${step} (rows, catalog, apply)`);
const SIZES = STEPS.includes('rows') ? counts('SCALE_SIZES', '1000,10000,100000,1000000') : [];
const BACKENDS = list('SCALE_BACKENDS', 'sqlite,postgres');
const CATALOG_SIZES = counts('SCALE_CATALOG_SIZES', '100,1000,10000');
const SECONDS = Number(process.env.SCALE_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.SCALE_CONNECTIONS ?? 8);
const STARTS = Number(process.env.SCALE_STARTS ?? 3);
const COLD_CHECKS = Number(process.env.SCALE_COLD_CHECKS ?? 500);
const APPLY_ROUNDS = Number(process.env.SCALE_APPLY_ROUNDS ?? 3);
/** The catalog the apply step times: the one test/catalog/scale.test.ts and test/cli/catalog.test.ts apply. */
const APPLY_SCALE = { plans: 20_000, images: 1_000, regions: 50 };

/** Set on every server and CLI run, so the seed's secrets and expiries match what the server reads. */
const PREFIX = 'icat';
const RETENTION_DAYS = 30;
const SERVER_ENV = { TOKEN_PREFIX: PREFIX, TOKEN_EXPIRED_RETENTION_DAYS: String(RETENTION_DAYS) };
/** An endpoint whose answer takes longer than this is timed over SEQUENTIAL requests in turn, not under wrk. */
const SLOW_MS = 100;
const SEQUENTIAL = 20;
/** How long a start may take to answer /healthz: a start still purging at 1M rows is reported, not fatal. */
const START_TIMEOUT_MS = 120_000;
const CHECK_PATH = `/api/v1/auth/check?scope=${SEEDED_SCOPE}`;
const REGIONS = 10;
/** The region that lists half the plans; every other region offers them all. */
const FILTERED_REGION = `scale${REGIONS - 1}`;

const load = { wrk: ensureWrk(), pin: canPin() };
const dir = mkdtempSync(path.join(tmpdir(), 'infracat-bench-scale-'));
const running = new Set<ChildProcess>();
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

interface Server {
  child: ChildProcess;
  url: string;
}
interface Request {
  path: string;
  headers: Record<string, string>;
}
interface Backend {
  name: string;
  urls: { main: string; empty: string; backlog: string; apply: string };
  auth: Record<string, string>;
  layout: ScaleLayout;
  /** The next free index of the backlog database's tokens. */
  backlogNext: number;
  close: () => Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startServer(databaseUrl: string): Promise<Server> {
  const s = await startInfracat(CLI, databaseUrl, { pin: load.pin, env: SERVER_ENV, timeoutMs: START_TIMEOUT_MS });
  running.add(s.child);
  return s;
}

async function stop(s: Server, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  await stopServer(s.child, signal);
  running.delete(s.child);
}

/** One GET over the kept-alive connection: status, Link header, body. */
function get(url: string, headers: Record<string, string>): Promise<{ status: number; link: string; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { headers, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, link: String(res.headers.link ?? ''), body }));
    })
      .on('error', reject)
      .end();
  });
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

/** `requests` one after the other, each timed; throws on an answer other than 200. */
async function sequential(server: Server, requests: readonly Request[]): Promise<Figure> {
  const times: number[] = [];
  const t0 = performance.now();
  for (const r of requests) {
    const t = performance.now();
    const res = await get(server.url + r.path, r.headers);
    times.push(performance.now() - t);
    if (res.status !== 200) throw new Error(`GET ${r.path}: ${res.status} ${res.body.slice(0, 300)}`);
  }
  const seconds = (performance.now() - t0) / 1000;
  times.sort((a, b) => a - b);
  const p99 = percentile(times, 99);
  const rps = requests.length / seconds;
  return {
    p50: percentile(times, 50),
    p99,
    rps,
    requests: requests.length,
    how: 'sequential',
    failed: 0,
    inTurnP99: p99,
  };
}

/**
 * One endpoint: SEQUENTIAL requests in turn (after one untimed, which compiles the route's
 * schemas on a fresh server), then, unless one answer took over SLOW_MS, a short wrk run.
 */
async function measure(server: Server, r: Request): Promise<Figure> {
  await get(server.url + r.path, r.headers);
  const inTurn = await sequential(server, Array<Request>(SEQUENTIAL).fill(r));
  if (inTurn.p50 > SLOW_MS) return inTurn;
  const run = await drive(load, server.child.pid!, server.url + r.path, {
    headers: r.headers,
    seconds: SECONDS,
    connections: CONNECTIONS,
    dir,
  });
  const failed = run.non2xx + run.errors;
  return {
    p50: run.p50,
    p99: run.p99,
    rps: run.rps,
    requests: run.requests,
    how: 'wrk',
    failed,
    inTurnP99: inTurn.p99,
  };
}

/** Throws unless `path` answers a non-empty JSON array: a list that finds nothing measures nothing. */
async function expectItems(server: Server, r: Request): Promise<void> {
  const res = await get(server.url + r.path, r.headers);
  const items: unknown = res.status === 200 ? JSON.parse(res.body) : null;
  if (!Array.isArray(items) || items.length === 0)
    throw new Error(`GET ${r.path}: expected a non-empty list, got ${res.status} ${res.body.slice(0, 200)}`);
}

const ENDPOINTS: readonly Endpoint[] = [
  { key: 'tokens', label: 'GET /api/v1/api-tokens, first page', list: true },
  { key: 'tokens_deep', label: 'GET /api/v1/api-tokens, a page in the middle (Link cursor)', list: true },
  { key: 'accounts', label: 'GET /api/v1/accounts, first page', list: true },
  { key: 'accounts_external_id', label: 'GET /api/v1/accounts?external_id=', list: true },
  { key: 'accounts_status', label: 'GET /api/v1/accounts?status=suspended', list: true },
  { key: 'account_tokens', label: `GET /api/v1/accounts/{id}/api-tokens (${TOKENS_PER_ACCOUNT} tokens)`, list: true },
  { key: 'audit', label: 'GET /api/v1/audit-events, first page', list: true },
  { key: 'audit_action', label: 'GET /api/v1/audit-events?action=', list: true },
  { key: 'audit_target', label: 'GET /api/v1/audit-events?target_id=', list: true },
  { key: 'audit_since_until', label: 'GET /api/v1/audit-events?since=&until=', list: true },
  { key: 'check_warm', label: 'forward-auth check, warm cache (one token)', list: false },
  { key: 'check_cold', label: 'forward-auth check, cold cache (each token once, in turn)', list: false },
];

/**
 * The path of the token page after the middle of the operator account's list, as the
 * service's Link header names it: the cursor of the middle row (the service's own codec)
 * asks for the page there, and that page's Link is what a client paging deep would follow.
 */
async function deepPagePath(server: Server, b: Backend, size: number): Promise<string> {
  const k = Math.floor(size / 2);
  const cursor = encodeCursor({ createdAt: b.layout.time('operatorToken', k), id: b.layout.operatorTokenId(k) });
  const res = await get(`${server.url}/api/v1/api-tokens?cursor=${cursor}`, b.auth);
  const link = /<([^>]+)>;\s*rel="next"/.exec(res.link)?.[1];
  if (res.status !== 200 || link === undefined)
    throw new Error(`GET /api/v1/api-tokens?cursor=...: ${res.status} without a next link: ${res.body.slice(0, 200)}`);
  return link;
}

/** Each measured path at `size` (all but the cold check), by ENDPOINTS' key. */
function paths(b: Backend, size: number, deep: string): Record<string, string> {
  const { layout } = b;
  const middle = Math.floor(size / 2);
  // An active account among those holding tokens, and a window of 500 events in the middle of the trail.
  let account = Math.floor(size / TOKENS_PER_ACCOUNT / 2);
  if (layout.suspended(account)) account -= 1;
  const iso = (t: number) => new Date(t).toISOString();
  const window = `since=${iso(layout.eventTime(middle))}&until=${iso(layout.eventTime(middle + 500))}`;
  return {
    tokens: '/api/v1/api-tokens',
    tokens_deep: deep,
    accounts: '/api/v1/accounts',
    accounts_external_id: `/api/v1/accounts?external_id=${layout.externalId(middle)}`,
    accounts_status: '/api/v1/accounts?status=suspended',
    account_tokens: `/api/v1/accounts/${layout.accountId(account)}/api-tokens`,
    audit: '/api/v1/audit-events',
    audit_action: '/api/v1/audit-events?action=api_token.rotated',
    audit_target: `/api/v1/audit-events?target_id=${layout.accountTokenId(layout.targetOf(middle))}`,
    audit_since_until: `/api/v1/audit-events?${window}`,
    check_warm: CHECK_PATH,
  };
}

/** Every endpoint at one size, on a fresh start of the server; and its RSS. */
async function measureSize(
  b: Backend,
  size: number,
  coldSecrets: readonly string[],
): Promise<Pick<SizeResult, 'figures' | 'idleRssMb' | 'loadedRssMb'>> {
  const server = await startServer(b.urls.main);
  try {
    await sleep(1000);
    const idleRssMb = rssMb(server.child.pid!);
    const figures: Record<string, Figure> = {};
    const all = paths(b, size, await deepPagePath(server, b, size));
    for (const e of ENDPOINTS.filter((x) => x.key in all)) {
      const r = { path: all[e.key]!, headers: b.auth };
      if (e.list) await expectItems(server, r);
      figures[e.key] = await measure(server, r);
      process.stdout.write(`    ${e.key}: ${cell(figures[e.key]!)}\n`);
    }
    figures.check_cold = await sequential(
      server,
      coldSecrets.map((s) => ({ path: CHECK_PATH, headers: { authorization: `Bearer ${s}` } })),
    );
    process.stdout.write(`    check_cold: ${cell(figures.check_cold)}\n`);
    return { figures, idleRssMb, loadedRssMb: rssMb(server.child.pid!) };
  } finally {
    await stop(server);
  }
}

/**
 * Spawn to the first 200 from /healthz, ms, or null when none came within START_TIMEOUT_MS;
 * the server is then killed (a stop would wait for its purge).
 */
async function timedStart(databaseUrl: string): Promise<number | null> {
  const t0 = performance.now();
  let server: Server;
  try {
    server = await startServer(databaseUrl);
  } catch (err) {
    if (err instanceof NoAnswerError) return null;
    throw err;
  }
  const took = performance.now() - t0;
  await stop(server, 'SIGKILL');
  return took;
}

/**
 * Starts of an empty database and of one holding `size` expired tokens to purge, in turn:
 * medians (a start without an answer counts as START_TIMEOUT_MS) and how many had none.
 */
async function startTimes(
  b: Backend,
  size: number,
): Promise<Pick<SizeResult, 'emptyStartMs' | 'backlogStartMs' | 'unanswered'>> {
  const empty: (number | null)[] = [];
  const backlog: (number | null)[] = [];
  for (let i = 0; i < STARTS; i++) {
    // Each start begins with no dirty pages of the seed left to write back, so that a fsync
    // in the start measures the server's writes, not the operating system's flush of the seed.
    execFileSync('sync');
    empty.push(await timedStart(b.urls.empty));
    const writer = await openWriter(b.urls.backlog);
    try {
      b.backlogNext = await topUpBacklog(writer, b.layout, RETENTION_DAYS, size, b.backlogNext);
    } finally {
      await writer.close();
    }
    execFileSync('sync');
    backlog.push(await timedStart(b.urls.backlog));
  }
  const times = (xs: (number | null)[]) => median(xs.map((x) => x ?? START_TIMEOUT_MS));
  const none = (xs: (number | null)[]) => xs.filter((x) => x === null).length;
  return {
    emptyStartMs: times(empty),
    backlogStartMs: times(backlog),
    unanswered: { empty: none(empty), backlog: none(backlog) },
  };
}

/** Grows the main database from `from` to `to` rows; the secrets for the cold checks. */
async function seed(b: Backend, from: number, to: number): Promise<string[]> {
  const writer = await openWriter(b.urls.main);
  try {
    const secrets = await grow(writer, b.layout, from, to, COLD_CHECKS);
    // What autovacuum does after a bulk load, done now so that the plans are not a matter
    // of its timing. SQLite gathers no statistics unless told, and infracat never tells it.
    if (b.name === 'postgres') await writer.run('ANALYZE');
    return secrets;
  } finally {
    await writer.close();
  }
}

const PLAN_TYPES = ['general', 'cpu-optimized', 'memory-optimized'] as const;

/** `n` plans with distinct slugs (type, vcpus and memory vary together). */
function plans(n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => {
    const type = PLAN_TYPES[i % 3]!;
    const vcpus = 1 + (Math.floor(i / 3) % 100);
    const memoryMb = 1024 * (1 + Math.floor(i / 300));
    const slug = planSlug(type, vcpus, memoryMb);
    return {
      id: slug,
      slug,
      vcpus,
      memory_mb: memoryMb,
      disk_gb: 25 * vcpus,
      transfer_tb: 1 + (i % 10),
      type,
      price_monthly: 5.5 + (i % 500),
    };
  });
}

/** REGIONS regions offering every plan, but FILTERED_REGION, which lists every other one. */
function regions(planList: Record<string, unknown>[]): Record<string, unknown>[] {
  const half = planList.filter((_, i) => i % 2 === 0).map((p) => p.slug);
  return Array.from({ length: REGIONS }, (_, r) => ({
    slug: `scale${r}`,
    name: `Scale ${r}`,
    available: true,
    features: ['backups', 'ipv6'],
    ...(`scale${r}` === FILTERED_REGION ? { plans: half } : {}),
  }));
}

const problemText = (body: string): string => {
  try {
    const p = JSON.parse(body) as { detail?: string; errors?: { pointer: string; detail: string }[] };
    const first = p.errors?.[0];
    return [p.detail, first && `${first.pointer}: ${first.detail}`].filter(Boolean).join('; ');
  } catch {
    return body.slice(0, 200);
  }
};

/**
 * Applies `doc` through PUT /api/v1/catalog, else through `infracat catalog apply`; null
 * once applied, or why both refused it.
 */
async function applyCatalog(
  server: Server,
  b: Backend,
  doc: Record<string, unknown>,
  n: number,
): Promise<string | null> {
  const body = JSON.stringify(doc);
  const res = await fetch(`${server.url}/api/v1/catalog?allow_removals=true`, {
    method: 'PUT',
    headers: { ...b.auth, 'content-type': 'application/json', 'if-match': '*' },
    body,
  });
  if (res.ok) return null;
  const api = `PUT /api/v1/catalog: ${res.status} ${problemText(await res.text())}`;
  const file = path.join(dir, `catalog-${b.name}-${n}.json`);
  writeFileSync(file, body);
  try {
    runCli(CLI, b.urls.main, ['catalog', 'apply', file, '--allow-removals'], SERVER_ENV);
    return null;
  } catch (err) {
    // runCli's message ends with the command's stderr: a line naming the file, then one indented line per problem.
    const problems = String((err as Error).message)
      .split('\n')
      .filter((line) => /^ {2}\S/.test(line))
      .map((line) => line.trim());
    return `${api}; infracat catalog apply: ${problems.join('; ') || String(err)}`;
  }
}

/** Waits until the server lists `n` plans (an apply through the CLI reaches it within about a second). */
async function waitForPlans(server: Server, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const res = await get(`${server.url}/api/v1/plans`, {});
    if (res.status === 200 && (JSON.parse(res.body) as unknown[]).length === n) return;
    await sleep(100);
  }
  throw new Error(`the server did not list ${n} plans within 20 s of the apply`);
}

/** The plan list, unfiltered and by region, at each catalog size. */
async function catalogFigures(b: Backend): Promise<Map<number, CatalogResult>> {
  const out = new Map<number, CatalogResult>();
  const server = await startServer(b.urls.main);
  try {
    const base = (await (await fetch(`${server.url}/api/v1/catalog`, { headers: b.auth })).json()) as Record<
      string,
      unknown
    >;
    for (const n of CATALOG_SIZES) {
      process.stdout.write(`  ${b.name}: catalog of ${n} plans\n`);
      const planList = plans(n);
      const refused = await applyCatalog(server, b, { ...base, plans: planList, regions: regions(planList) }, n);
      if (refused !== null) {
        process.stdout.write(`    refused: ${refused}\n`);
        out.set(n, { refused });
        continue;
      }
      await waitForPlans(server, n);
      out.set(n, {
        plans: await measure(server, { path: '/api/v1/plans', headers: {} }),
        region: await measure(server, { path: `/api/v1/plans?region=${FILTERED_REGION}`, headers: {} }),
      });
    }
  } finally {
    await stop(server);
  }
  return out;
}

/** Throws unless `res` is a 2xx; reads its body to the end. */
async function expectOk(what: string, res: Response): Promise<void> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: ${res.status} ${problemText(text)}`);
}

/**
 * The large catalog applied APPLY_ROUNDS times through the API (POST /api/v1/catalog/diff,
 * then PUT, timed from the first byte sent to the last received), then APPLY_ROUNDS times
 * through `infracat catalog apply` (spawn to exit), on the backend's apply database. Each
 * apply alternates between the document and the same with every plan's price changed, so
 * each one writes a new version (the first replaces the shipped catalog).
 */
async function applyFigures(b: Backend): Promise<ApplyResult> {
  const a = largeCatalog(APPLY_SCALE).document;
  const changed = { ...a, plans: a.plans.map((p) => ({ ...p, price_monthly: (p.price_monthly as number) + 1 })) };
  const bodies = [a, changed].map((d) => JSON.stringify(d));
  const files = bodies.map((body, i) => {
    const file = path.join(dir, `apply-${b.name}-${i}.json`);
    writeFileSync(file, body);
    return file;
  });
  const created = runCli(
    CLI,
    b.urls.apply,
    ['tokens', 'create', '--name', 'bench-apply', '--all-scopes', '--json'],
    SERVER_ENV,
  );
  const auth = { authorization: `Bearer ${(JSON.parse(created) as { token: string }).token}` };
  const api: ApplyResult['api'] = [];
  const server = await startServer(b.urls.apply);
  try {
    for (let i = 0; i < APPLY_ROUNDS; i++) {
      const body = bodies[i % 2]!;
      const headers = { ...auth, 'content-type': 'application/json' };
      const t0 = performance.now();
      await expectOk(
        'POST /api/v1/catalog/diff',
        await fetch(`${server.url}/api/v1/catalog/diff`, { method: 'POST', headers, body }),
      );
      const t1 = performance.now();
      await expectOk(
        'PUT /api/v1/catalog',
        await fetch(`${server.url}/api/v1/catalog?allow_removals=true`, {
          method: 'PUT',
          headers: { ...headers, 'if-match': '*' },
          body,
        }),
      );
      api.push({ diffMs: t1 - t0, putMs: performance.now() - t1 });
      process.stdout.write(`    API round ${i + 1}: diff ${ms(t1 - t0)}, PUT ${ms(api.at(-1)!.putMs)}\n`);
    }
  } finally {
    await stop(server);
  }
  const cliMs: number[] = [];
  for (let i = 0; i < APPLY_ROUNDS; i++) {
    // The other document than the one applied last.
    const file = files[(APPLY_ROUNDS + i) % 2]!;
    const t0 = performance.now();
    runCli(CLI, b.urls.apply, ['catalog', 'apply', file, '--allow-removals'], SERVER_ENV);
    cliMs.push(performance.now() - t0);
    process.stdout.write(`    CLI round ${i + 1}: ${ms(cliMs.at(-1)!)}\n`);
  }
  return { entries: APPLY_SCALE, bytes: Buffer.byteLength(bodies[0]!), api, cliMs };
}

/** `url` with its database name replaced. */
const onDatabase = (url: string, name: string): string => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

/** The backend's databases (measured, empty, backlog, apply), not yet migrated, and how to let go of them. */
async function databases(name: string): Promise<{ urls: Backend['urls']; close: () => Promise<void> }> {
  if (name === 'sqlite') {
    mkdirSync(path.join(dir, name));
    const file = (db: string) => `sqlite:${path.join(dir, name, `${db}.sqlite`)}`;
    return {
      urls: { main: file('main'), empty: file('empty'), backlog: file('backlog'), apply: file('apply') },
      close: async () => {},
    };
  }
  if (name !== 'postgres') throw new Error(`unknown backend ${name} (SCALE_BACKENDS: sqlite, postgres)`);
  const server = await startEmbeddedPostgres();
  try {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    for (const db of ['scale_empty', 'scale_backlog', 'scale_apply']) await client.query(`CREATE DATABASE ${db}`);
    await client.end();
  } catch (err) {
    await server.destroy();
    throw err;
  }
  const urls = {
    main: server.url,
    empty: onDatabase(server.url, 'scale_empty'),
    backlog: onDatabase(server.url, 'scale_backlog'),
    apply: onDatabase(server.url, 'scale_apply'),
  };
  return { urls, close: () => server.destroy() };
}

/**
 * The databases SCALE_STEPS use migrated and started once (which applies the shipped
 * catalog), and the bench's token on the measured one.
 */
async function prepare(name: string): Promise<Backend> {
  const { urls, close } = await databases(name);
  const used: (keyof Backend['urls'])[] = [
    ...(STEPS.includes('rows') || STEPS.includes('catalog') ? (['main'] as const) : []),
    ...(STEPS.includes('rows') ? (['empty', 'backlog'] as const) : []),
    ...(STEPS.includes('apply') ? (['apply'] as const) : []),
  ];
  try {
    for (const url of used.map((k) => urls[k])) {
      runCli(CLI, url, ['migrate'], SERVER_ENV);
      await stop(await startServer(url)); // not a start measured: the first one applies the catalog
    }
    const created = used.includes('main')
      ? runCli(CLI, urls.main, ['tokens', 'create', '--name', 'bench-scale', '--all-scopes', '--json'], SERVER_ENV)
      : '{"token":""}';
    const { token } = JSON.parse(created) as { token: string };
    const layout = new ScaleLayout(Date.now(), PREFIX);
    return { name, urls, auth: { authorization: `Bearer ${token}` }, layout, backlogNext: 0, close };
  } catch (err) {
    await close();
    throw err;
  }
}

async function runBackend(name: string): Promise<BackendResult> {
  const b = await prepare(name);
  const result: BackendResult = { name, sizes: new Map(), catalog: new Map() };
  try {
    let seeded = 0;
    for (const size of SIZES) {
      process.stdout.write(`  ${name}: seeding to ${size} rows of each kind\n`);
      const t0 = performance.now();
      const cold = await seed(b, seeded, size);
      seeded = size;
      const seedSeconds = (performance.now() - t0) / 1000;
      process.stdout.write(`  ${name}: ${size} rows (seeded in ${seedSeconds.toFixed(1)} s): measuring\n`);
      const measured = await measureSize(b, size, cold);
      const starts = await startTimes(b, size);
      result.sizes.set(size, { seedSeconds, ...measured, ...starts });
    }
    if (STEPS.includes('catalog')) result.catalog = await catalogFigures(b);
    if (STEPS.includes('apply')) {
      const { plans: p, images: i, regions: r } = APPLY_SCALE;
      process.stdout.write(`  ${name}: applying ${p} plans, ${i} images, ${r} regions\n`);
      result.apply = await applyFigures(b);
    }
  } finally {
    await b.close();
  }
  return result;
}

function report(results: BackendResult[], machine: string, method: string): Goal[] {
  const all: Goal[] = [];
  for (const r of results) {
    const tables = [
      ...(r.sizes.size > 0 ? [sizeTable(r, ENDPOINTS)] : []),
      ...(r.catalog.size > 0 ? [catalogTable(r)] : []),
      ...(r.apply !== undefined ? [applyTable(r.apply)] : []),
    ];
    process.stdout.write(`\n### ${r.name}\n\n${tables.join('\n\n')}\n`);
    all.push(...goals(r, ENDPOINTS));
  }
  const verdict = (g: Goal) => (g.pass === null ? 'n/a' : g.pass ? 'PASS' : 'FAIL');
  const rows = [
    ['backend', 'goal', 'verdict', 'figures'],
    ...all.map((g) => [g.backend, g.goal, verdict(g), g.detail]),
  ];
  process.stdout.write(`\n### Goals\n\n${markdown(rows)}\n`);
  const out = process.env.SCALE_JSON;
  if (out !== undefined && out !== '') {
    const backends = results.map((r) => ({
      name: r.name,
      sizes: Object.fromEntries(r.sizes),
      catalog: Object.fromEntries(r.catalog),
      apply: r.apply,
    }));
    const settings = { STEPS, SIZES, CATALOG_SIZES, SECONDS, CONNECTIONS, STARTS, COLD_CHECKS, APPLY_ROUNDS };
    writeFileSync(out, JSON.stringify({ machine, method, settings, backends, goals: all }, null, 2));
    process.stdout.write(`\nwrote ${out}\n`);
  }
  return all;
}

async function main(): Promise<void> {
  const gib = Math.round(totalmem() / 2 ** 30);
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${gib} GiB, Node ${process.version}`;
  const method =
    `${load.pin ? 'server on CPU 0, load on CPU 1' : 'NOT pinned (no taskset or one CPU)'}; ` +
    `${load.wrk ? 'wrk -t1' : 'autocannon (wrk unavailable)'} -c${CONNECTIONS} for ${SECONDS} s per endpoint`;
  process.stdout.write(`bench:scale: ${machine}\n             ${method}\n`);
  const results: BackendResult[] = [];
  for (const name of BACKENDS) results.push(await runBackend(name));
  report(results, machine, method);
  const failed = results
    .flatMap((r) => [
      ...[...r.sizes].flatMap(([n, s]) =>
        Object.entries(s.figures).map(([k, f]) => [`${r.name} ${n} rows ${k}`, f] as const),
      ),
      ...[...r.catalog].flatMap(([n, c]) =>
        'refused' in c ? [] : Object.entries(c).map(([k, f]) => [`${r.name} ${n} plans ${k}`, f] as const),
      ),
    ])
    .filter(([, f]) => f.failed > 0)
    .map(([what, f]) => `${what}: ${f.failed}`);
  if (failed.length > 0) throw new Error(`non-2xx answers or socket errors: ${failed.join(', ')}`);
}

try {
  await main();
} finally {
  await Promise.all([...running].map((child) => stopServer(child, 'SIGKILL')));
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}
