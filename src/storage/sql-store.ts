// The one Store implementation: every statement of the token store, the catalog store,
// the bootstrap marker and the migration bookkeeping, written once in plain SQL that
// SQLite and PostgreSQL (and its distributed relatives) both accept, over a small Driver
// (driver.ts) per backend. Lucia's adapter shape rather than a query builder (Kysely):
// - Kysely's SQLite driver cannot BEGIN IMMEDIATE (kysely-org/kysely#1152, closed "Nope");
//   the cross-process count-then-insert needs it: a deferred transaction that upgrades
//   to a write lock gets SQLITE_BUSY at once instead of waiting for busy_timeout.
// - Kysely's PostgreSQL Migrator locks with pg_advisory_xact_lock, which the distributed
//   PostgreSQL-compatible engines (the scale-out path) do not honour; a row lock in a
//   table does. Deployed databases also already carry infracat_schema_migrations.
// - Its SQLite driver prepares every statement on each execution; ours prepares each
//   SQL text once.
// - Each statement is plain SQL written once (`SQL` below): a builder's types buy little
//   over one row table declared once (tables.ts).
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { encodeChange } from './changes.js';
import type { Driver, LockName, Queries } from './driver.js';
import { BOOKKEEPING, BOOTSTRAP_KEY, pendingMigrations, schemaVersion, stepSql } from './migrations.js';
import { firstIdAt } from '../tokens/ids.js';
import { bootstrapOutcome, inKeyOrder, latestPerId } from './rows.js';
import {
  ACCOUNTS,
  API_TOKENS,
  AUDIT_EVENTS,
  CATALOG_REVISION_INFO,
  CATALOG_REVISIONS,
  INSTANCES,
  TOKEN_USAGE,
  WEBHOOK_DELIVERIES,
  WEBHOOK_OUTBOX,
  WEBHOOKS,
  type Param,
} from './tables.js';
import { auditMessage } from '../webhooks/events.js';
import { firstNoticeAt } from '../webhooks/notice-times.js';
import type {
  AccountFilter,
  AccountRecord,
  AccountStatus,
  AccountStore,
  AuditEventRecord,
  AuditFilter,
  AuditStore,
  BackupReport,
  CatalogRevision,
  Change,
  ChangeHandlers,
  ChangeWatch,
  CatalogRevisionInfo,
  CatalogStore,
  CreateTokenResult,
  InstanceRecord,
  InstanceStore,
  LastUsed,
  RateCount,
  RateCounterStore,
  LiveInstances,
  MigrationReport,
  Store,
  CreateAccountResult,
  TokenChanges,
  TokenRecord,
  TokenStore,
  TokenWithAccount,
  LastUsePosition,
  ListPosition,
  PageRequest,
  StoredBound,
  UsageCell,
  AttemptOutcome,
  ClaimedDelivery,
  CreateWebhookResult,
  DeliveryRecord,
  NoticeDecision,
  NoticeDue,
  OutboxRecord,
  WebhookChanges,
  WebhookMessage,
  WebhookRecord,
  WebhookStore,
} from './types.js';
import { UsageWriteError } from './types.js';

/**
 * A WHERE clause of the filters given, each a plain comparison an index can serve:
 * absent filters are left out of the text rather than written as
 * `(CAST(? AS ...) IS NULL OR column = ?)`, which neither engine can match to an index.
 * Each fragment is written once for both dialects; the combinations make a bounded set of
 * texts (each prepared once by the driver).
 */
function where(conditions: readonly (readonly [fragment: string, value: Param | undefined])[]): {
  clause: string;
  params: Param[];
} {
  const given = conditions.filter((c): c is readonly [string, Param] => c[1] !== undefined);
  return {
    clause: given.length === 0 ? '' : ` WHERE ${given.map(([fragment]) => fragment).join(' AND ')}`,
    params: given.map(([, value]) => value),
  };
}

/**
 * The statement of one page of the audit trail (exported for the test that reads its
 * query plans). Newest first by id, the cursor of the next page; each filter an equality
 * or an id range, so one index serves both the filter and the order (migrations 5 and
 * 10: (account_id, id), (account_id, action, id), (action, id), (target_id, id), and
 * the primary key for the id alone) and a page reads
 * about as many rows as it returns. since and until are id bounds: an event's id is
 * `evt_` + the ULID of its occurred_at (src/tokens/ids.ts), so `occurred_at >= since` is
 * `id >= ` the first id of that millisecond, and `occurred_at < until` is `id <` that of
 * until's; the cursor and until are one upper bound, the lower of the two.
 */
export function auditListQuery(filter: AuditFilter): { sql: string; params: Param[] } {
  const until = filter.until === undefined ? undefined : firstIdAt('evt', filter.until);
  const below = [until, filter.before].filter((b) => b !== undefined).sort()[0];
  const { clause, params } = where([
    ['account_id = ?', filter.accountId],
    ['action = ?', filter.action],
    ['target_id = ?', filter.targetId],
    ['id >= ?', filter.since === undefined ? undefined : firstIdAt('evt', filter.since)],
    ['id < ?', below],
  ]);
  return {
    sql: `SELECT ${AUDIT_EVENTS.columns} FROM audit_events${clause} ORDER BY id DESC LIMIT ?`,
    params: [...params, filter.limit],
  };
}

/**
 * The position before every row: a first page is the rows after it, so every page is
 * the same statement. No row is created at this time (epoch milliseconds).
 */
const LIST_START: ListPosition = { createdAt: Number.MIN_SAFE_INTEGER, id: '' };

/** The cursor and limit of a page, as the list statements take them. */
function pageParams(page: PageRequest): Param[] {
  const after = page.after ?? LIST_START;
  return [after.createdAt, after.id, page.limit];
}

/**
 * A token's place in the order by last use, as migration 16's index holds it:
 * `COALESCE(-last_used_at, 1)`, the negated time of the last use (the most recent the
 * lowest), 1 for a token never used (after every used one).
 */
const NEVER_USED_KEY = 1;
const lastUseKey = (lastUsedAt: number | null): number => (lastUsedAt === null ? NEVER_USED_KEY : 0 - lastUsedAt);

/**
 * Rows per batched write statement (last_used_at: touchQuery; usage: usageQuery), by
 * dialect: a flush of more sends one statement per this many, yielding to the event loop
 * between them. better-sqlite3 runs a statement (and its commit) synchronously on the
 * event loop, so on SQLite a statement's time is how long requests wait behind it: 1,000
 * rows raised the p99 of requests served meanwhile about threefold (scripts/bench-touch.ts,
 * `TOUCH_BENCH_PARTS=p99`), 100 rows keep each wait near a millisecond. PostgreSQL works
 * off the event loop: fewer, larger statements make fewer round trips (a flush of 10,000
 * tokens in about 0.7 s, inside the default LAST_USED_FLUSH_MS of 1 s). Far below both
 * engines' parameter limits (SQLite 32,766, PostgreSQL 65,535; ten per usage row).
 */
export const BATCH_ROWS = { sqlite: 100, postgres: 1000 } as const satisfies Record<Driver['dialect'], number>;

/**
 * The sizes of a batched statement's VALUES list for `rows` a statement at most: powers of
 * two, then `rows`. A batch takes the next size up, the rest filled with rows that match
 * nothing (TOUCH_FILLER, USAGE_FILLER), so a dozen texts (textPerSize) serve every batch.
 */
const batchSizes = (rows: number): number[] => [
  ...Array.from({ length: Math.ceil(Math.log2(rows)) }, (_, i) => 2 ** i),
  rows,
];
/**
 * A statement built per row count (`text(rows)`), each text made once and kept: the
 * batched statements use a dozen sizes at most, so each is prepared (SQLite) or rewritten
 * (PostgreSQL's placeholders) once, as the constant statements are.
 */
function textPerSize(text: (rows: number) => string): (rows: number) => string {
  const texts = new Map<number, string>();
  return (rows) => {
    let sql = texts.get(rows);
    if (sql === undefined) texts.set(rows, (sql = text(rows)));
    return sql;
  };
}

