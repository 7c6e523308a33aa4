// Schema migrations, one entry per version, each written for both dialects. They only
// ever get appended: a released migration is never edited. Plain SQL that PostgreSQL
// and its distributed relatives (CockroachDB, YugabyteDB) understand.

export interface Migration {
  version: number;
  name: string;
  sqlite: string[];
  postgres: string[];
}

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
];

export const LATEST_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

export class SchemaTooNewError extends Error {
  constructor(found: number) {
    super(`the database schema is at version ${found}, newer than this infracat knows (${LATEST_VERSION}); upgrade infracat`);
    this.name = 'SchemaTooNewError';
  }
}

/** The migrations still to apply, in order, given the versions already applied. */
export function pendingMigrations(applied: ReadonlySet<number>): Migration[] {
  const newest = Math.max(0, ...applied);
  if (newest > LATEST_VERSION) throw new SchemaTooNewError(newest);
  return MIGRATIONS.filter((m) => !applied.has(m.version)).sort((a, b) => a.version - b.version);
}
