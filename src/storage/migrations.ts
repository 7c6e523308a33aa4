// Schema migrations: one list for both dialects, run by the shared store (sql-store.ts).
// They only ever get appended: a released migration never changes what it does to a
// database. Plain SQL that SQLite, PostgreSQL and its distributed relatives
// (CockroachDB, YugabyteDB) understand. A step is written once; only the released steps
// whose text differed between dialects (INTEGER vs BIGINT columns) keep one text per
// dialect, so databases they already ran on and new ones have the same schema. New
// migrations are written once: BIGINT is a valid SQLite column type (INTEGER affinity)
// and holds epoch milliseconds in PostgreSQL.

import type { Queries } from './driver.js';

/**
 * One statement: the same text everywhere, or one text per dialect (absent: not run
 * there); or, for a change of data plain SQL cannot say on both engines, a function run
 * in the migration's transaction (written here, frozen like the SQL: never imported
 * from code that may change).
 */
export type Step = string | { sqlite?: string; postgres?: string } | { data: (tx: Queries) => Promise<void> };

export interface Migration {
  version: number;
  name: string;
  steps: readonly Step[];
}

/**
 * The operator account, created by migration 4: `acc_` + the ULID of time zero, the same
 * on every database (src/accounts/ids.ts says why).
 */
export const OPERATOR_ACCOUNT_ID = 'acc_00000000000000000000000000';