/**
 * The last_used_at statement of `size` (id, time, address) rows (exported for the tests and
 * the measurement that run it on both engines): one UPDATE from a VALUES list, written once
 * for both dialects (both name a VALUES list's columns column1, column2, ...; SQLite has
 * UPDATE ... FROM since 3.33). last_used_at = max(stored, time), portably: only a later
 * time is written (with the address of that use), a row already as recent is not written
 * at all, and an unknown id joins nothing. CAST: PostgreSQL types a bare parameter in
 * VALUES as text (the address is text).
 */
export const touchQuery = textPerSize((size) => {
  const values = Array.from({ length: size }, () => '(?, CAST(? AS BIGINT), ?)').join(', ');
  return (
    `UPDATE api_tokens SET last_used_at = v.column2, last_used_ip = v.column3 FROM (VALUES ${values}) AS v` +
    ' WHERE api_tokens.id = v.column1 AND (api_tokens.last_used_at IS NULL OR api_tokens.last_used_at < v.column2)'
  );
});

/** A VALUES row of touchQuery that matches no token: ids are never empty (`tok_` + ULID). */
const TOUCH_FILLER: readonly Param[] = ['', 0, null];

const USAGE_COLUMNS = ['token_id', 'hour', ...TOKEN_USAGE.counts];

/**
 * The usage statement of `size` cells (exported for the tests that plan and run it): one
 * multi-row upsert, written once for both dialects, that adds each cell's counts to its
 * (token_id, hour) row or inserts the row. Sized like touchQuery (powers of two, filled
 * with rows of an empty token id that the WHERE drops), so a dozen texts serve every
 * batch. INSERT ... SELECT rather than INSERT ... VALUES for the WHERE; SQLite needs a
 * WHERE there anyway to read ON CONFLICT as the upsert clause. Additive (`token_usage.n +
 * excluded.n`): instances flushing the same row each add their own counts.
 */
export const usageQuery = textPerSize((size) => {
  const row = `(?, ${USAGE_COLUMNS.slice(1)
    .map(() => 'CAST(? AS BIGINT)')
    .join(', ')})`;
  const values = Array.from({ length: size }, () => row).join(', ');
  const selected = USAGE_COLUMNS.map((_, i) => `v.column${i + 1}`).join(', ');
  const add = TOKEN_USAGE.counts.map((c) => `${c} = token_usage.${c} + excluded.${c}`).join(', ');
  return (
    `INSERT INTO token_usage (${USAGE_COLUMNS.join(', ')}) SELECT ${selected} FROM (VALUES ${values}) AS v` +
    ` WHERE v.column1 <> '' ON CONFLICT (token_id, hour) DO UPDATE SET ${add}`
  );
});

/** A VALUES row of usageQuery that the WHERE drops (token ids are never empty). */
const USAGE_FILLER: readonly Param[] = USAGE_COLUMNS.map((_, i) => (i === 0 ? '' : 0));

/**
 * Every statement of the store but those built per call (auditListQuery, accountListQuery
 * on listAccounts, touchQuery, usageQuery, rateCountsQuery). Exported for
 * test/storage/query-plans.test.ts, which reads each one's plan on both engines (an index,
 * never a scan of a growing table) or names why it needs none: a statement added here
 * without either fails it.
 */
