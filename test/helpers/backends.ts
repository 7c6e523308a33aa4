// The one list of storage backends (Kysely's dialect loop): every backend-dependent test
// loops over backends(), or takes one entry from it when the scenario exists on one
// backend only (a PostgreSQL standby, a refused login). SQLite always; PostgreSQL on the
// harness's server (TEST_DATABASE_URL, set by scripts/run-tests.ts or by you): in CI a
// missing server is a failure, never a skip. debianPostgres() adds Debian's PostgreSQL 15
// where a suite asks for it (the storage contract).
import { randomBytes } from 'node:crypto';
import { after, type TestContext } from 'node:test';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import type { Store } from '../../src/storage/types.js';
import { isCI } from './apt.js';
import { DEBIAN_PG_MAJOR, DEBIAN_PG_PACKAGE, debianPostgresInstalled, startDebianPostgres } from './debian-pg.js';
import { embeddedPostgresMajor, type PostgresServer } from './pg-server.js';
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
  /** What test names call it: for PostgreSQL, which server (major version, where from). */
  label: string;
  /** PostgreSQL: the server it must be; undefined for a server of yours (TEST_DATABASE_URL). */
  server?: { major: number; debian: boolean };
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
  label: 'sqlite',
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

/** A new, empty database on the server of `adminUrl`. */
async function postgresDatabase(adminUrl: string): Promise<BackendDb> {
  const name = `infracat_t_${randomBytes(6).toString('hex')}`;
  await admin(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    open: (o = {}) => new PostgresStore({ url: url.toString(), poolMax: 4, timeoutMs: o.timeoutMs ?? 5000 }),
    drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** The harness's server: the embedded one scripts/run-tests.ts started, or yours (TEST_DATABASE_URL). */
function harnessServer(): Pick<Backend, 'label' | 'server'> {
  if (process.env.TEST_DATABASE_SERVER !== 'embedded') return { label: 'postgres (TEST_DATABASE_URL)' };
  const major = embeddedPostgresMajor();
  return { label: `postgres ${major} (embedded)`, server: { major, debian: false } };
}

function postgres(adminUrl: string): PostgresBackend {
  return {
    name: 'postgres',
    ...harnessServer(),
    adminUrl,
    create: () => postgresDatabase(adminUrl),
    fresh(t) {
      return fresh(this, t);
    },
  };
}

/**
 * Debian's PostgreSQL 15 (package postgresql-15: what Debian 12 users run), on a server of
 * its own started by the first create() and removed when the calling test file (or suite)
 * ends. For the storage contract suite: every suite a third time would cost CI minutes.
 * Under CI a missing package is installed; one that cannot be installed, or a server that
 * cannot start, fails every test of the suite (never a skip). Elsewhere, without the
 * package, `skip` says how to get it.
 */
export function debianPostgres(): { backend: Backend; skip: string | false } {
  let server: Promise<PostgresServer> | undefined;
  after(async () => {
    const s = await server?.catch(() => undefined);
    await s?.destroy();
  });
  const backend: Backend = {
    name: 'postgres',
    label: `postgres ${DEBIAN_PG_MAJOR} (debian)`,
    server: { major: DEBIAN_PG_MAJOR, debian: true },
    async create() {
      server ??= startDebianPostgres();
      return postgresDatabase((await server).url);
    },
    fresh(t) {
      return fresh(this, t);
    },
  };
  const skip =
    isCI() || debianPostgresInstalled()
      ? false
      : `Debian's PostgreSQL ${DEBIAN_PG_MAJOR} is not installed (apt-get install ${DEBIAN_PG_PACKAGE}); ` +
        'under CI=true the suite installs it';
  return { backend, skip };
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
