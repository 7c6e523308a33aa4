// `node --import tsx scripts/bench-touch.ts`: how long one last_used_at statement takes
// (src/storage/sql-store.ts touchQuery) with a large table, by rows per statement, and how
// long the store's flush of 10,000 distinct tokens takes. On SQLite a statement runs
// synchronously on the event loop: its time is how long requests wait behind it, which is
// what BATCH_ROWS (src/storage/sql-store.ts) is chosen by.
//
// Then, with LAG_TOKENS more tokens of real secrets: `lag`, those tokens verified in
// process (the app's TokenService, every one cached) at LAG_RATE a second for
// TOUCH_BENCH_LAG_SECONDS, the app's own flush every LAST_USED_FLUSH_MS, and storage read
// every half second: how long the oldest use not yet stored has waited, against
// 2 x LAST_USED_FLUSH_MS. And `p99` (SQLite): the built server pinned to CPU 0, wrk on CPU
// 1 cycling through those tokens on GET /api/v1/api-tokens/current, in interleaved rounds
// with the flush on (LAST_USED_FLUSH_MS) and off (600,000 ms: no flush within a round); the
// p99 with the flush over the p99 without, against 1.2.
//
//   TOUCH_BENCH_PARTS=statements,lag,p99   what to run
//   TOUCH_BENCH_TOKENS=1000000        tokens in the table
//   TOUCH_BENCH_BACKENDS=sqlite,postgres
//   TOUCH_BENCH_ROUNDS=10             statements timed per size
//   TOUCH_BENCH_DROP_INDEX=NAME       drop this index after seeding (SQLite): what it costs the writes
//   TOUCH_BENCH_LAG_SECONDS=10        the lag's run
//   TOUCH_BENCH_P99_ROUNDS=3  TOUCH_BENCH_P99_SECONDS=5   rounds of each (flush on, off), each wrk run
//   LAST_USED_FLUSH_MS=1000           the flush interval of the lag and p99 parts
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logging.js';
import { OPERATOR_ACCOUNT_ID } from '../src/storage/migrations.js';
import { numbered } from '../src/storage/postgres/placeholders.js';
import { PostgresStore } from '../src/storage/postgres/store.js';
import { BATCH_ROWS, touchQuery } from '../src/storage/sql-store.js';
import { openDatabase } from '../src/storage/sqlite/driver.js';
import { SqliteStore } from '../src/storage/sqlite/store.js';
import type { Store } from '../src/storage/types.js';
import { generateSecret, hashSecret } from '../src/tokens/format.js';
import { startEmbeddedPostgres } from '../test/helpers/embedded-pg.js';
import { startInfracat, stopServer } from './lib/builds.js';
import { canPin, ensureWrk, LOAD_CPU, parseWrk, settle } from './lib/load.js';

const TOKENS = Number(process.env.TOUCH_BENCH_TOKENS ?? 1_000_000);
const BACKENDS = (process.env.TOUCH_BENCH_BACKENDS ?? 'sqlite,postgres').split(',').map((s) => s.trim());
const ROUNDS = Number(process.env.TOUCH_BENCH_ROUNDS ?? 10);
const SIZES = [BATCH_ROWS.sqlite, BATCH_ROWS.postgres, 5000].filter((n, i, all) => all.indexOf(n) === i);
const FLUSH_ROWS = 10_000;
const DROP_INDEX = process.env.TOUCH_BENCH_DROP_INDEX === '' ? undefined : process.env.TOUCH_BENCH_DROP_INDEX;
const PARTS = (process.env.TOUCH_BENCH_PARTS ?? 'statements,lag,p99').split(',').map((s) => s.trim());
const LAG_TOKENS = 10_000;
/** Verifications a second in the lag's run: each of the LAG_TOKENS once a second. */
const LAG_RATE = 10_000;
const LAG_SECONDS = Number(process.env.TOUCH_BENCH_LAG_SECONDS ?? 10);
const FLUSH_MS = Number(process.env.LAST_USED_FLUSH_MS ?? 1000);
const P99_ROUNDS = Number(process.env.TOUCH_BENCH_P99_ROUNDS ?? 3);
const P99_SECONDS = Number(process.env.TOUCH_BENCH_P99_SECONDS ?? 5);
const PREFIX = 'icat';
const CLI = path.resolve(import.meta.dirname, '..', 'dist/cli/main.js');

const id = (i: number) => `tok_${String(i).padStart(26, '0')}`;
let clock = 1_800_000_000_000;