export const SQL = {
  // With its first expiry notice time (src/webhooks/notice-times.ts), not a field of the record.
  insertToken:
    `INSERT INTO api_tokens (${API_TOKENS.columns}, next_notice_at)` +
    ` VALUES (${API_TOKENS.placeholders}, CAST(? AS BIGINT))`,
  // One statement: the account's live tokens, all its stored tokens and whether the account
  // exists (its status). Both counts read an index alone: the live one (account_id, expires_at),
  // the stored one that or any other leading with account_id.
  // CAST: COUNT(*) is a BIGINT in PostgreSQL, which its driver returns as a string.
  countLive:
    'SELECT CAST((SELECT COUNT(*) FROM api_tokens WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?))' +
    ' AS INTEGER) AS n, CAST((SELECT COUNT(*) FROM api_tokens WHERE account_id = ?) AS INTEGER) AS stored,' +
    ' (SELECT status FROM accounts WHERE id = ?) AS status',
  // The account's tokens that expired the earliest (by the (account_id, expires_at) index):
  // what makes room under TOKEN_MAX_STORED.
  earliestExpired:
    `SELECT ${API_TOKENS.columns} FROM api_tokens` +
    ' WHERE account_id = ? AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, id LIMIT ?',
  // Every stored token: for tests and tools (TokenStore.count), never the server's work.
  count: 'SELECT CAST(COUNT(*) AS INTEGER) AS n FROM api_tokens',
  // Whether any token is stored (1 or 0): the bootstrap's question at every start reads the
  // first entry of the primary key, however many tokens there are.
  anyToken: 'SELECT CAST(COUNT(*) AS INTEGER) AS n FROM (SELECT id FROM api_tokens ORDER BY id LIMIT 1) AS t',
  // One page, oldest first: the rows after the cursor's (created_at, id), a range of the
  // (account_id, created_at, id) index. Row values: SQLite, PostgreSQL and its distributed
  // relatives compare them column by column, and walk the index from the cursor.
  list:
    `SELECT ${API_TOKENS.columns} FROM api_tokens` +
    ' WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?) AND (created_at, id) > (?, ?)' +
    ' ORDER BY created_at, id LIMIT ?',
  // By last use, the most recent first, never-used tokens last, ties by id: ranges of
  // migration 16's (account_id, COALESCE(-last_used_at, 1), id) index, the expression written
  // exactly as there (both engines match an index on an expression only to the same one).
  // A page is the rest of the cursor's tie (same key, later ids), then the keys after it:
  // two plain ranges, as SQLite cannot seek a row value whose first term is an expression
  // (it would read the account's rows from the start), and a tie can be long (every
  // never-used token shares the key 1).
  listByLastUseTie:
    `SELECT ${API_TOKENS.columns} FROM api_tokens` +
    ' WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?) AND COALESCE(-last_used_at, 1) = ? AND id > ?' +
    ' ORDER BY id LIMIT ?',
  listByLastUseAfter:
    `SELECT ${API_TOKENS.columns} FROM api_tokens` +
    ' WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?) AND COALESCE(-last_used_at, 1) > ?' +
    ' ORDER BY COALESCE(-last_used_at, 1), id LIMIT ?',
  getToken: `SELECT ${API_TOKENS.columns} FROM api_tokens WHERE id = ? AND account_id = ?`,
  // Verification's one read: the token and its account's status together, by its current
  // or its previous (grace-period) secret (each hash column has its own UNIQUE index).
  byHash:
    `SELECT ${API_TOKENS.qualified('t')}, a.status AS account_status, a.rate_limit AS account_rate_limit` +
    ' FROM api_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.secret_hash = ? OR t.previous_secret_hash = ?',
  deleteToken: 'DELETE FROM api_tokens WHERE id = ? AND account_id = ?',
  // The right-hand sides read the row as it was: the secret current until now becomes the
  // previous one (or none, when the grace period is null), in one atomic step.
  // CAST: PostgreSQL cannot type a bare `? IS NULL` parameter.
  // A new expiry starts its notices over; the same expiry keeps where they are.
  rotateToken:
    'UPDATE api_tokens SET previous_secret_hash = CASE WHEN CAST(? AS BIGINT) IS NULL THEN NULL ELSE secret_hash END,' +
    ' previous_expires_at = ?, secret_hash = ?, expires_at = ?,' +
    ' next_notice_at = CASE WHEN expires_at IS NOT DISTINCT FROM CAST(? AS BIGINT) THEN next_notice_at' +
    ' ELSE CAST(? AS BIGINT) END WHERE id = ? AND account_id = ?',
  // COALESCE keeps what the update leaves out; a condition, which may be set to NULL, is
  // set when its flag (the parameter before it) is 1. CASTs: PostgreSQL types each parameter.
  updateToken:
    'UPDATE api_tokens SET name = COALESCE(?, name), scopes = COALESCE(?, scopes),' +
    ' allowed_cidrs = CASE WHEN CAST(? AS INTEGER) = 1 THEN CAST(? AS TEXT) ELSE allowed_cidrs END,' +
    ' not_before = CASE WHEN CAST(? AS INTEGER) = 1 THEN CAST(? AS BIGINT) ELSE not_before END,' +
    ' enabled = COALESCE(CAST(? AS INTEGER), enabled) WHERE id = ? AND account_id = ?',
  endGrace:
    'UPDATE api_tokens SET previous_secret_hash = NULL, previous_expires_at = NULL' +
    ' WHERE id = ? AND account_id = ? AND previous_secret_hash = ?',
  deleteAccountTokens: 'DELETE FROM api_tokens WHERE account_id = ?',
  // The account's webhooks and what they still had to deliver (their delivery log, which
  // nothing reads once they are gone, is left to the log's retention).
  deleteAccountOutbox: 'DELETE FROM webhook_outbox WHERE webhook_id IN (SELECT id FROM webhooks WHERE account_id = ?)',
  deleteAccountWebhooks: 'DELETE FROM webhooks WHERE account_id = ?',
  // DO NOTHING on a conflict (the id is new: the external_id's UNIQUE index): 0 rows.
  insertAccount:
    `INSERT INTO accounts (${ACCOUNTS.columns}) VALUES (${ACCOUNTS.placeholders})` + ' ON CONFLICT DO NOTHING',
  getAccount: `SELECT ${ACCOUNTS.columns} FROM accounts WHERE id = ?`,
  // Then the filters given, the cursor and the order (accountListQuery).
  listAccounts: `SELECT ${ACCOUNTS.columns} FROM accounts`,
  updateAccount: 'UPDATE accounts SET name = COALESCE(?, name), status = COALESCE(?, status) WHERE id = ?',
  // Its own statement: null is a value to set (the default limit), not "unchanged".
  setAccountRateLimit: 'UPDATE accounts SET rate_limit = ? WHERE id = ?',
  deleteAccount: 'DELETE FROM accounts WHERE id = ?',
  // Every account's tokens expired at or before the bound, earliest first: one range of the
  // (expires_at, id) index (migration 11), so a batch costs what it returns.
  expiredBatch:
    `SELECT ${API_TOKENS.columns} FROM api_tokens` +
    ' WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, id LIMIT ?',
  deleteExpired: 'DELETE FROM api_tokens WHERE id = ? AND expires_at IS NOT NULL AND expires_at <= ?',
  insertEvent: `INSERT INTO audit_events (${AUDIT_EVENTS.columns}) VALUES (${AUDIT_EVENTS.placeholders})`,
  // An event's outbox rows: one per enabled webhook that watches its account (or every
  // account: `*`, which receives the operator's view) and subscribes to its type. The
  // type is matched in the webhook's JSON list of types, quoted whole (LIKE's `_` escaped).
  // Both watch values are lookups of the (watch, id) index; an account holds a bounded
  // number of webhooks.
  fanOut:
    `INSERT INTO webhook_outbox (${WEBHOOK_OUTBOX.columns}) SELECT id, ?, ?, CASE WHEN watch = '*' THEN ? ELSE ? END,` +
    " CAST(? AS BIGINT), 0, CAST(? AS BIGINT), NULL FROM webhooks WHERE watch IN (?, '*') AND enabled = 1" +
    " AND events LIKE ? ESCAPE '\\'",
  insertOutbox: `INSERT INTO webhook_outbox (${WEBHOOK_OUTBOX.columns}) VALUES (${WEBHOOK_OUTBOX.placeholders})`,
  // The outbox rows due, earliest first: one range of the next_attempt_at index. On
  // PostgreSQL the claim adds FOR UPDATE SKIP LOCKED (claimSuffix).
  dueOutbox:
    `SELECT ${WEBHOOK_OUTBOX.columns} FROM webhook_outbox WHERE next_attempt_at <= ?` +
    ' ORDER BY next_attempt_at LIMIT ?',
  leaseOutbox: 'UPDATE webhook_outbox SET next_attempt_at = ?, claim = ? WHERE webhook_id = ? AND event_id = ?',
  deleteClaimed: 'DELETE FROM webhook_outbox WHERE webhook_id = ? AND event_id = ? AND claim = ?',
  retryClaimed:
    'UPDATE webhook_outbox SET attempts = ?, next_attempt_at = ?, claim = NULL' +
    ' WHERE webhook_id = ? AND event_id = ? AND claim = ?',
  deleteWebhookOutbox: 'DELETE FROM webhook_outbox WHERE webhook_id = ?',
  insertDelivery:
    `INSERT INTO webhook_deliveries (${WEBHOOK_DELIVERIES.columns})` + ` VALUES (${WEBHOOK_DELIVERIES.placeholders})`,
  // A webhook's delivery log, newest first (by id: a ULID of the attempt's time), and the
  // page before a cursor: one range of the (webhook_id, id) index.
  deliveries:
    `SELECT ${WEBHOOK_DELIVERIES.columns} FROM webhook_deliveries` + ' WHERE webhook_id = ? ORDER BY id DESC LIMIT ?',
  deliveriesBefore:
    `SELECT ${WEBHOOK_DELIVERIES.columns} FROM webhook_deliveries` +
    ' WHERE webhook_id = ? AND id < ? ORDER BY id DESC LIMIT ?',
  // The log's retention, as the usage pruning: where a batch ends by the primary key, then the rows up to it.
  pruneDeliveriesBoundary: 'SELECT id FROM webhook_deliveries WHERE id < ? ORDER BY id LIMIT 1 OFFSET ?',
  pruneDeliveries: 'DELETE FROM webhook_deliveries WHERE id <= ?',
  pruneDeliveriesRest: 'DELETE FROM webhook_deliveries WHERE id < ?',
  // One statement: how many webhooks the account holds (its index alone) and whether it exists.
  countWebhooks:
    'SELECT CAST((SELECT COUNT(*) FROM webhooks WHERE account_id = ?) AS INTEGER) AS n,' +
    ' (SELECT status FROM accounts WHERE id = ?) AS status',
  insertWebhook: `INSERT INTO webhooks (${WEBHOOKS.columns}) VALUES (${WEBHOOKS.placeholders})`,
  getWebhook: `SELECT ${WEBHOOKS.columns} FROM webhooks WHERE id = ? AND account_id = ?`,
  webhookById: `SELECT ${WEBHOOKS.columns} FROM webhooks WHERE id = ?`,
  listWebhooks:
    `SELECT ${WEBHOOKS.columns} FROM webhooks` +
    ' WHERE account_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?',
  // COALESCE keeps what the update leaves out; the description (which may become NULL) is
  // set when its flag is 1. Any change of `enabled` starts its failure record over.
  updateWebhook:
    'UPDATE webhooks SET url = COALESCE(?, url), events = COALESCE(?, events),' +
    ' description = CASE WHEN CAST(? AS INTEGER) = 1 THEN CAST(? AS TEXT) ELSE description END,' +
    ' watch = COALESCE(?, watch), enabled = COALESCE(CAST(? AS INTEGER), enabled),' +
    ' failing_since = CASE WHEN CAST(? AS INTEGER) IS NULL THEN failing_since ELSE NULL END,' +
    ' disabled_reason = CASE WHEN CAST(? AS INTEGER) IS NULL THEN disabled_reason ELSE NULL END,' +
    ' updated_at = ? WHERE id = ? AND account_id = ?',
  // The right-hand sides read the row as it was: the secret current until now becomes the previous one.
  rotateWebhookSecret:
    'UPDATE webhooks SET previous_secret = secret, previous_secret_expires_at = ?, secret = ?, updated_at = ?' +
    ' WHERE id = ? AND account_id = ?',
  deleteWebhook: 'DELETE FROM webhooks WHERE id = ? AND account_id = ?',
  webhookDelivered: 'UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL',
  webhookFailed: 'UPDATE webhooks SET failing_since = ? WHERE id = ? AND failing_since IS NULL',
  disableFailing:
    "UPDATE webhooks SET enabled = 0, disabled_reason = 'failing', updated_at = ?" +
    ' WHERE id = ? AND enabled = 1 AND failing_since <= ?',
  // The tokens whose next expiry notice is due, earliest first: one range of the
  // (next_notice_at, id) index (migration 17), whatever the table holds.
  dueNotices:
    'SELECT id, name, account_id, expires_at, next_notice_at FROM api_tokens' +
    ' WHERE next_notice_at <= ? ORDER BY next_notice_at, id LIMIT ?',
  // Only if still where it was read: of two instances handling one notice, one sends it.
  advanceNotice: 'UPDATE api_tokens SET next_notice_at = ? WHERE id = ? AND next_notice_at = ?',
  // The occurred_at of the oldest batch's last event (the limit-th oldest before the bound),
  // read from the occurred_at index alone.
  pruneBoundary: 'SELECT occurred_at FROM audit_events WHERE occurred_at < ? ORDER BY occurred_at LIMIT 1 OFFSET ?',
  // A bounded batch (both dialects accept LIMIT in the subquery, neither in DELETE itself),
  // by the occurred_at index: a long backlog never holds the write lock for long. The outer
  // bound (the batch's boundary) makes the rows to delete one range of the index whatever
  // the plan: without it PostgreSQL may match the subquery's ids by scanning the table.
  pruneEvents:
    'DELETE FROM audit_events WHERE occurred_at <= ? AND id IN' +
    ' (SELECT id FROM audit_events WHERE occurred_at < ? ORDER BY occurred_at LIMIT ?)',
  // A token's hours in a range, oldest first: one range of the primary key (token_id, hour),
  // at most one row per hour of the range (the limit says so to the planner).
  tokenUsage:
    `SELECT hour, ${TOKEN_USAGE.counts.join(', ')} FROM token_usage` +
    ' WHERE token_id = ? AND hour >= ? AND hour < ? ORDER BY hour LIMIT ?',
  // The pruning of old hours, as the audit trail's: the (hour, token_id) of the batch's
  // last row (the limit-th oldest before the bound), from the (hour, token_id) index alone;
  // then every row up to it, one range of that index, however many tokens an hour holds.
  pruneUsageBoundary: 'SELECT hour, token_id FROM token_usage WHERE hour < ? ORDER BY hour, token_id LIMIT 1 OFFSET ?',
  pruneUsage: 'DELETE FROM token_usage WHERE hour < ? AND (hour, token_id) <= (?, ?)',
  // Fewer than a batch before the bound: all of them.
  pruneUsageRest: 'DELETE FROM token_usage WHERE hour < ?',
  markBootstrap: 'INSERT INTO infracat_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING',
  latestCatalog: 'SELECT COALESCE(MAX(version), 0) AS v FROM catalog_revisions',
  currentCatalog: `SELECT ${CATALOG_REVISIONS.columns} FROM catalog_revisions ORDER BY version DESC LIMIT 1`,
  catalogRevision: `SELECT ${CATALOG_REVISIONS.columns} FROM catalog_revisions WHERE version = ?`,
  // Newest first: the first page, and the page before a version (by the primary key).
  catalogRevisions: `SELECT ${CATALOG_REVISION_INFO.columns} FROM catalog_revisions ORDER BY version DESC LIMIT ?`,
  catalogRevisionsBefore:
    `SELECT ${CATALOG_REVISION_INFO.columns} FROM catalog_revisions` +
    ' WHERE version < ? ORDER BY version DESC LIMIT ?',
  applyCatalog:
    `INSERT INTO catalog_revisions (${CATALOG_REVISIONS.columns}) VALUES (${CATALOG_REVISIONS.placeholders})` +
    ' ON CONFLICT (version) DO NOTHING',
  // A new instance inserts its row; a known one refreshes only what a heartbeat changes.
  heartbeat:
    `INSERT INTO instances (${INSTANCES.columns}) VALUES (${INSTANCES.placeholders})` +
    ' ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at',
  // The ids sort by the database's collation, the same for every instance that asks.
  // CAST: COUNT and SUM are BIGINT in PostgreSQL, which its driver returns as strings.
  liveInstances:
    'SELECT CAST(COUNT(*) AS INTEGER) AS n, CAST(COALESCE(SUM(CASE WHEN id < ? THEN 1 ELSE 0 END), 0) AS INTEGER)' +
    ' AS below FROM instances WHERE expires_at > ?',
  leaveInstance: 'DELETE FROM instances WHERE id = ?',
  // Dead counters, a bounded batch by the window_end index, bounded twice as pruneEvents is:
  // where the batch ends (pruneRateBoundary), and the batch itself.
  pruneRateBoundary:
    'SELECT window_end FROM rate_limit_counters WHERE window_end < ? ORDER BY window_end LIMIT 1 OFFSET ?',
  pruneRateCounters:
    'DELETE FROM rate_limit_counters WHERE window_end <= ? AND (rate_key, window_end) IN' +
    ' (SELECT rate_key, window_end FROM rate_limit_counters WHERE window_end < ? ORDER BY window_end LIMIT ?)',
  pruneInstances: 'DELETE FROM instances WHERE expires_at < ?',
  appliedVersions: 'SELECT version FROM infracat_schema_migrations',
  schemaVersion: 'SELECT COALESCE(MAX(version), 0) AS v FROM infracat_schema_migrations',
  recordMigration: 'INSERT INTO infracat_schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
  // A real write that changes nothing: proves at start that the database accepts writes
  // (a read-only file or a standby would otherwise serve reads and fail every write).
  writeProbe:
    'UPDATE infracat_schema_migrations SET applied_at = applied_at ' +
    'WHERE version = (SELECT MAX(version) FROM infracat_schema_migrations)',
} as const;