const MIGRATIONS: readonly Migration[] = [
  {
    // The bookkeeping itself, run idempotently by every migrate() before anything else
    // and never recorded: the table of applied versions, and on PostgreSQL the lock rows
    // that serialise migrations (`migrate`) and token count-then-insert (`tokens`)
    // across instances. Row locks, not advisory locks: distributed PostgreSQL engines
    // honour them. SQLite's write lock is the database file's (BEGIN IMMEDIATE).
    version: 0,
    name: 'bookkeeping',
    steps: [
      {
        sqlite: `CREATE TABLE IF NOT EXISTS infracat_schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
        postgres: `CREATE TABLE IF NOT EXISTS infracat_schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
      },
      { postgres: 'CREATE TABLE IF NOT EXISTS infracat_locks (name TEXT PRIMARY KEY)' },
      { postgres: `INSERT INTO infracat_locks (name) VALUES ('migrate'), ('tokens') ON CONFLICT DO NOTHING` },
    ],
  },
  {
    version: 1,
    name: 'api_tokens',
    steps: [
      {
        sqlite: `CREATE TABLE api_tokens (
         id           TEXT PRIMARY KEY,
         name         TEXT NOT NULL,
         scopes       TEXT NOT NULL,
         secret_hash  TEXT NOT NULL UNIQUE,
         created_at   INTEGER NOT NULL,
         expires_at   INTEGER,
         last_used_at INTEGER
       )`,
        postgres: `CREATE TABLE api_tokens (
         id           TEXT PRIMARY KEY,
         name         TEXT NOT NULL,
         scopes       TEXT NOT NULL,
         secret_hash  TEXT NOT NULL UNIQUE,
         created_at   BIGINT NOT NULL,
         expires_at   BIGINT,
         last_used_at BIGINT
       )`,
      },
      `CREATE INDEX api_tokens_created ON api_tokens (created_at, id)`,
      // (On PostgreSQL the `tokens` lock row comes from migration 0, which runs before
      // this one; a database that got it from this migration holds the same row.)
    ],
  },
  {
    version: 2,
    name: 'catalog_revisions',
    // Every applied catalog is one row; the highest version is live. Instances poll
    // MAX(version), a primary-key lookup, to notice a change.
    steps: [
      {
        sqlite: `CREATE TABLE catalog_revisions (
         version    INTEGER PRIMARY KEY,
         document   TEXT NOT NULL,
         applied_at INTEGER NOT NULL
       )`,
        postgres: `CREATE TABLE catalog_revisions (
         version    INTEGER PRIMARY KEY,
         document   TEXT NOT NULL,
         applied_at BIGINT NOT NULL
       )`,
      },
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
    steps: [
      `CREATE TABLE infracat_meta (
     key   TEXT PRIMARY KEY,
     value TEXT NOT NULL
   )`,
      `INSERT INTO infracat_meta (key, value)
   SELECT 'bootstrap_admin', 'in use before migration 3'
    WHERE EXISTS (SELECT 1 FROM api_tokens) OR EXISTS (SELECT 1 FROM catalog_revisions)`,
    ],
  },
  {
    version: 4,
    name: 'accounts',
    // Accounts (tenants). Every token belongs to one; existing tokens land in the operator
    // account, created here with the database (so it exists exactly once, however many
    // instances migrate at once: migrations run under the migrate lock). Its created_at
    // is when the database was first migrated. account_id's DEFAULT only fills the rows
    // of an upgraded database (SQLite cannot add a NOT NULL column without one); every
    // insert names the column. No foreign key: SQLite refuses to add a REFERENCES column
    // with a non-NULL default while foreign keys are on, so deleting an account deletes
    // its tokens in the same transaction (sql-store.ts). external_id is UNIQUE (several
    // NULLs allowed on both engines): a duplicate is refused by the index, not by a
    // check-then-insert.
    steps: [
      `CREATE TABLE accounts (
     id          TEXT PRIMARY KEY,
     name        TEXT NOT NULL,
     external_id TEXT UNIQUE,
     status      TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
     created_at  BIGINT NOT NULL
   )`,
      `CREATE INDEX accounts_created ON accounts (created_at, id)`,
      `INSERT INTO accounts (id, name, external_id, status, created_at)
   SELECT '${OPERATOR_ACCOUNT_ID}', 'operator', NULL, 'active', COALESCE(MIN(applied_at), 0)
     FROM infracat_schema_migrations`,
      `ALTER TABLE api_tokens ADD COLUMN account_id TEXT NOT NULL DEFAULT '${OPERATOR_ACCOUNT_ID}'`,
      `CREATE INDEX api_tokens_account ON api_tokens (account_id, created_at, id)`,
    ],
  },
  {
    version: 5,
    name: 'token_lifecycle',
    // Rotation with a grace period: the previous secret's hash and the end of its grace
    // (UNIQUE like secret_hash: verification finds a token by either; an index, as SQLite
    // cannot add a UNIQUE column). The audit trail: written in the same transaction as
    // each change; read per account newest first (the id is a ULID, so id order is time
    // order) and pruned by age.
    steps: [
      `ALTER TABLE api_tokens ADD COLUMN previous_secret_hash TEXT`,
      `ALTER TABLE api_tokens ADD COLUMN previous_expires_at BIGINT`,
      `CREATE UNIQUE INDEX api_tokens_previous_hash ON api_tokens (previous_secret_hash)`,
      `CREATE TABLE audit_events (
     id          TEXT PRIMARY KEY,
     account_id  TEXT NOT NULL,
     action      TEXT NOT NULL,
     occurred_at BIGINT NOT NULL,
     actor_type  TEXT NOT NULL,
     actor_id    TEXT,
     actor_name  TEXT,
     target_type TEXT NOT NULL,
     target_id   TEXT,
     target_name TEXT,
     ip          TEXT,
     user_agent  TEXT,
     request_id  TEXT,
     details     TEXT NOT NULL
   )`,
      `CREATE INDEX audit_events_account ON audit_events (account_id, id)`,
      `CREATE INDEX audit_events_target ON audit_events (target_id, id)`,
      `CREATE INDEX audit_events_occurred ON audit_events (occurred_at)`,
    ],
  },
  {
    version: 6,
    name: 'catalog_management',
    // Who applied each catalog revision (an audit actor, JSON) and what it changed in one
    // line; NULL on revisions applied before this migration (not recorded then). Then the
    // scopes: images:write, plans:write and regions:write granted nothing and are gone;
    // catalog:write manages the catalog, and only the operator account may hold it.
    steps: [
      `ALTER TABLE catalog_revisions ADD COLUMN applied_by TEXT`,
      `ALTER TABLE catalog_revisions ADD COLUMN summary TEXT`,
      { data: mapCatalogWriteScopes },
    ],
  },
  {
    version: 7,
    name: 'instances',
    // The running instances, each refreshing its row with a heartbeat: how many share the
    // rate limits (src/fleet/registry.ts). A graceful stop deletes the row; a crashed
    // instance's row stops counting once its expires_at passes and is deleted later.
    // No index: a fleet is a handful of rows.
    steps: [
      `CREATE TABLE instances (
     id           TEXT PRIMARY KEY,
     host         TEXT NOT NULL,
     pid          BIGINT NOT NULL,
     started_at   BIGINT NOT NULL,
     heartbeat_at BIGINT NOT NULL,
     expires_at   BIGINT NOT NULL
   )`,
    ],
  },
  {
    version: 8,
    name: 'bounded_lists',
    // Indexes for bounded work on lists and the bound on stored tokens. One account's tokens
    // by expiry: its live count and its stored count are read from the index alone, and
    // the earliest-expired tokens (deleted to keep TOKEN_MAX_STORED) are its first entries.
    // Accounts by status in list order: a page filtered by status is one index range.
    // (Token pages use api_tokens_account, account pages accounts_created: migration 4.)
    steps: [
      `CREATE INDEX api_tokens_account_expiry ON api_tokens (account_id, expires_at, id)`,
      `CREATE INDEX accounts_status ON accounts (status, created_at, id)`,
    ],
  },
  {
    version: 9,
    name: 'audit_actor_credential',
    // Which of the acting token's secrets made each change: 'current', or 'previous' (in
    // the grace period after a rotation); NULL for actors that are not tokens, and on the
    // events written before this migration (not recorded then).
    steps: [`ALTER TABLE audit_events ADD COLUMN actor_credential TEXT`],
  },
  {
    version: 10,
    name: 'audit_filters_and_actor_account',
    // An index for each filter of the audit trail and the accounts list, so a filtered
    // read walks only what it returns (sql-store.ts builds each query from the filters
    // given). The trail is newest first by id: each index ends with id, and serves the
    // filter, the order and the cursor at once; since/until are id ranges. Migration 5
    // has (account_id, id) and (target_id, id), migration 8 the accounts' (status, created_at,
    // id); the primary key serves the id alone. A
    // target's events are few and all in one account's trail (a token's, an account's,
    // a catalog version's), so (target_id, id) serves a target within an account too.
    steps: [
      `CREATE INDEX audit_events_account_action ON audit_events (account_id, action, id)`,
      `CREATE INDEX audit_events_action ON audit_events (action, id)`,
      // The account each event's actor acted for (audit/views.ts shows customers the
      // operator, never its token, address or client). Earlier events: a token's account
      // if it still exists, else the account its api_token.created event is in; the CLI
      // is the operator. What stays unknown reads as the operator to customers.
      `ALTER TABLE audit_events ADD COLUMN actor_account_id TEXT`,
      `UPDATE audit_events SET actor_account_id = COALESCE(
     (SELECT t.account_id FROM api_tokens t WHERE t.id = audit_events.actor_id),
     (SELECT MIN(c.account_id) FROM audit_events c
       WHERE c.target_id = audit_events.actor_id AND c.action = 'api_token.created'))
   WHERE actor_type = 'api_token'`,
      `UPDATE audit_events SET actor_account_id = '${OPERATOR_ACCOUNT_ID}' WHERE actor_type = 'cli'`,
    ],
  },
  {
    version: 11,
    name: 'expiry_indexes',
    // The background purge reads every account's expired tokens, earliest expiry first
    // (expiredBatch: expires_at <= ? ORDER BY expires_at, id LIMIT ?). No index starts with
    // expires_at (migration 8's leads with account_id), so each batch of a few hundred would
    // scan and sort the whole table. With (expires_at, id) a batch is the first entries of one
    // range, whatever the table holds; tokens that never expire (NULL) are outside it.
    // The instances' expiry likewise: the live count of every heartbeat and the prune of
    // dead rows read a range of it, however many rows crashed instances left behind.
    steps: [
      `CREATE INDEX api_tokens_expiry ON api_tokens (expires_at, id)`,
      `CREATE INDEX instances_expiry ON instances (expires_at, id)`,
    ],
  },
  {
    version: 12,
    name: 'catalog_revision_changes',
    // What each catalog revision changed, counted (settings; entries added, removed and
    // changed per kind, as JSON): the history says it without reading two documents per
    // revision. NULL on revisions applied before this migration (not recorded then).
    steps: [`ALTER TABLE catalog_revisions ADD COLUMN changes TEXT`],
  },
  {
    version: 13,
    name: 'fleet_rate_limits',
    // An account's own limit for all its tokens together (NULL: RATE_LIMIT_ACCOUNT), and
    // the fleet's shared rate-limit counters: one row per key (a token, an account, a
    // client address) and window, to which every instance adds what it counted every
    // RATE_LIMIT_SYNC_MS (src/fleet/counts.ts). A row is dead once its window has
    // ended: pruned in bounded batches by window_end (its index).
    steps: [
      `ALTER TABLE accounts ADD COLUMN rate_limit INTEGER`,
      `CREATE TABLE rate_limit_counters (
     rate_key   TEXT NOT NULL,
     window_end BIGINT NOT NULL,
     n          BIGINT NOT NULL,
     PRIMARY KEY (rate_key, window_end)
   )`,
      `CREATE INDEX rate_limit_counters_window_end ON rate_limit_counters (window_end)`,
    ],
  },
  {
    version: 14,
    name: 'token_conditions',
    // Conditions of a token's use, read with the token by verification (no index: never
    // a filter). allowed_cidrs: a JSON array of canonical CIDRs, NULL for anywhere;
    // not_before: epoch milliseconds, NULL for at once; enabled: 1 or 0, every existing
    // token enabled.
    steps: [
      `ALTER TABLE api_tokens ADD COLUMN allowed_cidrs TEXT`,
      `ALTER TABLE api_tokens ADD COLUMN not_before BIGINT`,
      `ALTER TABLE api_tokens ADD COLUMN enabled INTEGER NOT NULL DEFAULT 1`,
    ],
  },
  {
    version: 15,
    name: 'token_usage',
    // Each token's uses per hour, summed by additive upserts from every instance; the
    // (hour, token_id) index serves the pruning of old hours, the primary key a token's range.
    // And the client address of a token's last use, written with last_used_at.
    steps: [
      'ALTER TABLE api_tokens ADD COLUMN last_used_ip TEXT',
      `CREATE TABLE token_usage (
         token_id              TEXT   NOT NULL,
         hour                  BIGINT NOT NULL,
         verified              BIGINT NOT NULL DEFAULT 0,
         refused_expired       BIGINT NOT NULL DEFAULT 0,
         refused_not_yet_valid BIGINT NOT NULL DEFAULT 0,
         refused_disabled      BIGINT NOT NULL DEFAULT 0,
         refused_address       BIGINT NOT NULL DEFAULT 0,
         refused_scope         BIGINT NOT NULL DEFAULT 0,
         refused_rate_limited  BIGINT NOT NULL DEFAULT 0,
         refused_suspended     BIGINT NOT NULL DEFAULT 0,
         PRIMARY KEY (token_id, hour))`,
      'CREATE INDEX token_usage_hour ON token_usage (hour, token_id)',
    ],
  },
  {
    version: 16,
    name: 'api_tokens_last_used',
    // An account's tokens by last use, the most recent first and never-used ones last, ties
    // by id: one ascending key for both engines, which order NULLs differently (SQLite
    // first, PostgreSQL last). last_used_at is epoch milliseconds, never negative, so its
    // negation is at most 0 and a never-used token's 1 sorts after every used one.
    steps: ['CREATE INDEX api_tokens_account_last_used ON api_tokens (account_id, (COALESCE(-last_used_at, 1)), id)'],
  },
  {
    version: 17,
    name: 'webhooks',
    // Webhooks. Each account's endpoints, listed and counted by (account_id, created_at, id);
    // an event's fan-out finds the webhooks watching its account (or every account: `*`) by
    // (watch, id). The outbox holds what is still to deliver, due by next_attempt_at; the
    // delivery log one row per attempt, a webhook's newest first by (webhook_id, id), pruned
    // by its primary key (the id is a ULID of the attempt's time). And the expiry notices of
    // tokens: next_notice_at is when a token's next notice falls due (7 days before its
    // expiry, then 1 day before, then at it; NULL: none left), read by its index; existing
    // tokens that have not expired get their first notice time.
    steps: [
      `CREATE TABLE webhooks (
         id                         TEXT    PRIMARY KEY,
         account_id                 TEXT    NOT NULL,
         watch                      TEXT    NOT NULL,
         url                        TEXT    NOT NULL,
         events                     TEXT    NOT NULL,
         description                TEXT,
         enabled                    INTEGER NOT NULL,
         secret                     TEXT    NOT NULL,
         previous_secret            TEXT,
         previous_secret_expires_at BIGINT,
         created_at                 BIGINT  NOT NULL,
         updated_at                 BIGINT  NOT NULL,
         failing_since              BIGINT,
         disabled_reason            TEXT)`,
      'CREATE INDEX webhooks_account ON webhooks (account_id, created_at, id)',
      'CREATE INDEX webhooks_watch ON webhooks (watch, id)',
      `CREATE TABLE webhook_outbox (
         webhook_id      TEXT    NOT NULL,
         event_id        TEXT    NOT NULL,
         event_type      TEXT    NOT NULL,
         body            TEXT    NOT NULL,
         created_at      BIGINT  NOT NULL,
         attempts        INTEGER NOT NULL,
         next_attempt_at BIGINT  NOT NULL,
         claim           TEXT,
         PRIMARY KEY (webhook_id, event_id))`,
      'CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at)',
      `CREATE TABLE webhook_deliveries (
         id              TEXT    PRIMARY KEY,
         webhook_id      TEXT    NOT NULL,
         event_id        TEXT    NOT NULL,
         event_type      TEXT    NOT NULL,
         attempt         INTEGER NOT NULL,
         attempted_at    BIGINT  NOT NULL,
         status_code     INTEGER,
         duration_ms     INTEGER NOT NULL,
         error           TEXT,
         next_attempt_at BIGINT)`,
      'CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id)',
      'ALTER TABLE api_tokens ADD COLUMN next_notice_at BIGINT',
      'CREATE INDEX api_tokens_next_notice ON api_tokens (next_notice_at, id)',
      { data: firstExpiryNotices },
    ],
  },
];

/**
 * Migration 17's notice times of the tokens that have not expired yet: 7 days before their
 * expiry (already past for those expiring sooner: due at once). Tokens expired before the
 * upgrade get none.
 */
async function firstExpiryNotices(tx: Queries): Promise<void> {
  await tx.run(
    'UPDATE api_tokens SET next_notice_at = expires_at - 604800000 WHERE expires_at IS NOT NULL AND expires_at > ?',
    [Date.now()],
  );
}

/**
 * Migration 6's scope mapping: a token holding `<kind>:write` for a catalog kind keeps
 * what that scope granted (`<kind>:read`, which write implied), and an operator-account
 * token gains `catalog:write`, what the old scopes promised. Order kept, duplicates
 * dropped. Scopes are stored as a JSON array (LIKE narrows the rows; the JSON decides).
 */
async function mapCatalogWriteScopes(tx: Queries): Promise<void> {
  const legacy = ['images:write', 'plans:write', 'regions:write'];
  const rows = await tx.all<{ id: string; scopes: string; account_id: string }>(
    `SELECT id, scopes, account_id FROM api_tokens WHERE scopes LIKE '%s:write%'`,
  );
  for (const row of rows) {
    const scopes = JSON.parse(row.scopes) as string[];
    if (!scopes.some((s) => legacy.includes(s))) continue;
    const mapped = scopes.map((s) => (legacy.includes(s) ? s.replace(/:write$/, ':read') : s));
    if (row.account_id === OPERATOR_ACCOUNT_ID) mapped.push('catalog:write');
    await tx.run('UPDATE api_tokens SET scopes = ? WHERE id = ?', [JSON.stringify([...new Set(mapped)]), row.id]);
  }
}

/** Migration 0: run by every migrate(), never recorded. */
export const BOOKKEEPING: Migration = MIGRATIONS[0]!;

/** The migrations recorded in infracat_schema_migrations, in order. */
export const VERSIONED: readonly Migration[] = MIGRATIONS.filter((m) => m.version > 0);

export const LATEST_VERSION = VERSIONED.reduce((max, m) => Math.max(max, m.version), 0);

/** The text of `step` for `dialect`, or undefined when the step is not run there. */
export function stepSql(step: Step, dialect: 'sqlite' | 'postgres'): string | undefined {
  if (typeof step === 'string') return step;
  return 'data' in step ? undefined : step[dialect];
}

export class SchemaTooNewError extends Error {
  constructor(found: number) {
    super(
      `the database schema is at version ${found}, ` +
        `newer than this infracat knows (${LATEST_VERSION}); upgrade infracat`,
    );
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
  return VERSIONED.filter((m) => !applied.has(m.version) && m.version <= upTo).sort((a, b) => a.version - b.version);
}

/** The schema version once `applied` versions and the newly applied ones are in place. */
export function schemaVersion(applied: ReadonlySet<number>, pending: readonly Migration[]): number {
  return Math.max(0, ...applied, ...pending.map((m) => m.version));
}

/** Key of the bootstrap marker in infracat_meta (migration 3). */
export const BOOTSTRAP_KEY = 'bootstrap_admin';
