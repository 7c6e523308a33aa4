// `node --import tsx scripts/bench-touch.ts`: how long one last_used_at statement takes
// (src/storage/sql-store.ts touchQuery) with a large table, by rows per statement, and how
// long the store's flush of 10,000 distinct tokens takes. On SQLite a statement runs
// synchronously on the event loop: its time is how long requests wait behind it, which is
// what TOUCH_CHUNK_ROWS is chosen by.
//
//   TOUCH_BENCH_TOKENS=1000000        tokens in the table
//   TOUCH_BENCH_BACKENDS=sqlite,postgres
//   TOUCH_BENCH_ROUNDS=10             statements timed per size
//   TOUCH_BENCH_DROP_INDEX=NAME       drop this index after seeding (SQLite): what it costs the writes
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { OPERATOR_ACCOUNT_ID } from '../src/storage/migrations.js';
import { numbered } from '../src/storage/postgres/placeholders.js';
import { PostgresStore } from '../src/storage/postgres/store.js';
import { TOUCH_CHUNK_ROWS, touchQuery } from '../src/storage/sql-store.js';
import { openDatabase } from '../src/storage/sqlite/driver.js';
import { SqliteStore } from '../src/storage/sqlite/store.js';
import type { Store } from '../src/storage/types.js';
import { startEmbeddedPostgres } from '../test/helpers/embedded-pg.js';

const TOKENS = Number(process.env.TOUCH_BENCH_TOKENS ?? 1_000_000);
const BACKENDS = (process.env.TOUCH_BENCH_BACKENDS ?? 'sqlite,postgres').split(',').map((s) => s.trim());
const ROUNDS = Number(process.env.TOUCH_BENCH_ROUNDS ?? 10);
const SIZES = [TOUCH_CHUNK_ROWS, 1000, 5000].filter((n, i, all) => all.indexOf(n) === i);
const FLUSH_ROWS = 10_000;
const DROP_INDEX = process.env.TOUCH_BENCH_DROP_INDEX === '' ? undefined : process.env.TOUCH_BENCH_DROP_INDEX;

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

for (const name of BACKENDS) {
  const started = performance.now();
  const target = name === 'postgres' ? await postgres() : await sqlite();
  console.log(`${name}: ${TOKENS} tokens seeded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  try {
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
  } finally {
    await target.close();
  }
}