/**
 * `stats.queries`, counted here and nowhere else: one per statement the store sends
 * through the driver (in or out of a transaction, including readiness probes and table
 * checks). Transaction control (BEGIN, COMMIT, ROLLBACK, PostgreSQL's lock-row SELECT)
 * is the driver's and is not counted, so the same Store calls count the same on every backend.
 */
class Counted implements Queries {
  constructor(
    private readonly target: Queries,
    private readonly stats: { queries: number },
  ) {}

  run(sql: string, params?: readonly Param[]): Promise<number> {
    this.stats.queries += 1;
    return this.target.run(sql, params);
  }

  get<R>(sql: string, params?: readonly Param[]): Promise<R | undefined> {
    this.stats.queries += 1;
    return this.target.get<R>(sql, params);
  }

  all<R>(sql: string, params?: readonly Param[]): Promise<R[]> {
    this.stats.queries += 1;
    return this.target.all<R>(sql, params);
  }

  /** A statement the driver sends on its own behalf (probe, table check, idempotent DDL). */
  one<T>(send: () => Promise<T>): Promise<T> {
    this.stats.queries += 1;
    return send();
  }
}

/**
 * A transaction's statements, counted, and the announcement of the change it makes: sent
 * to the other instances by the driver when (and only if) the transaction commits. Not
 * counted: it is how a backend tells others, not a statement of the store's (SQLite sends
 * nothing).
 */
class Tx extends Counted {
  constructor(
    private readonly raw: Queries,
    stats: { queries: number },
    private readonly driver: Driver,
  ) {
    super(raw, stats);
  }

  announce(change: Change): Promise<void> {
    return this.driver.announce(this.raw, encodeChange(change));
  }
}

export class SqlStore implements Store {
  readonly backend: string;
  readonly description: string;
  readonly tokens: TokenStore;
  readonly accounts: AccountStore;
  readonly catalog: CatalogStore;
  readonly audit: AuditStore;
  readonly instances: InstanceStore;
  readonly rateCounters: RateCounterStore;
  readonly webhooks: WebhookStore;
  readonly stats = { queries: 0 };
  private readonly db: Counted;

  constructor(private readonly driver: Driver) {
    this.backend = driver.backend;
    this.description = driver.description;
    this.db = new Counted(driver, this.stats);
    const transact: Transact = (body, lock) => this.transaction(body, lock);
    this.tokens = new SqlTokenStore(this.db, transact, BATCH_ROWS[driver.dialect]);
    this.accounts = new SqlAccountStore(this.db, transact);
    this.catalog = new SqlCatalogStore(this.db, transact);
    this.audit = new SqlAuditStore(this.db);
    this.instances = new SqlInstanceStore(this.db);
    this.rateCounters = new SqlRateCounterStore(this.db);
    this.webhooks = new SqlWebhookStore(this.db, transact, driver.dialect);
  }

