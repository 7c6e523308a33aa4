// The one list of storage backends (Kysely's dialect loop): every backend-dependent test
// loops over backends(), or takes one entry from it when the scenario exists on one
// backend only (a PostgreSQL standby, a refused login). SQLite always; PostgreSQL on the
// harness's server (TEST_DATABASE_URL, set by scripts/run-tests.ts or by you): in CI a
// missing server is a failure, never a skip.
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import type { Store } from '../../src/storage/types.js';
import { tempDir } from './sqlite.js';

export interface OpenOptions {
  /** DATABASE_TIMEOUT_MS of this instance (default 5000). */
  timeoutMs?: number;
}

export interface BackendDb {
  /** DATABASE_URL of this database. */
  url: string;
  /** A new Store on the same database (another "instance"); closed by the caller or the app. */
  open(options?: OpenOptions): Store;
  /** Deletes the database. */
  drop(): Promise<void>;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** A new, empty database (no schema); the caller drops it. */
  create(): Promise<BackendDb>;
  /** A fresh, migrated database, dropped when the test ends. */
  fresh(t: TestContext): Promise<BackendDb>;
}

export interface PostgresBackend extends Backend {
  name: 'postgres';
  /** The test server's admin URL: for what a test does to the server itself. */
  adminUrl: string;
}

async function fresh(backend: Backend, t: TestContext): Promise<BackendDb> {
  const db = await backend.create();
  t.after(() => db.drop());
  const s = db.open();
  try {
    await s.migrate();
  } finally {
    await s.close();
  }
  return db;
}

const sqlite: Backend = {
  name: 'sqlite',
  create() {
    const tmp = tempDir();
    // In directories that do not exist yet: the store creates them.
    const file = tmp.file('nested/dir/infracat.sqlite');
    return Promise.resolve({
      url: `sqlite:${file}`,
      open: (o = {}) => new SqliteStore({ path: file, busyTimeoutMs: o.timeoutMs ?? 5000 }),
      drop: () => Promise.resolve(tmp.remove()),
    });
  },
  fresh(t) {
    return fresh(this, t);
  },
};

function postgres(adminUrl: string): PostgresBackend {
  return {
    name: 'postgres',
    adminUrl,
    async create() {
      const name = `infracat_t_${randomBytes(6).toString('hex')}`;
      await admin(adminUrl, `CREATE DATABASE ${name}`);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return {
        url: url.toString(),
        open: (o = {}) => new PostgresStore({ url: url.toString(), poolMax: 4, timeoutMs: o.timeoutMs ?? 5000 }),
        drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      };
    },
    fresh(t) {
      return fresh(this, t);
    },
  };
}

/** Runs one statement on the test server as its admin (CREATE/ALTER/DROP DATABASE, ...). */
export async function admin(adminUrl: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

function postgresAdminUrl(): string | undefined {
  const url = process.env.TEST_DATABASE_URL;
  if (url !== undefined && url !== '') return url;
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') {
    throw new Error('TEST_DATABASE_URL is not set: run the tests with `npm test`, which starts a PostgreSQL server');
  }
  return undefined;
}

/** SQLite always; PostgreSQL whenever a test server is configured (always under npm test, required in CI). */
export function backends(): Backend[] {
  const adminUrl = postgresAdminUrl();
  return adminUrl === undefined ? [sqlite] : [sqlite, postgres(adminUrl)];
}

/**
 * The PostgreSQL entry of backends(), for a scenario only PostgreSQL has; undefined
 * (after marking `t` skipped) when no test server is configured outside CI.
 */
export function postgresBackend(t: TestContext): PostgresBackend | undefined {
  const entry = backends().find((b): b is PostgresBackend => b.name === 'postgres');
  if (entry === undefined)
    t.skip('PostgreSQL half skipped: TEST_DATABASE_URL is not set (run the tests with `npm test`)');
  return entry;
}
