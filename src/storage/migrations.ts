// Schema migrations, one entry per version, each written for both dialects. They only
// ever get appended: a released migration is never edited. Plain SQL that PostgreSQL
// and its distributed relatives (CockroachDB, YugabyteDB) understand.

export interface Migration {
  version: number;
  name: string;
  sqlite: string[];
  postgres: string[];
}

const META_TABLE = [
  `CREATE TABLE infracat_meta (
     key   TEXT PRIMARY KEY,
     value TEXT NOT NULL
   )`,
  `INSERT INTO infracat_meta (key, value)
   SELECT 'bootstrap_admin', 'in use before migration 3'
    WHERE EXISTS (SELECT 1 FROM api_tokens) OR EXISTS (SELECT 1 FROM catalog_revisions)`,
];

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'api_tokens',
    sqlite: [
      `CREATE TABLE api_tokens (
         id           TEXT PRIMARY KEY,
         name         TEXT NOT NULL,
         scopes       TEXT NOT NULL,
         secret_hash  TEXT NOT NULL UNIQUE,
         created_at   INTEGER NOT NULL,
         expires_at   INTEGER,
         last_used_at INTEGER
       )`,
      `CREATE INDEX api_tokens_created ON api_tokens (created_at, id)`,
    ],
    postgres: [
      `CREATE TABLE api_tokens (
         id           TEXT PRIMARY KEY,
         name         TEXT NOT NULL,
         scopes       TEXT NOT NULL,
         secret_hash  TEXT NOT NULL UNIQUE,
         created_at   BIGINT NOT NULL,
         expires_at   BIGINT,
         last_used_at BIGINT
       )`,
      `CREATE INDEX api_tokens_created ON api_tokens (created_at, id)`,
      // Row lock that serialises "count then insert" across instances (token cap, bootstrap).
      `INSERT INTO infracat_locks (name) VALUES ('tokens') ON CONFLICT DO NOTHING`,
    ],
  },
  {
    version: 2,
    name: 'catalog_revisions',
    // Every applied catalog is one row; the highest version is live. Instances poll
    // MAX(version), a primary-key lookup, to notice a change.
    sqlite: [
      `CREATE TABLE catalog_revisions (
         version    INTEGER PRIMARY KEY,
         document   TEXT NOT NULL,
         applied_at INTEGER NOT NULL
       )`,
    ],
    postgres: [
      `CREATE TABLE catalog_revisions (
         version    INTEGER PRIMARY KEY,
         document   TEXT NOT NULL,
         applied_at BIGINT NOT NULL
       )`,
    ],
  },
  {
    version: 3,
    name: 'infracat_meta',
    // Facts about the database itself, one row per key. `bootstrap_admin` records that
    // the first-start bootstrap has been decided (TokenStore.bootstrap): it is never
    // decided again, so deleting every token cannot make a restart mint a new admin.
    // A database from before this version that shows signs of use (a token, or the
    // catalog every started server seeds) is taken as already bootstrapped.
    // The same plain SQL in both dialects.
    sqlite: META_TABLE,
    postgres: META_TABLE,
  },
];

export const LATEST_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

export class SchemaTooNewError extends Error {
  constructor(found: number) {
    super(`the database schema is at version ${found}, newer than this infracat knows (${LATEST_VERSION}); upgrade infracat`);
    this.name = 'SchemaTooNewError';
  }
}

/**
 * The migrations still to apply, in order, given the versions already applied; only up
 * to `upTo` (tests build an older release's schema with it, to test upgrades).
 */
export function pendingMigrations(applied: ReadonlySet<number>, upTo = LATEST_VERSION): Migration[] {
  const newest = Math.max(0, ...applied);
  if (newest > LATEST_VERSION) throw new SchemaTooNewError(newest);
  return MIGRATIONS.filter((m) => !applied.has(m.version) && m.version <= upTo).sort((a, b) => a.version - b.version);
}

/** The schema version once `applied` versions and the newly applied ones are in place. */
export function schemaVersion(applied: ReadonlySet<number>, pending: readonly Migration[]): number {
  return Math.max(0, ...applied, ...pending.map((m) => m.version));
}

/** Key of the bootstrap marker in infracat_meta (migration 3). */
export const BOOTSTRAP_KEY = 'bootstrap_admin';