  /** A transaction whose statements are counted like any other. */
  private transaction<T>(body: (tx: Tx) => Promise<T>, lock?: LockName): Promise<T> {
    return this.driver.transaction((tx) => body(new Tx(tx, this.stats, this.driver)), lock);
  }

  watch(handlers: ChangeHandlers): ChangeWatch {
    return this.driver.watch(handlers);
  }

  async migrate(options: { upTo?: number } = {}): Promise<MigrationReport> {
    const dialect = this.driver.dialect;
    // Several instances may run this at once: every step is idempotent and race-safe.
    for (const step of BOOKKEEPING.steps) {
      const sql = stepSql(step, dialect);
      if (sql !== undefined) await this.db.one(() => this.driver.ensure(sql));
    }
    // Under the migrate lock, so two instances never both decide to apply a version:
    // the second waits, then finds nothing pending.
    return this.transaction(async (tx) => {
      const rows = await tx.all<{ version: number }>(SQL.appliedVersions);
      const before = new Set(rows.map((r) => r.version));
      const pending = pendingMigrations(before, options.upTo);
      for (const m of pending) {
        for (const step of m.steps) {
          if (typeof step === 'object' && 'data' in step) {
            await step.data(tx);
            continue;
          }
          const sql = stepSql(step, dialect);
          if (sql !== undefined) await tx.run(sql);
        }
        await tx.run(SQL.recordMigration, [m.version, m.name, Date.now()]);
      }
      return { applied: pending.map((m) => m.version), version: schemaVersion(before, pending) };
    }, 'migrate');
  }

  async schemaVersion(): Promise<number> {
    if (!(await this.db.one(() => this.driver.tableExists('infracat_schema_migrations')))) return 0;
    return (await this.db.get<{ v: number }>(SQL.schemaVersion))?.v ?? 0;
  }

  backup(file: string): Promise<BackupReport> {
    return this.driver.backup(file);
  }

  ping(): Promise<void> {
    return this.db.one(() => this.driver.ping());
  }