/** `n` distinct token ids at random, each with a time later than any written before and an address. */
function batch(n: number): (string | number)[] {
  const picked = new Set<number>();
  while (picked.size < n) picked.add(1 + Math.floor(Math.random() * TOKENS));
  clock += 1;
  return [...picked].sort((a, b) => a - b).flatMap((i) => [id(i), clock, '203.0.113.7']);
}

const summary = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return `median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`;
};

interface Target {
  name: string;
  /** Its DATABASE_URL. */
  url: string;
  /** Rows of a SELECT on another connection than the store's. */
  read(sql: string, params: (string | number)[]): Promise<Record<string, unknown>[]>;
  /** Runs one statement, resolving to the milliseconds it took. */
  time(sql: string, params: (string | number)[]): Promise<number>;
  store: Store;
  close(): Promise<void>;
}

async function sqlite(): Promise<Target> {
  const dir = mkdtempSync(path.join(tmpdir(), 'infracat-touch-'));
  const file = path.join(dir, 'bench.sqlite');
  const store = new SqliteStore({ path: file, busyTimeoutMs: 5000 });
  await store.migrate();
  // The same connection settings as the store's (sqlite/store.ts).
  const raw = openDatabase(file, { timeout: 5000 });
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = FULL');
  raw
    .prepare(
      'INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, account_id)' +
        ' WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)' +
        ` SELECT 'tok_' || printf('%026d', i), 'bench', '["apps:read"]', printf('%064x', i),` +
        ' 1700000000000 + i, ? FROM n',
    )
    .run(TOKENS, OPERATOR_ACCOUNT_ID);
  if (DROP_INDEX !== undefined) {
    // An identifier, never text spliced into SQL unchecked.
    if (!/^[a-z_]+$/.test(DROP_INDEX)) throw new Error(`TOUCH_BENCH_DROP_INDEX: not an index name: ${DROP_INDEX}`);
    raw.exec(`DROP INDEX ${DROP_INDEX}`);
  }
  raw.pragma('wal_checkpoint(TRUNCATE)');
  return {
    name: 'sqlite',
    url: `sqlite:${file}`,
    read: (sql, params) => Promise.resolve(raw.prepare(sql).all(...params) as Record<string, unknown>[]),
    time(sql, params) {
      const started = performance.now();
      raw.prepare(sql).run(...params);
      return Promise.resolve(performance.now() - started);
    },
    store,
    async close() {
      raw.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgres(): Promise<Target> {
  const server = await startEmbeddedPostgres();
  const store = new PostgresStore({ url: server.url, poolMax: 4, timeoutMs: 600_000 });
  await store.migrate();
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  await client.query(
    'INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, account_id)' +
      ` SELECT 'tok_' || lpad(i::text, 26, '0'), 'bench', '["apps:read"]', lpad(to_hex(i), 64, '0'),` +
      ' 1700000000000 + i, $2 FROM generate_series(1, $1) AS i',
    [TOKENS, OPERATOR_ACCOUNT_ID],
  );
  await client.query('VACUUM ANALYZE api_tokens');
  return {
    name: 'postgres',
    url: server.url,
    read: async (sql, params) => (await client.query(numbered(sql), params)).rows as Record<string, unknown>[],
    async time(sql, params) {
      const started = performance.now();
      await client.query(numbered(sql), params);
      return performance.now() - started;
    },
    store,
    async close() {
      await client.end();
      await store.close();
      await server.destroy();
    },
  };
}

/** LAG_TOKENS tokens of real secrets in the operator account (ids `tok_lag...`, after every other). */
async function addLagTokens(target: Target): Promise<string[]> {
  const secrets = Array.from({ length: LAG_TOKENS }, () => generateSecret(PREFIX));
  for (let at = 0; at < LAG_TOKENS; at += 1000) {
    const chunk = secrets.slice(at, at + 1000);
    const values = chunk.map(() => `(?, 'lag', '["api-tokens:read"]', ?, CAST(? AS BIGINT), ?)`).join(', ');
    await target.time(
      `INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, account_id) VALUES ${values}`,
      chunk.flatMap((secret, i) => [lagId(at + i), hashSecret(secret), 1_700_000_000_000, OPERATOR_ACCOUNT_ID]),
    );
  }
  return secrets;
}
const lagId = (i: number) => `tok_lag${String(i).padStart(22, '0')}`;

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.ceil(q * xs.length) - 1]!;

/**
 * The lag: the app (its TokenService and its flush) on a store of its own over the
 * target's database, every lag token verified once (a storage lookup, then cached), then
 * LAG_RATE verifications a second, round-robin, on the app's clock. Every half second, each
 * token's stored last_used_at is read: the oldest of its uses later than that has waited
 * since it was made.
 */
async function measureLag(target: Target, secrets: string[]): Promise<void> {
  const store =
    target.name === 'postgres'
      ? new PostgresStore({ url: target.url, poolMax: 4, timeoutMs: 600_000 })
      : new SqliteStore({ path: target.url.slice('sqlite:'.length), busyTimeoutMs: 5000 });
  const config = loadConfig({
    DATABASE_URL: target.url,
    BOOTSTRAP_ADMIN_TOKEN: 'false',
    TOKEN_PREFIX: PREFIX,
    TOKEN_CACHE_MAX: String(2 * LAG_TOKENS),
    TOKEN_CACHE_TTL_MS: '600000',
    LAST_USED_FLUSH_MS: String(FLUSH_MS),
  });
  let now = Date.now();
  const app = buildApp({ config, store, logger: createLogger('silent'), now: () => now });
  await app.ready();
  try {
    const { service, lastUsed } = app.infracat.tokens;
    for (const secret of secrets) if (!(await service.verify(secret)).ok) throw new Error('a lag token did not verify');
    await lastUsed.flush();
    const flushed0 = lastUsed.stats.rows;
    const uses: number[][] = secrets.map(() => []);
    const first = secrets.map(() => 0); // per token, the first use not known stored
    const waits: number[] = [];
    const t0 = performance.now();
    let made = 0;
    let nextSample = t0 + 500;
    for (;;) {
      const elapsed = performance.now() - t0;
      if (elapsed >= LAG_SECONDS * 1000) break;
      now = Date.now();
      while (made < Math.floor((elapsed * LAG_RATE) / 1000)) {
        const i = made % LAG_TOKENS;
        if (!(await service.verify(secrets[i]!)).ok) throw new Error('a lag token was refused');
        uses[i]!.push(now);
        made += 1;
      }
      if (performance.now() >= nextSample) {
        nextSample += 500;
        const rows = await target.read(
          "SELECT id, last_used_at FROM api_tokens WHERE id >= 'tok_lag' AND id < 'tok_lah'",
          [],
        );
        const at = Date.now();
        let oldest = 0;
        for (const row of rows) {
          const i = Number((row.id as string).slice('tok_lag'.length));
          const stored = row.last_used_at === null ? 0 : Number(row.last_used_at);
          const list = uses[i]!;
          while (first[i]! < list.length && list[first[i]!]! <= stored) first[i]! += 1;
          if (first[i]! < list.length) oldest = Math.max(oldest, at - list[first[i]!]!);
        }
        waits.push(oldest);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    const seconds = (performance.now() - t0) / 1000;
    console.log(
      `${target.name}: lag at ${Math.round(made / seconds)} verifications/s of ${LAG_TOKENS} cached tokens for ` +
        `${seconds.toFixed(0)} s (${lastUsed.stats.rows - flushed0} rows flushed, LAST_USED_FLUSH_MS=${FLUSH_MS}): ` +
        `the oldest use not yet stored, read every 0.5 s: median ${quantile(waits, 0.5)} ms, ` +
        `p90 ${quantile(waits, 0.9)} ms, max ${Math.max(...waits)} ms; goal: within ${2 * FLUSH_MS} ms: ` +
        `${Math.max(...waits) <= 2 * FLUSH_MS ? 'PASS' : 'FAIL'}`,
    );
  } finally {
    await app.close();
  }
}

/** One wrk run, pinned to the load CPU, cycling GET /api/v1/api-tokens/current through the lag tokens. */
async function wrkCurrent(url: string, script: string, seconds: number): Promise<ReturnType<typeof parseWrk>> {
  const wrk = ensureWrk();
  if (wrk === undefined) throw new Error('p99: wrk is needed');
  const args = ['-t1', '-c8', `-d${seconds}s`, '--latency', '-s', script, `${url}/api/v1/api-tokens/current`];
  const out = await new Promise<string>((resolve, reject) => {
    const child = canPin() ? spawn('taskset', ['-c', LOAD_CPU, wrk, ...args]) : spawn(wrk, args);
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited ${code}: ${text}`))));
  });
  const run = parseWrk(out);
  if (run.non2xx + run.errors > 0) throw new Error(`p99: ${run.non2xx} non-2xx, ${run.errors} socket errors`);
  return run;
}

/**
 * SQLite: the built server on the target's database, rounds of flush on and flush off in
 * turn, each on a fresh start: wrk through every lag token (the cache filled), then the
 * measured run.
 */
async function measureP99(target: Target, secrets: string[], dir: string): Promise<void> {
  const list = path.join(dir, 'secrets.txt');
  writeFileSync(list, `${secrets.join('\n')}\n`);
  const script = path.join(dir, 'current.lua');
  writeFileSync(
    script,
    [
      'local secrets = {}',
      `for line in io.lines(${JSON.stringify(list)}) do secrets[#secrets + 1] = line end`,
      'local i = 0',
      'request = function()',
      '  i = i % #secrets + 1',
      '  return wrk.format("GET", nil, { ["Authorization"] = "Bearer " .. secrets[i] })',
      'end',
    ].join('\n'),
  );
  const figures: Record<'on' | 'off', { p99: number; rps: number }[]> = { on: [], off: [] };
  for (let round = 0; round < P99_ROUNDS; round++) {
    for (const flush of ['on', 'off'] as const) {
      const server = await startInfracat(CLI, target.url, {
        pin: canPin(),
        env: {
          TOKEN_PREFIX: PREFIX,
          TOKEN_CACHE_MAX: String(2 * LAG_TOKENS),
          TOKEN_CACHE_TTL_MS: '600000',
          LAST_USED_FLUSH_MS: flush === 'on' ? String(FLUSH_MS) : '600000',
        },
      });
      try {
        // Every token looked up once, then cached: wrk cycles through them from the first on
        // each run, so runs go on until one got through all of them.
        while ((await wrkCurrent(server.url, script, 8)).requests < LAG_TOKENS);
        await settle();
        const run = await wrkCurrent(server.url, script, P99_SECONDS);
        figures[flush].push({ p99: run.p99, rps: run.rps });
        console.log(
          `sqlite: p99 round ${round + 1}, flush ${flush}: ${run.p99.toFixed(1)} ms, ${Math.round(run.rps)}/s`,
        );
      } finally {
        await stopServer(server.child, 'SIGTERM');
      }
    }
  }
  const ratios = figures.on.map((f, i) => f.p99 / figures.off[i]!.p99);
  const med = quantile(ratios, 0.5);
  console.log(
    `sqlite: p99 of GET /api/v1/api-tokens/current, ${LAG_TOKENS} distinct tokens under wrk -c8, flush on over off ` +
      `(LAST_USED_FLUSH_MS=${FLUSH_MS} against 600000), by round: ` +
      `${ratios.map((r) => `x${r.toFixed(2)}`).join(', ')}; ` +
      `median x${med.toFixed(2)}; goal: at most x1.2: ${med <= 1.2 ? 'PASS' : 'FAIL'}`,
  );
}

for (const name of BACKENDS) {
  const started = performance.now();
  const target = name === 'postgres' ? await postgres() : await sqlite();
  console.log(`${name}: ${TOKENS} tokens seeded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  try {
    if (PARTS.includes('statements')) await statements(target);
    if (PARTS.includes('lag') || (PARTS.includes('p99') && name === 'sqlite')) {
      const secrets = await addLagTokens(target);
      if (PARTS.includes('lag')) await measureLag(target, secrets);
      if (PARTS.includes('p99') && name === 'sqlite') {
        const dir = mkdtempSync(path.join(tmpdir(), 'infracat-touch-p99-'));
        try {
          await measureP99(target, secrets, dir);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
    }
  } finally {
    await target.close();
  }
}

/** One statement's time by rows, and the store's flush of FLUSH_ROWS distinct tokens. */
async function statements(target: Target): Promise<void> {
  const { name } = target;
  for (const size of SIZES) {
    const sql = touchQuery(size);
    await target.time(sql, batch(size)); // prepared, and the rewritten text cached
    const ms: number[] = [];
    for (let r = 0; r < ROUNDS; r++) ms.push(await target.time(sql, batch(size)));
    console.log(`${name}: one statement of ${size} rows: ${summary(ms)}`);
  }
  const flushes: number[] = [];
  for (let r = 0; r < Math.min(ROUNDS, 5); r++) {
    const params = batch(FLUSH_ROWS);
    const entries = Array.from({ length: FLUSH_ROWS }, (_, i) => ({
      id: params[3 * i] as string,
      at: params[3 * i + 1] as number,
      ip: params[3 * i + 2] as string,
    }));
    const t0 = performance.now();
    await target.store.tokens.touch(entries);
    flushes.push(performance.now() - t0);
  }
  console.log(`${name}: a flush of ${FLUSH_ROWS} distinct tokens (store.tokens.touch): ${summary(flushes)}`);
}