  async checkWritable(): Promise<void> {
    await this.db.run(SQL.writeProbe);
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}

type Transact = <T>(body: (tx: Tx) => Promise<T>, lock?: LockName) => Promise<T>;

/**
 * Writes `event` in the transaction `tx`: the change it records is in the same one. So is
 * its message to the webhooks subscribed to it (the outbox), when webhooks may subscribe
 * to its action: a committed change is never without its deliveries, nor a delivery
 * without its change.
 */
async function record(tx: Queries, event: AuditEventRecord): Promise<void> {
  await tx.run(SQL.insertEvent, AUDIT_EVENTS.params(event));
  const message = auditMessage(event);
  if (message !== null) await fanOut(tx, message);
}

/** A LIKE pattern matching `type` quoted whole in a JSON list of strings (`\` escapes LIKE's wildcards). */
function typePattern(type: string): string {
  return `%${JSON.stringify(type).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Puts `message` in the outbox of every enabled webhook subscribed to it, due at once, in the transaction `tx`. */
async function fanOut(tx: Queries, message: WebhookMessage): Promise<void> {
  await tx.run(SQL.fanOut, [
    message.id,
    message.type,
    message.operatorBody,
    message.body,
    message.occurredAt,
    message.occurredAt,
    message.accountId,
    typePattern(message.type),
  ]);
}

/** A token's row with its first expiry notice time. */
function tokenRow(token: TokenRecord): Param[] {
  return [...API_TOKENS.params(token), firstNoticeAt(token.expiresAt)];
}

/**
 * Deletes `count` of the account's tokens that expired at or before `now`, the earliest
 * expiry first, each with its event, in the transaction `tx` (a token create's, under the
 * tokens lock: nobody else deletes them meanwhile).
 */
async function purgeEarliestExpired(
  tx: Queries,
  accountId: string,
  now: number,
  count: number,
  eventFor: (token: TokenRecord) => AuditEventRecord,
): Promise<void> {
  const rows = await tx.all<Record<string, unknown>>(SQL.earliestExpired, [accountId, now, count]);
  for (const token of rows.map((row) => API_TOKENS.fromRow(row))) {
    if ((await tx.run(SQL.deleteExpired, [token.id, now])) === 0) continue;
    await record(tx, eventFor(token));
  }
}

class SqlTokenStore implements TokenStore {
  /** Rows per batched write statement (BATCH_ROWS), and the statement sizes that serve them. */
  private readonly sizes: number[];

  constructor(
    private readonly db: Queries,
    private readonly transaction: Transact,
    private readonly batchRows: number,
  ) {
    this.sizes = batchSizes(batchRows);
  }

  create(
    token: TokenRecord,
    limits: { maxLive: number; now: number; stored?: StoredBound | undefined },
    event: AuditEventRecord,
  ): Promise<CreateTokenResult> {
    return this.transaction(async (tx) => {
      const found = await tx.get<{ n: number; stored: number; status: AccountStatus | null }>(SQL.countLive, [
        token.accountId,
        limits.now,
        token.accountId,
        token.accountId,
      ]);
      if (found === undefined || found.status === null) return 'no_account';
      if (found.n >= limits.maxLive) return 'limit_reached';
      if (limits.stored !== undefined) {
        const excess = found.stored + 1 - limits.stored.max;
        // Only expired tokens make room: too few of them, and nothing changes.
        if (excess > found.stored - found.n) return 'limit_reached';
        if (excess > 0) await purgeEarliestExpired(tx, token.accountId, limits.now, excess, limits.stored.eventFor);
      }
      await tx.run(SQL.insertToken, tokenRow(token));
      await record(tx, event);
      return 'created';
    }, 'tokens');
  }

  bootstrap(token: TokenRecord | null, event: AuditEventRecord | null): Promise<boolean> {
    // The tokens lock orders this after any create() in flight (the count is exact); the
    // marker's primary key makes exactly one decision stick regardless.
    return this.transaction(async (tx) => {
      const n = (await tx.get<{ n: number }>(SQL.anyToken))?.n ?? 0;
      const mint = token !== null && n === 0;
      if ((await tx.run(SQL.markBootstrap, [BOOTSTRAP_KEY, bootstrapOutcome(token, n)])) === 0) return false;
      if (mint) {
        await tx.run(SQL.insertToken, tokenRow(token));
        if (event !== null) await record(tx, event);
      }
      return mint;
    }, 'tokens');
  }

  async list(accountId: string, expiredAfter: number, page: PageRequest): Promise<TokenRecord[]> {
    const rows = await this.db.all<Record<string, unknown>>(SQL.list, [accountId, expiredAfter, ...pageParams(page)]);
    return rows.map((row) => API_TOKENS.fromRow(row));
  }

  async listByLastUse(
    accountId: string,
    expiredAfter: number,
    page: PageRequest<LastUsePosition>,
  ): Promise<TokenRecord[]> {
    const { after, limit } = page;
    const rows: Record<string, unknown>[] = [];
    // Every key lies above this one (a use's is its time negated): the first page starts before them all.
    let key = Number.MIN_SAFE_INTEGER;
    if (after !== undefined) {
      key = lastUseKey(after.lastUsedAt);
      rows.push(
        ...(await this.db.all<Record<string, unknown>>(SQL.listByLastUseTie, [
          accountId,
          expiredAfter,
          key,
          after.id,
          limit,
        ])),
      );
    }
    // A key only ever decreases (a later use), so no row of the tie is among the keys after it.
    if (rows.length < limit)
      rows.push(
        ...(await this.db.all<Record<string, unknown>>(SQL.listByLastUseAfter, [
          accountId,
          expiredAfter,
          key,
          limit - rows.length,
        ])),
      );
    return rows.map((row) => API_TOKENS.fromRow(row));
  }

  purgeExpired(before: number, limit: number, eventFor: (token: TokenRecord) => AuditEventRecord): Promise<number> {
    // One statement per token (the same texts whatever the batch), each delete with its
    // event; a token deleted meanwhile by someone else gets no purge event.
    return this.transaction(async (tx) => {
      const rows = await tx.all<Record<string, unknown>>(SQL.expiredBatch, [before, limit]);
      let purged = 0;
      for (const token of rows.map((row) => API_TOKENS.fromRow(row))) {
        if ((await tx.run(SQL.deleteExpired, [token.id, before])) === 0) continue;
        await record(tx, eventFor(token));
        purged += 1;
      }
      return purged;
    });
  }

  async get(accountId: string, id: string): Promise<TokenRecord | null> {
    const row = await this.db.get<Record<string, unknown>>(SQL.getToken, [id, accountId]);
    return row === undefined ? null : API_TOKENS.fromRow(row);
  }

  async findByHash(secretHash: string): Promise<TokenWithAccount | null> {
    const row = await this.db.get<Record<string, unknown>>(SQL.byHash, [secretHash, secretHash]);
    if (row === undefined) return null;
    // The status added to the record itself: this is the entry the verification cache keeps,
    // and a spread copy (`{ ...record, accountStatus }`) takes about 60% more heap (V8 lays
    // it out as a dictionary): 1,290 bytes an entry against 810 (scripts/cache-memory.ts).
    return Object.assign(API_TOKENS.fromRow(row), {
      accountStatus: row.account_status as AccountStatus,
      accountRateLimit: row.account_rate_limit === null ? null : Number(row.account_rate_limit),
    });
  }

  delete(accountId: string, id: string, event: AuditEventRecord): Promise<boolean> {
    return this.transaction(async (tx) => {
      if ((await tx.run(SQL.deleteToken, [id, accountId])) === 0) return false;
      await record(tx, event);
      await tx.announce({ kind: 'token', accountId, id });
      return true;
    });
  }

  rotate(
    accountId: string,
    id: string,
    change: { secretHash: string; previousExpiresAt: number | null; expiresAt: number | null },
    event: AuditEventRecord,
  ): Promise<TokenRecord | null> {
    const { secretHash, previousExpiresAt, expiresAt } = change;
    return this.changed(
      SQL.rotateToken,
      [previousExpiresAt, previousExpiresAt, secretHash, expiresAt, expiresAt, firstNoticeAt(expiresAt), id, accountId],
      accountId,
      id,
      event,
    );
  }

  update(accountId: string, id: string, changes: TokenChanges, event: AuditEventRecord): Promise<TokenRecord | null> {
    const { name, scopes, allowedCidrs, notBefore, enabled } = changes;
    const params: Param[] = [
      name ?? null,
      scopes === undefined ? null : JSON.stringify(scopes),
      allowedCidrs === undefined ? 0 : 1,
      allowedCidrs === undefined || allowedCidrs === null ? null : JSON.stringify(allowedCidrs),
      notBefore === undefined ? 0 : 1,
      notBefore ?? null,
      enabled === undefined ? null : enabled ? 1 : 0,
      id,
      accountId,
    ];
    return this.changed(SQL.updateToken, params, accountId, id, event);
  }

  /** Runs one UPDATE of a token and, when it found the token, records `event`; the token afterwards. */
  private changed(
    sql: string,
    params: Param[],
    accountId: string,
    id: string,
    event: AuditEventRecord,
  ): Promise<TokenRecord | null> {
    return this.transaction(async (tx) => {
      if ((await tx.run(sql, params)) === 0) return null;
      const row = await tx.get<Record<string, unknown>>(SQL.getToken, [id, accountId]);
      await record(tx, event);
      await tx.announce({ kind: 'token', accountId, id });
      return row === undefined ? null : API_TOKENS.fromRow(row);
    });
  }

  endGrace(accountId: string, id: string, previousSecretHash: string, event: AuditEventRecord): Promise<boolean> {
    return this.transaction(async (tx) => {
      if ((await tx.run(SQL.endGrace, [id, accountId, previousSecretHash])) === 0) return false;
      await record(tx, event);
      await tx.announce({ kind: 'token', accountId, id });
      return true;
    });
  }

  async touch(entries: readonly LastUsed[]): Promise<void> {
    // One statement per batchRows entries, each committed on its own rather than in
    // one transaction: between them the event loop serves requests (better-sqlite3 runs a
    // statement synchronously) and no lock is held across the wait. Each chunk is
    // collapsed and sorted on its own, so no step walks the whole batch at once; an id in
    // two chunks is written by both, and the later time wins. A failure leaves the earlier
    // chunks written; the caller keeps the whole batch for its next flush, and writing a
    // time again changes nothing.
    for (let at = 0; at < entries.length; at += this.batchRows) {
      if (at > 0) await yieldToLoop();
      const rows = latestPerId(entries.slice(at, at + this.batchRows));
      const size = this.sizes.find((n) => n >= rows.length) ?? this.batchRows;
      const params: Param[] = rows.flat();
      for (let n = rows.length; n < size; n++) params.push(...TOUCH_FILLER);
      await this.db.run(touchQuery(size), params);
    }
  }

  async addUsage(cells: readonly UsageCell[]): Promise<void> {
    // As touch: one statement per batchRows cells, each committed on its own with a
    // turn of the event loop between them. A failure leaves the earlier chunks added; the
    // caller keeps only the cells of the chunks that failed or did not run (UsageWriteError).
    for (let at = 0; at < cells.length; at += this.batchRows) {
      if (at > 0) await yieldToLoop();
      const chunk = inKeyOrder(cells.slice(at, at + this.batchRows));
      const size = this.sizes.find((n) => n >= chunk.length) ?? this.batchRows;
      const params: Param[] = [];
      for (const cell of chunk) params.push(cell.tokenId, cell.hour, ...cell.counts);
      for (let n = chunk.length; n < size; n++) params.push(...USAGE_FILLER);
      try {
        await this.db.run(usageQuery(size), params);
      } catch (err) {
        throw new UsageWriteError(at, err);
      }
    }
  }

  async usage(tokenId: string, from: number, to: number): Promise<UsageCell[]> {
    const hours = Math.max(1, Math.ceil((to - from) / 3_600_000));
    const rows = await this.db.all<Record<string, unknown>>(SQL.tokenUsage, [tokenId, from, to, hours]);
    return rows.map((row) => ({
      tokenId,
      hour: Number(row.hour),
      counts: TOKEN_USAGE.counts.map((c) => Number(row[c])),
    }));
  }

  async pruneUsage(before: number, limit: number): Promise<number> {
    const last = await this.db.get<{ hour: number; token_id: string }>(SQL.pruneUsageBoundary, [before, limit - 1]);
    if (last === undefined) return this.db.run(SQL.pruneUsageRest, [before]);
    return this.db.run(SQL.pruneUsage, [before, Number(last.hour), last.token_id]);
  }

  async count(): Promise<number> {
    return (await this.db.get<{ n: number }>(SQL.count))?.n ?? 0;
  }

  notices(now: number, limit: number, decide: (token: NoticeDue) => NoticeDecision): Promise<number> {
    return this.transaction(async (tx) => {
      const rows = await tx.all<Record<string, unknown>>(SQL.dueNotices, [now, limit]);
      for (const row of rows) {
        const due: NoticeDue = {
          id: row.id as string,
          name: row.name as string,
          accountId: row.account_id as string,
          expiresAt: row.expires_at === null ? null : Number(row.expires_at),
          nextNoticeAt: Number(row.next_notice_at),
        };
        const { nextNoticeAt, message } = decide(due);
        // Handled meanwhile by another instance: its notice is sent already.
        if ((await tx.run(SQL.advanceNotice, [nextNoticeAt, due.id, due.nextNoticeAt])) === 0) continue;
        if (message !== null) await fanOut(tx, message);
      }
      return rows.length;
    });
  }
}

/**
 * The statement of the accounts list (exported for the test that reads its query plans):
 * the filters given, each served by an index (status: (status, created_at, id), migration
 * 10; external_id: its UNIQUE index), in creation order.
 */
export function accountListQuery(filter: AccountFilter, page: PageRequest): { sql: string; params: Param[] } {
  const { clause, params } = where([
    ['status = ?', filter.status],
    ['external_id = ?', filter.externalId],
  ]);
  // One page, oldest first, after the cursor's (created_at, id), as for tokens: every
  // account (accounts_created), one status (accounts_status), one external_id (its UNIQUE
  // index: one row at most).
  const cursor = `${clause === '' ? ' WHERE' : `${clause} AND`} (created_at, id) > (?, ?)`;
  return {
    sql: `${SQL.listAccounts}${cursor} ORDER BY created_at, id LIMIT ?`,
    params: [...params, ...pageParams(page)],
  };
}

class SqlAccountStore implements AccountStore {
  constructor(
    private readonly db: Queries,
    private readonly transaction: Transact,
  ) {}

  create(account: AccountRecord, event: AuditEventRecord): Promise<CreateAccountResult> {
    return this.transaction(async (tx) => {
      if ((await tx.run(SQL.insertAccount, ACCOUNTS.params(account))) !== 1) return 'external_id_taken';
      await record(tx, event);
      return 'created';
    });
  }

  async get(id: string): Promise<AccountRecord | null> {
    const row = await this.db.get<Record<string, unknown>>(SQL.getAccount, [id]);
    return row === undefined ? null : ACCOUNTS.fromRow(row);
  }

  async list(filter: AccountFilter, page: PageRequest): Promise<AccountRecord[]> {
    const { sql, params } = accountListQuery(filter, page);
    const rows = await this.db.all<Record<string, unknown>>(sql, params);
    return rows.map((row) => ACCOUNTS.fromRow(row));
  }

  update(
    id: string,
    changes: { name?: string | undefined; status?: AccountStatus | undefined; rateLimit?: number | null | undefined },
    event: AuditEventRecord,
  ): Promise<AccountRecord | null> {
    return this.transaction(async (tx) => {
      if ((await tx.run(SQL.updateAccount, [changes.name ?? null, changes.status ?? null, id])) === 0) return null;
      if (changes.rateLimit !== undefined) await tx.run(SQL.setAccountRateLimit, [changes.rateLimit, id]);
      const row = await tx.get<Record<string, unknown>>(SQL.getAccount, [id]);
      await record(tx, event);
      // Both travel with every cached verification of the account's tokens.
      if (changes.status !== undefined || changes.rateLimit !== undefined)
        await tx.announce({ kind: 'account', accountId: id });
      return row === undefined ? null : ACCOUNTS.fromRow(row);
    });
  }

  delete(id: string, event: AuditEventRecord): Promise<boolean> {
    // Under the tokens lock: a token create into this account either finished before
    // (and is deleted here) or runs after (and finds no account).
    return this.transaction(async (tx) => {
      await tx.run(SQL.deleteAccountTokens, [id]);
      await tx.run(SQL.deleteAccountOutbox, [id]);
      await tx.run(SQL.deleteAccountWebhooks, [id]);
      if ((await tx.run(SQL.deleteAccount, [id])) === 0) return false;
      await record(tx, event);
      await tx.announce({ kind: 'account', accountId: id });
      return true;
    }, 'tokens');
  }
}

class SqlCatalogStore implements CatalogStore {
  constructor(
    private readonly db: Queries,
    private readonly transaction: Transact,
  ) {}

  async latestVersion(): Promise<number> {
    return (await this.db.get<{ v: number }>(SQL.latestCatalog))?.v ?? 0;
  }

  async current(): Promise<CatalogRevision | null> {
    const row = await this.db.get<Record<string, unknown>>(SQL.currentCatalog);
    return row === undefined ? null : CATALOG_REVISIONS.fromRow(row);
  }

  async revision(version: number): Promise<CatalogRevision | null> {
    const row = await this.db.get<Record<string, unknown>>(SQL.catalogRevision, [version]);
    return row === undefined ? null : CATALOG_REVISIONS.fromRow(row);
  }

  async revisions(limit: number, before?: number): Promise<CatalogRevisionInfo[]> {
    const rows =
      before === undefined
        ? await this.db.all<Record<string, unknown>>(SQL.catalogRevisions, [limit])
        : await this.db.all<Record<string, unknown>>(SQL.catalogRevisionsBefore, [before, limit]);
    return rows.map((row) => CATALOG_REVISION_INFO.fromRow(row));
  }

  apply(
    revision: Omit<CatalogRevision, 'version'>,
    expectedVersion: number,
    event: AuditEventRecord,
  ): Promise<boolean> {
    return this.transaction(async (tx) => {
      const row = CATALOG_REVISIONS.params({ ...revision, version: expectedVersion + 1 });
      if ((await tx.run(SQL.applyCatalog, row)) !== 1) return false;
      await record(tx, event);
      await tx.announce({ kind: 'catalog', version: expectedVersion + 1 });
      return true;
    });
  }
}

class SqlAuditStore implements AuditStore {
  constructor(private readonly db: Queries) {}

  async list(filter: AuditFilter): Promise<AuditEventRecord[]> {
    const { sql, params } = auditListQuery(filter);
    const rows = await this.db.all<Record<string, unknown>>(sql, params);
    return rows.map((row) => AUDIT_EVENTS.fromRow(row));
  }

  async prune(before: number, limit: number): Promise<number> {
    const last = await this.db.get<{ occurred_at: number }>(SQL.pruneBoundary, [before, limit - 1]);
    // Fewer than `limit` before the bound: all of them (integer milliseconds: <= before - 1).
    const upTo = last === undefined ? before - 1 : Number(last.occurred_at);
    // Pruned meanwhile by another instance: the subquery's later rows fall outside upTo, and
    // the batch comes back short (the next run goes on).
    return this.db.run(SQL.pruneEvents, [upTo, before, limit]);
  }
}

class SqlInstanceStore implements InstanceStore {
  constructor(private readonly db: Queries) {}

  async heartbeat(instance: InstanceRecord): Promise<LiveInstances> {
    await this.db.run(SQL.heartbeat, INSTANCES.params(instance));
    const row = await this.db.get<{ n: number; below: number }>(SQL.liveInstances, [instance.id, instance.heartbeatAt]);
    return { count: row?.n ?? 0, rank: row?.below ?? 0 };
  }

  async leave(id: string): Promise<boolean> {
    return (await this.db.run(SQL.leaveInstance, [id])) > 0;
  }

  prune(before: number): Promise<number> {
    return this.db.run(SQL.pruneInstances, [before]);
  }
}

/** The most counters one statement adds: 3 parameters each, well within every engine's bound. */
const RATE_COUNT_CHUNK = 256;

/**
 * The statement adding `rows` counters (exported for the test that names why it needs no
 * index): one multi-row UPSERT whose RETURNING reads the totals back. One text per row
 * count, and only powers of two are used (SqlRateCounterStore.add), so at most nine texts
 * are ever prepared.
 */
export const rateCountsQuery = textPerSize((rows) => {
  const values = Array.from({ length: rows }, () => '(?, ?, ?)').join(', ');
  return (
    `INSERT INTO rate_limit_counters (rate_key, window_end, n) VALUES ${values}` +
    ' ON CONFLICT (rate_key, window_end) DO UPDATE SET n = rate_limit_counters.n + excluded.n' +
    ' RETURNING rate_key, window_end, n'
  );
});

class SqlRateCounterStore implements RateCounterStore {
  constructor(private readonly db: Queries) {}

  async add(counts: readonly RateCount[]): Promise<RateCount[]> {
    // In one order on every instance: concurrent batches take the row locks in the same
    // order and never deadlock. Each statement is its own atomic step; no transaction is
    // needed (a counter is only ever added to).
    const sorted = [...counts].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.windowEnd - b.windowEnd));
    const totals: RateCount[] = [];
    let at = 0;
    while (at < sorted.length) {
      // The largest power of two that fits what is left, at most RATE_COUNT_CHUNK.
      let rows = RATE_COUNT_CHUNK;
      while (rows > sorted.length - at) rows /= 2;
      const chunk = sorted.slice(at, at + rows);
      at += rows;
      const found = await this.db.all<{ rate_key: string; window_end: unknown; n: unknown }>(
        rateCountsQuery(rows),
        chunk.flatMap((c) => [c.key, c.windowEnd, c.n]),
      );
      for (const row of found) totals.push({ key: row.rate_key, windowEnd: Number(row.window_end), n: Number(row.n) });
    }
    return totals;
  }

  async prune(before: number, limit: number): Promise<number> {
    const last = await this.db.get<{ window_end: number }>(SQL.pruneRateBoundary, [before, limit - 1]);
    const upTo = last === undefined ? before - 1 : Number(last.window_end);
    return this.db.run(SQL.pruneRateCounters, [upTo, before, limit]);
  }
}

/**
 * What the claim's SELECT adds on each engine. PostgreSQL: FOR UPDATE SKIP LOCKED, so
 * instances claiming at the same moment take different rows and never wait for each other
 * (a row another claims is skipped, not blocked on). SQLite needs none: one writer at a
 * time holds the database (BEGIN IMMEDIATE).
 */
const CLAIM_SUFFIX = { sqlite: '', postgres: ' FOR UPDATE SKIP LOCKED' } as const;

class SqlWebhookStore implements WebhookStore {
  private readonly claimDue: string;

  constructor(
    private readonly db: Queries,
    private readonly transaction: Transact,
    dialect: 'sqlite' | 'postgres',
  ) {
    this.claimDue = SQL.dueOutbox + CLAIM_SUFFIX[dialect];
  }

  create(webhook: WebhookRecord, max: number, event: AuditEventRecord): Promise<CreateWebhookResult> {
    // Under the tokens lock, as token creation: ordered with deleting the account (no
    // webhook is created into a deleted account) and with other creates (the cap is exact).
    return this.transaction(async (tx) => {
      const found = await tx.get<{ n: number; status: string | null }>(SQL.countWebhooks, [
        webhook.accountId,
        webhook.accountId,
      ]);
      if (found === undefined || found.status === null) return 'no_account';
      if (found.n >= max) return 'limit_reached';
      await tx.run(SQL.insertWebhook, WEBHOOKS.params(webhook));
      await record(tx, event);
      return 'created';
    }, 'tokens');
  }

  async get(accountId: string, id: string): Promise<WebhookRecord | null> {
    const row = await this.db.get<Record<string, unknown>>(SQL.getWebhook, [id, accountId]);
    return row === undefined ? null : WEBHOOKS.fromRow(row);
  }

  async list(accountId: string, page: PageRequest): Promise<WebhookRecord[]> {
    const rows = await this.db.all<Record<string, unknown>>(SQL.listWebhooks, [accountId, ...pageParams(page)]);
    return rows.map((row) => WEBHOOKS.fromRow(row));
  }

  update(
    accountId: string,
    id: string,
    changes: WebhookChanges,
    event: AuditEventRecord,
  ): Promise<WebhookRecord | null> {
    const { url, events, description, watch, enabled, updatedAt } = changes;
    const enabledFlag = enabled === undefined ? null : enabled ? 1 : 0;
    return this.transaction(async (tx) => {
      const changed = await tx.run(SQL.updateWebhook, [
        url ?? null,
        events === undefined ? null : JSON.stringify(events),
        description === undefined ? 0 : 1,
        description ?? null,
        watch ?? null,
        enabledFlag,
        enabledFlag,
        enabledFlag,
        updatedAt,
        id,
        accountId,
      ]);
      if (changed === 0) return null;
      // A disabled webhook delivers nothing more: what it still had to deliver goes.
      if (enabled === false) await tx.run(SQL.deleteWebhookOutbox, [id]);
      const row = await tx.get<Record<string, unknown>>(SQL.getWebhook, [id, accountId]);
      await record(tx, event);
      return row === undefined ? null : WEBHOOKS.fromRow(row);
    });
  }

  rotateSecret(
    accountId: string,
    id: string,
    change: { secret: string; previousExpiresAt: number; updatedAt: number },
    event: AuditEventRecord,
  ): Promise<WebhookRecord | null> {
    return this.transaction(async (tx) => {
      const params = [change.previousExpiresAt, change.secret, change.updatedAt, id, accountId];
      if ((await tx.run(SQL.rotateWebhookSecret, params)) === 0) return null;
      const row = await tx.get<Record<string, unknown>>(SQL.getWebhook, [id, accountId]);
      await record(tx, event);
      return row === undefined ? null : WEBHOOKS.fromRow(row);
    });
  }

  delete(accountId: string, id: string, event: AuditEventRecord): Promise<boolean> {
    return this.transaction(async (tx) => {
      if ((await tx.run(SQL.deleteWebhook, [id, accountId])) === 0) return false;
      await tx.run(SQL.deleteWebhookOutbox, [id]);
      await record(tx, event);
      return true;
    });
  }

  async enqueue(webhookId: string, message: WebhookMessage): Promise<void> {
    const row: OutboxRecord = {
      webhookId,
      eventId: message.id,
      eventType: message.type,
      body: message.body,
      createdAt: message.occurredAt,
      attempts: 0,
      nextAttemptAt: message.occurredAt,
      claim: null,
    };
    await this.db.run(SQL.insertOutbox, WEBHOOK_OUTBOX.params(row));
  }

  claim(now: number, leaseUntil: number, claim: string, limit: number): Promise<ClaimedDelivery[]> {
    return this.transaction(async (tx) => {
      const rows = (await tx.all<Record<string, unknown>>(this.claimDue, [now, limit])).map((row) =>
        WEBHOOK_OUTBOX.fromRow(row),
      );
      const webhooks = new Map<string, WebhookRecord | null>();
      const claimed: ClaimedDelivery[] = [];
      for (const outbox of rows) {
        await tx.run(SQL.leaseOutbox, [leaseUntil, claim, outbox.webhookId, outbox.eventId]);
        if (!webhooks.has(outbox.webhookId)) {
          const row = await tx.get<Record<string, unknown>>(SQL.webhookById, [outbox.webhookId]);
          webhooks.set(outbox.webhookId, row === undefined ? null : WEBHOOKS.fromRow(row));
        }
        claimed.push({
          outbox: { ...outbox, nextAttemptAt: leaseUntil, claim },
          webhook: webhooks.get(outbox.webhookId)!,
        });
      }
      return claimed;
    });
  }

  finish(
    row: OutboxRecord,
    claim: string,
    attempt: DeliveryRecord,
    outcome: AttemptOutcome,
    disable: { failingSince: number; event: AuditEventRecord },
  ): Promise<boolean> {
    return this.transaction(async (tx) => {
      await tx.run(SQL.insertDelivery, WEBHOOK_DELIVERIES.params(attempt));
      const key = [row.webhookId, row.eventId, claim];
      if (outcome.kind === 'retry') await tx.run(SQL.retryClaimed, [attempt.attempt, outcome.retryAt, ...key]);
      else await tx.run(SQL.deleteClaimed, key);
      if (outcome.kind === 'delivered') {
        await tx.run(SQL.webhookDelivered, [row.webhookId]);
        return false;
      }
      await tx.run(SQL.webhookFailed, [attempt.attemptedAt, row.webhookId]);
      const disabled = await tx.run(SQL.disableFailing, [attempt.attemptedAt, row.webhookId, disable.failingSince]);
      if (disabled === 0) return false;
      await tx.run(SQL.deleteWebhookOutbox, [row.webhookId]);
      await record(tx, disable.event);
      return true;
    });
  }

  async deliveries(webhookId: string, limit: number, before?: string): Promise<DeliveryRecord[]> {
    const rows =
      before === undefined
        ? await this.db.all<Record<string, unknown>>(SQL.deliveries, [webhookId, limit])
        : await this.db.all<Record<string, unknown>>(SQL.deliveriesBefore, [webhookId, before, limit]);
    return rows.map((row) => WEBHOOK_DELIVERIES.fromRow(row));
  }

  async pruneDeliveries(before: number, limit: number): Promise<number> {
    const bound = firstIdAt('dlv', before);
    const last = await this.db.get<{ id: string }>(SQL.pruneDeliveriesBoundary, [bound, limit - 1]);
    if (last === undefined) return this.db.run(SQL.pruneDeliveriesRest, [bound]);
    return this.db.run(SQL.pruneDeliveries, [last.id]);
  }

  async pending(now: number, limit: number): Promise<OutboxRecord[]> {
    const rows = await this.db.all<Record<string, unknown>>(SQL.dueOutbox, [now, limit]);
    return rows.map((row) => WEBHOOK_OUTBOX.fromRow(row));
  }
}
