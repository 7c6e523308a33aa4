// The store's statements are index-served on both backends: the exact statements the store
// runs (every entry of its SQL catalog, and those built per call: auditListQuery,
// accountListQuery, touchQuery, usageQuery, rateCountsQuery), planned by each
// engine over a few thousand rows. SQLite as a deployed database has it (no statistics) and after ANALYZE; PostgreSQL
// after ANALYZE, with its planner free to choose (sequential scans allowed). Every
// combination of the audit trail's filters must walk an index that ends in id (filter,
// order and cursor in one range) and never the whole table. Every other statement reads
// the indexes named for it below, or is named with the reason it needs none: a statement
// added to the store without either fails this file.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  accountListQuery,
  auditListQuery,
  rateCountsQuery,
  SQL as CATALOG,
  touchQuery,
  usageQuery,
} from '../../src/storage/sql-store.js';
import {
  ACCOUNTS,
  API_TOKENS,
  AUDIT_EVENTS,
  CATALOG_REVISIONS,
  INSTANCES,
  WEBHOOK_DELIVERIES,
  WEBHOOK_OUTBOX,
  WEBHOOKS,
  type Param,
} from '../../src/storage/tables.js';
import type {
  AccountFilter,
  AccountRecord,
  AuditEventRecord,
  AuditFilter,
  CatalogRevision,
  InstanceRecord,
  TokenRecord,
  UsageCell,
  DeliveryRecord,
  OutboxRecord,
  WebhookRecord,
} from '../../src/storage/types.js';
import { newId } from '../../src/tokens/ids.js';
import { AUDIT_ACTIONS } from '../../src/audit/events.js';
import { backends, type Backend, type BackendDb } from '../helpers/backends.js';
import { insertRows, rawSql } from '../helpers/raw-sql.js';

const EVENTS = 6000;
const ACCOUNT_COUNT = 3000;
const T0 = Date.UTC(2027, 0, 1);
const MINUTE = 60_000;

const RARE_ACTION = 'account.suspended';
const accountId = (i: number) => `acc_plan${String(i).padStart(6, '0')}`;
const targetId = (i: number) => `tok_plan${String(i).padStart(6, '0')}`;

const COMMON_ACTIONS = AUDIT_ACTIONS.filter((a) => a !== RARE_ACTION);

/**
 * Events as a trail holds them: one a minute over 200 accounts, a handful per target (a
 * target is in one account's trail), the common actions in turn and a rare one every
 * hundredth. The filters below ask for what few events match: the reads that would walk
 * the most rows without the right index.
 */
function seedEvents(count = EVENTS): AuditEventRecord[] {
  return Array.from({ length: count }, (_, i) => {
    const occurredAt = T0 + i * MINUTE;
    return {
      id: newId('evt', occurredAt),
      accountId: accountId(i % 200),
      action: i % 100 === 0 ? RARE_ACTION : COMMON_ACTIONS[i % COMMON_ACTIONS.length]!,
      occurredAt,
      actorType: 'api_token',
      actorId: targetId((i * 13) % 1400),
      actorName: 'seed',
      actorAccountId: accountId(i % 200),
      actorCredential: 'current',
      targetType: 'api_token',
      targetId: targetId(i % 1400),
      targetName: 'seed',
      ip: '203.0.113.7',
      userAgent: 'plan-test',
      requestId: `req-${i}`,
      details: {},
    };
  });
}

function seedAccounts(): AccountRecord[] {
  return Array.from({ length: ACCOUNT_COUNT }, (_, i) => ({
    id: accountId(i),
    name: `account ${i}`,
    externalId: `ext-${i}`,
    status: i % 50 === 0 ? ('suspended' as const) : ('active' as const),
    createdAt: T0 + i,
    rateLimit: null,
  }));
}

interface Plan {
  /** The indexes the plan reads, by name. */
  indexes: string[];
  /** Whether some step reads a table without an index, or sorts. */
  tableScan: boolean;
  sorts: boolean;
  text: string;
}

/** Every node of PostgreSQL's plan of `sql`, depth first. */
async function postgresPlanNodes(
  backend: Backend,
  db: BackendDb,
  sql: string,
  params: Param[],
): Promise<Record<string, unknown>[]> {
  const rows = (await rawSql(backend, db, `EXPLAIN (FORMAT JSON) ${sql}`, params)) as { 'QUERY PLAN': unknown }[];
  const nodes: Record<string, unknown>[] = [];
  const walk = (node: Record<string, unknown>) => {
    nodes.push(node);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const top = rows[0]!['QUERY PLAN'] as { Plan: Record<string, unknown> }[];
  walk(top[0]!.Plan);
  return nodes;
}

async function plan(backend: Backend, db: BackendDb, table: string, sql: string, params: Param[]): Promise<Plan> {
  if (backend.name === 'sqlite') {
    const rows = (await rawSql(backend, db, `EXPLAIN QUERY PLAN ${sql}`, params)) as { detail: string }[];
    const details = rows.map((r) => r.detail);
    return {
      indexes: details.flatMap((d) => {
        const m = /USING (?:COVERING )?INDEX (\S+)|USING (INTEGER )?PRIMARY KEY/.exec(d);
        return m === null ? [] : [m[1] ?? 'PRIMARY KEY'];
      }),
      tableScan: details.some((d) => new RegExp(`^SCAN ${table}$`).test(d)),
      sorts: details.some((d) => d.includes('USE TEMP B-TREE')),
      text: details.join('\n'),
    };
  }
  const nodes = await postgresPlanNodes(backend, db, sql, params);
  return {
    indexes: nodes
      .filter((n) => ['Index Scan', 'Index Only Scan', 'Bitmap Index Scan'].includes(n['Node Type'] as string))
      .map((n) => n['Index Name'] as string),
    tableScan: nodes.some((n) => n['Node Type'] === 'Seq Scan'),
    sorts: nodes.some((n) => n['Node Type'] === 'Sort'),
    text: JSON.stringify(nodes[0], null, 1),
  };
}

const FILTER_KINDS = ['accountId', 'action', 'targetId', 'since', 'until', 'before'] as const;

/** Every combination of the audit trail's filters, with values that match some seeded events. */
function auditFilters(events: readonly AuditEventRecord[]): AuditFilter[] {
  const e = events[EVENTS / 2]!;
  const values: Required<Omit<AuditFilter, 'limit'>> = {
    accountId: e.accountId,
    action: RARE_ACTION,
    targetId: e.targetId!,
    since: T0 + 1000 * MINUTE,
    until: T0 + 5000 * MINUTE,
    before: events[4500]!.id,
  };
  const out: AuditFilter[] = [];
  for (let mask = 0; mask < 1 << FILTER_KINDS.length; mask++) {
    const filter: AuditFilter = { limit: 31 };
    FILTER_KINDS.forEach((kind, bit) => {
      if ((mask & (1 << bit)) !== 0) Object.assign(filter, { [kind]: values[kind] });
    });
    out.push(filter);
  }
  return out;
}

// The audit trail's indexes (migrations 5 and 10) by their first column; each ends with id.
const LEADING: Record<string, string[]> = {
  accountId: ['audit_events_account', 'audit_events_account_action'],
  action: ['audit_events_action'],
  targetId: ['audit_events_target'],
};

/**
 * The indexes that may serve `filter`: one that starts with a column the filter gives
 * (an index range of what matches it; a target's few events are all in one account's
 * trail, so (target_id, id) serves a target within an account too), or the primary key
 * when the filter names no column but the id (since, until, the cursor).
 */
function expectedIndexes(backend: Backend, filter: AuditFilter): string[] {
  const given = Object.keys(LEADING).filter((k) => filter[k as keyof AuditFilter] !== undefined);
  if (given.length > 0) return given.flatMap((k) => LEADING[k]!);
  return [backend.name === 'sqlite' ? 'sqlite_autoindex_audit_events_1' : 'audit_events_pkey'];
}

const show = (filter: object) => JSON.stringify(filter);

// The tables as a busy database holds them, for the plans of every other statement: tokens
// of many accounts (one with more than the others), a third never expiring, a third expired
// (earliest the longest ago), a third live; some rotated (a previous secret); catalog
// revisions; instances that stopped within the last hour and a few live ones. Two in
// three tokens used, in an order unrelated to their creation.
const TOKENS = 20_000;
const NOW = T0 + TOKENS * MINUTE;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const BIG_ACCOUNT = accountId(0);
const SMALL_ACCOUNT = accountId(7);
const tokenId = (i: number) => `tok_seed${String(i).padStart(6, '0')}`;
const hashOf = (kind: string, i: number) => createHash('sha256').update(`${kind}${i}`).digest('hex');
// Spread over every account's key range, as ULID ids are: a join to the account's row is a
// lookup, never a walk of the accounts' index up to it.
const tokenAccount = (i: number) => (i % 20 === 0 ? BIG_ACCOUNT : accountId(1 + (i % (ACCOUNT_COUNT - 1))));
// The token the single-row statements are planned for: rotated (a previous secret), in an
// account late in key order.
const PROBE = 2990;

function seedTokens(): TokenRecord[] {
  return Array.from({ length: TOKENS }, (_, i) => ({
    id: tokenId(i),
    name: `token ${i}`,
    scopes: ['apps:read'],
    secretHash: hashOf('current', i),
    createdAt: T0 + i * MINUTE,
    expiresAt: i % 3 === 0 ? null : i % 3 === 1 ? T0 + i * MINUTE : NOW + i * MINUTE,
    // Two in three used, at times unrelated to their creation; the rest never.
    lastUsedAt: i % 3 === 2 ? null : NOW - ((i * 7919) % TOKENS) * MINUTE,
    lastUsedIp: null,
    accountId: tokenAccount(i),
    previousSecretHash: i % 10 === 0 ? hashOf('previous', i) : null,
    previousExpiresAt: i % 10 === 0 ? NOW + DAY : null,
    allowedCidrs: null,
    notBefore: null,
    enabled: true,
  }));
}

/** The fleet's rate-limit counters: 3,000 keys' windows, a third of them ended. */
const RATE_COUNTERS = {
  name: 'rate_limit_counters',
  columns: 'rate_key, window_end, n',
  placeholders: '?, ?, ?',
  params: (i: number) => [`token:${tokenId(i)}`, NOW + (i - 1000) * 1000, i],
};

function seedRevisions(): CatalogRevision[] {
  return Array.from({ length: 3000 }, (_, i) => ({
    version: i + 1,
    appliedAt: T0 + i * MINUTE,
    appliedBy: { type: 'cli' as const, id: null, name: 'seed' },
    summary: '1 added, 0 changed, 0 removed',
    changes: null,
    document: `{"revision":${i + 1}}`,
  }));
}

const INSTANCE = 'ins_live0';
function seedInstances(): InstanceRecord[] {
  return Array.from({ length: 3000 }, (_, i) => ({
    id: i < 5 ? `ins_live${i}` : `ins_gone${String(i).padStart(6, '0')}`,
    host: 'plan-test',
    pid: i,
    startedAt: NOW - 2 * HOUR,
    heartbeatAt: NOW - i * 1000,
    // Five live; the rest stopped within the last hour (older ones are pruned).
    expiresAt: i < 5 ? NOW + MINUTE : NOW - i * 1000,
  }));
}

// Webhooks as a busy database holds them: a few per account, a twentieth of them watching
// every account (`*`); an outbox with a backlog (a third due, the rest due later, some
// claimed); a delivery log of several attempts per webhook over the last weeks.
const webhookId = (i: number) => `whk_seed${String(i).padStart(6, '0')}`;
const WEBHOOK_COUNT = 3000;
function seedWebhooks(): WebhookRecord[] {
  return Array.from({ length: WEBHOOK_COUNT }, (_, i) => ({
    id: webhookId(i),
    accountId: accountId(i % ACCOUNT_COUNT),
    watch: i % 20 === 0 ? '*' : accountId(i % ACCOUNT_COUNT),
    url: `https://hooks.example.com/${i}`,
    events: ['api_token.created', 'api_token.deleted'],
    description: null,
    enabled: i % 7 !== 0,
    secret: 'v1.sealed',
    previousSecret: null,
    previousSecretExpiresAt: null,
    createdAt: T0 + i * MINUTE,
    updatedAt: T0 + i * MINUTE,
    failingSince: null,
    disabledReason: null,
  }));
}
function seedOutbox(): OutboxRecord[] {
  return Array.from({ length: 6000 }, (_, i) => ({
    webhookId: webhookId(i % WEBHOOK_COUNT),
    eventId: newId('evt', NOW - i * 1000),
    eventType: 'api_token.created',
    body: '{}',
    createdAt: NOW - i * 1000,
    attempts: i % 4,
    nextAttemptAt: i % 3 === 0 ? NOW - i : NOW + i * 1000,
    claim: i % 5 === 0 ? 'claimed' : null,
  }));
}
function seedDeliveries(): DeliveryRecord[] {
  return Array.from({ length: 9000 }, (_, i) => {
    const at = NOW - 30 * DAY + i * 5 * MINUTE;
    return {
      id: newId('dlv', at),
      webhookId: webhookId(i % WEBHOOK_COUNT),
      eventId: newId('evt', at),
      eventType: 'api_token.created',
      attempt: 1,
      attemptedAt: at,
      statusCode: 500,
      durationMs: 12,
      error: 'answered 500',
      nextAttemptAt: null,
    };
  });
}

/** The indexes a statement may read, by name on each engine (`PRIMARY KEY`: SQLite's rowid). */
interface Indexes {
  sqlite: string[];
  postgres: string[];
}

const pk = (table: string, postgresName = `${table}_pkey`): Indexes => ({
  sqlite: [`sqlite_autoindex_${table}_1`],
  postgres: [postgresName],
});
const both = (name: string): Indexes => ({ sqlite: [name], postgres: [name] });
const and = (...sets: Indexes[]): Indexes => ({
  sqlite: sets.flatMap((s) => s.sqlite),
  postgres: sets.flatMap((s) => s.postgres),
});

interface StatementCheck {
  /** The parameters it is planned with: what the store sends (several sets: several cases). */
  params: Param[][];
  /** Every index the plan reads is one of these, and it reads at least one. */
  indexes: Indexes;
  /** It must read this one (the index that serves it, where another could too). */
  reads?: Indexes;
  /**
   * A LIMIT walking an index in its order from one end: SQLite says SCAN, and stops at the
   * limit (a sort would show).
   */
  walks?: true;
  /**
   * What the plan's text must show: the index range the statement seeks (its cursor part of
   * the range, where an engine could also read the account's whole range and filter it).
   */
  seeks?: { sqlite: RegExp; postgres: RegExp };
}

const TOKEN_PK = pk('api_tokens');
const WEBHOOK_PK = pk('webhooks');
const OUTBOX_PK = pk('webhook_outbox');
const DELIVERY_PK = pk('webhook_deliveries');
// One webhook of an account: its primary key, or the account's few (the cap) by (account_id, created_at, id).
const ONE_WEBHOOK = and(WEBHOOK_PK, both('webhooks_account'));
const REVISION_PK: Indexes = { sqlite: ['PRIMARY KEY'], postgres: ['catalog_revisions_pkey'] };
const ACCOUNT_PK = pk('accounts');

// The catalog's statements and those built per batch size (last_used_at, usage, the fleet's
// rate-limit counters), as 4 rows.
const SQL = { ...CATALOG, touch: touchQuery(4), addUsage: usageQuery(4), addRateCounts: rateCountsQuery(4) };

// Hourly usage as a busy database holds it: 500 tokens over 40 hours, the oldest 10 past
// the retention bound (USAGE_BEFORE).
const USAGE_TOKENS = 500;
const USAGE_HOURS = 40;
const USAGE_BEFORE = NOW - 30 * HOUR;
function seedUsage(): UsageCell[] {
  return Array.from({ length: USAGE_TOKENS * USAGE_HOURS }, (_, i) => ({
    tokenId: tokenId(i % USAGE_TOKENS),
    hour: NOW - (USAGE_HOURS - Math.floor(i / USAGE_TOKENS)) * HOUR,
    counts: [3, 1, 0, 0, 0, 1, 0, 0],
  }));
}
const USAGE_PK = pk('token_usage');

/** Every statement of the store's SQL catalog that reads rows, with what must serve it. */
const CHECKS: Record<string, StatementCheck> = {
  // The cap's count (TOKEN_MAX_LIVE) from (account_id, expires_at, id); the stored count from
  // it or from any other index that leads with account_id (the account's range alone).
  countLive: {
    params: [[BIG_ACCOUNT, NOW, BIG_ACCOUNT, BIG_ACCOUNT]],
    indexes: and(both('api_tokens_account_expiry'), both('api_tokens_account_last_used'), ACCOUNT_PK),
    reads: both('api_tokens_account_expiry'),
  },
  earliestExpired: { params: [[BIG_ACCOUNT, NOW, 10]], indexes: both('api_tokens_account_expiry') },
  anyToken: { params: [[]], indexes: TOKEN_PK, walks: true },
  list: {
    params: [
      [BIG_ACCOUNT, NOW - 30 * DAY, Number.MIN_SAFE_INTEGER, '', 101],
      [BIG_ACCOUNT, NOW - 30 * DAY, T0 + 10_000 * MINUTE, tokenId(10_000), 101],
    ],
    // PostgreSQL may read an account holding a twentieth of the table in the table's own
    // created order, skipping the others' rows: a page then reads about twenty pages'
    // entries of one index range, which its statistics price below the account's range.
    indexes: { sqlite: ['api_tokens_account'], postgres: ['api_tokens_account', 'api_tokens_created'] },
  },
  // By last use (migration 16's (account_id, COALESCE(-last_used_at, 1), id)): the rest of a
  // cursor's tie, among the used tokens and among the never-used (key 1); then the keys after
  // a cursor, from the first (every key), a used token's, and the never-used one's. Each a
  // range of the expression, never the account's rows read from the start and filtered.
  listByLastUseTie: {
    params: [
      [BIG_ACCOUNT, NOW - 30 * DAY, -(NOW - 5000 * MINUTE), tokenId(10_000), 101],
      [BIG_ACCOUNT, NOW - 30 * DAY, 1, tokenId(10_000), 101],
    ],
    indexes: both('api_tokens_account_last_used'),
    seeks: {
      sqlite: /USING INDEX api_tokens_account_last_used \(account_id=\? AND <expr>=\? AND id>\?\)/,
      postgres: /"Index Cond": "\(\(account_id = [^"]*\(COALESCE\(\(- last_used_at\)[^"]*= [^"]*\(id > /,
    },
  },
  listByLastUseAfter: {
    params: [
      [BIG_ACCOUNT, NOW - 30 * DAY, Number.MIN_SAFE_INTEGER, 101],
      [BIG_ACCOUNT, NOW - 30 * DAY, -(NOW - 5000 * MINUTE), 101],
      [BIG_ACCOUNT, NOW - 30 * DAY, 1, 101],
    ],
    indexes: both('api_tokens_account_last_used'),
    seeks: {
      sqlite: /USING INDEX api_tokens_account_last_used \(account_id=\? AND <expr>>\?\)/,
      postgres: /"Index Cond": "\(\(account_id = [^"]*\(COALESCE\(\(- last_used_at\)[^"]*> /,
    },
  },
  getToken: { params: [[tokenId(PROBE), tokenAccount(PROBE)]], indexes: TOKEN_PK },
  byHash: {
    params: [[hashOf('current', PROBE), hashOf('current', PROBE)]],
    indexes: {
      sqlite: ['sqlite_autoindex_api_tokens_2', 'api_tokens_previous_hash', 'sqlite_autoindex_accounts_1'],
      postgres: ['api_tokens_secret_hash_key', 'api_tokens_previous_hash', 'accounts_pkey'],
    },
  },
  deleteToken: { params: [[tokenId(PROBE), tokenAccount(PROBE)]], indexes: TOKEN_PK },
  rotateToken: {
    params: [[NOW + DAY, NOW + DAY, hashOf('new', PROBE), null, null, null, tokenId(PROBE), tokenAccount(PROBE)]],
    indexes: TOKEN_PK,
  },
  // Renamed, the networks set, not_before and enabled kept.
  updateToken: {
    params: [['renamed', null, 1, '["10.0.0.0/8"]', 0, null, null, tokenId(PROBE), tokenAccount(PROBE)]],
    indexes: TOKEN_PK,
  },
  // Either unique index finds the one row.
  endGrace: {
    params: [[tokenId(PROBE), tokenAccount(PROBE), hashOf('previous', PROBE)]],
    indexes: and(TOKEN_PK, both('api_tokens_previous_hash')),
  },
  // Any index that leads with account_id finds the account's tokens.
  deleteAccountTokens: {
    params: [[SMALL_ACCOUNT]],
    indexes: and(both('api_tokens_account'), both('api_tokens_account_expiry'), both('api_tokens_account_last_used')),
  },
  getAccount: { params: [[SMALL_ACCOUNT]], indexes: ACCOUNT_PK },
  updateAccount: { params: [[null, 'suspended', SMALL_ACCOUNT]], indexes: ACCOUNT_PK },
  deleteAccount: { params: [[SMALL_ACCOUNT]], indexes: ACCOUNT_PK },
  // The background purge, a batch of 500 where more are past the bound: a few percent of the
  // table, and a backlog (every expired token): the first entries of (expires_at, id),
  // migration 11. (With fewer past it than a batch, any plan reads what it returns.)
  expiredBatch: {
    params: [
      [T0 + 3000 * MINUTE, 500],
      [NOW, 500],
    ],
    indexes: both('api_tokens_expiry'),
  },
  deleteExpired: { params: [[tokenId(778), NOW]], indexes: TOKEN_PK },
  // The audit pruner, a batch of 1000 of 5000 past the bound: where the batch ends, then the
  // batch (the oldest by occurred_at, up to that end).
  pruneBoundary: { params: [[T0 + 5000 * MINUTE, 999]], indexes: both('audit_events_occurred') },
  pruneEvents: {
    params: [[T0 + 999 * MINUTE, T0 + 5000 * MINUTE, 1000]],
    indexes: and(pk('audit_events'), both('audit_events_occurred')),
    reads: both('audit_events_occurred'),
  },
  touch: {
    params: [
      [tokenId(PROBE), NOW, '10.0.0.1', tokenId(PROBE + 1), NOW, null, tokenId(PROBE + 2), NOW, null, '', 0, null],
    ],
    indexes: TOKEN_PK,
  },
  // A token's week of hours: one range of the primary key.
  tokenUsage: { params: [[tokenId(77), NOW - 7 * DAY, NOW, 7 * 24]], indexes: USAGE_PK },
  // The usage pruner, a batch of 1000 of the 5000 rows past the bound: where it ends, then
  // the rows up to there, each a range of (hour, token_id); a short remainder likewise.
  pruneUsageBoundary: { params: [[USAGE_BEFORE, 999]], indexes: both('token_usage_hour') },
  pruneUsage: {
    params: [[USAGE_BEFORE, NOW - (USAGE_HOURS - 1) * HOUR, tokenId(499)]],
    indexes: and(both('token_usage_hour'), USAGE_PK),
    reads: both('token_usage_hour'),
  },
  pruneUsageRest: { params: [[NOW - (USAGE_HOURS - 1) * HOUR]], indexes: and(both('token_usage_hour'), USAGE_PK) },
  // MAX: the last entry of the primary key (a walk that stops at once).
  latestCatalog: { params: [[]], indexes: REVISION_PK, walks: true },
  currentCatalog: { params: [[]], indexes: REVISION_PK, walks: true },
  catalogRevision: { params: [[1500]], indexes: REVISION_PK },
  catalogRevisions: { params: [[101]], indexes: REVISION_PK, walks: true },
  catalogRevisionsBefore: { params: [[1500, 101]], indexes: REVISION_PK },
  liveInstances: { params: [[INSTANCE, NOW]], indexes: both('instances_expiry') },
  leaveInstance: { params: [[INSTANCE]], indexes: pk('instances') },
  setAccountRateLimit: { params: [[100, SMALL_ACCOUNT]], indexes: ACCOUNT_PK },
  // The ended windows, oldest first, a batch of 100 (by the window_end index), then each by the key.
  pruneRateBoundary: { params: [[NOW, 99]], indexes: both('rate_limit_counters_window_end') },
  pruneRateCounters: {
    params: [[NOW - 900 * 1000, NOW, 100]],
    indexes: and(pk('rate_limit_counters'), both('rate_limit_counters_window_end')),
    reads: both('rate_limit_counters_window_end'),
  },
  pruneInstances: { params: [[NOW - HOUR]], indexes: both('instances_expiry') },
  // Deleting an account: its webhooks (by account) and their outbox rows (each webhook's by the primary key).
  deleteAccountOutbox: { params: [[SMALL_ACCOUNT]], indexes: and(both('webhooks_account'), OUTBOX_PK) },
  deleteAccountWebhooks: { params: [[SMALL_ACCOUNT]], indexes: both('webhooks_account') },
  // An event's fan-out: the webhooks watching its account and those watching every account.
  fanOut: {
    params: [['evt_x', 'api_token.created', '{}', '{}', NOW, NOW, SMALL_ACCOUNT, '%"api\\_token.created"%']],
    indexes: both('webhooks_watch'),
  },
  // The claim: the rows due, earliest first (a third of the outbox is due).
  dueOutbox: { params: [[NOW, 16]], indexes: both('webhook_outbox_due') },
  leaseOutbox: { params: [[NOW + MINUTE, 'c', webhookId(7), newId('evt', NOW)]], indexes: OUTBOX_PK },
  deleteClaimed: { params: [[webhookId(7), newId('evt', NOW), 'c']], indexes: OUTBOX_PK },
  retryClaimed: { params: [[2, NOW + MINUTE, webhookId(7), newId('evt', NOW), 'c']], indexes: OUTBOX_PK },
  deleteWebhookOutbox: { params: [[webhookId(7)]], indexes: OUTBOX_PK },
  deliveries: { params: [[webhookId(7), 31]], indexes: both('webhook_deliveries_webhook') },
  deliveriesBefore: {
    params: [[webhookId(7), newId('dlv', NOW - 10 * DAY), 31]],
    indexes: both('webhook_deliveries_webhook'),
  },
  // The log's retention, a batch of 1000 of the 3000 rows past the bound.
  pruneDeliveriesBoundary: { params: [[newId('dlv', NOW - 20 * DAY), 999]], indexes: DELIVERY_PK },
  pruneDeliveries: { params: [[newId('dlv', NOW - 25 * DAY)]], indexes: DELIVERY_PK },
  pruneDeliveriesRest: { params: [[newId('dlv', NOW - 29 * DAY)]], indexes: DELIVERY_PK },
  countWebhooks: {
    params: [[SMALL_ACCOUNT, SMALL_ACCOUNT]],
    indexes: and(both('webhooks_account'), ACCOUNT_PK),
    reads: both('webhooks_account'),
  },
  getWebhook: { params: [[webhookId(7), accountId(7)]], indexes: ONE_WEBHOOK },
  webhookById: { params: [[webhookId(7)]], indexes: WEBHOOK_PK },
  listWebhooks: {
    params: [[SMALL_ACCOUNT, Number.MIN_SAFE_INTEGER, '', 101]],
    indexes: both('webhooks_account'),
  },
  updateWebhook: {
    params: [[null, '["api_token.created"]', 1, 'renamed', null, 0, 0, 0, NOW, webhookId(7), accountId(7)]],
    indexes: ONE_WEBHOOK,
  },
  rotateWebhookSecret: { params: [[NOW + DAY, 'v1.new', NOW, webhookId(7), accountId(7)]], indexes: ONE_WEBHOOK },
  deleteWebhook: { params: [[webhookId(7), accountId(7)]], indexes: ONE_WEBHOOK },
  webhookDelivered: { params: [[webhookId(7)]], indexes: WEBHOOK_PK },
  webhookFailed: { params: [[NOW, webhookId(7)]], indexes: WEBHOOK_PK },
  disableFailing: { params: [[NOW, webhookId(7), NOW - DAY]], indexes: WEBHOOK_PK },
  // The expiry notices due: a range of (next_notice_at, id), a batch of 100 where thousands are due.
  dueNotices: { params: [[NOW, 100]], indexes: both('api_tokens_next_notice') },
  advanceNotice: {
    params: [[NOW + DAY, tokenId(PROBE), NOW - DAY]],
    indexes: and(TOKEN_PK, both('api_tokens_next_notice')),
  },
};

const INSERT = 'an INSERT: reads no row (a conflict is found by a UNIQUE index or the primary key)';
const BOOKKEEPING = 'the schema bookkeeping: one row per migration, read and written at start';

/** The statements that need no index, and why. */
const NO_INDEX: Record<string, string> = {
  insertToken: INSERT,
  insertAccount: INSERT,
  insertEvent: INSERT,
  insertOutbox: INSERT,
  insertDelivery: INSERT,
  insertWebhook: INSERT,
  markBootstrap: INSERT,
  applyCatalog: INSERT,
  heartbeat: INSERT,
  addUsage: `${INSERT}; its rows come from a VALUES list`,
  addRateCounts: `${INSERT}; its rows come from a VALUES list`,
  recordMigration: INSERT,
  count: 'counts every token by definition: tests and tools call it, never the server',
  listAccounts:
    "the accounts list's first words: its statements (accountListQuery) are planned below, for every" +
    ' combination of its filters, the first page and a page after a cursor',
  appliedVersions: BOOKKEEPING,
  schemaVersion: BOOKKEEPING,
  writeProbe: BOOKKEEPING,
};

interface StatementPlan {
  /** The indexes it reads ('PRIMARY KEY': SQLite's rowid). */
  indexes: string[];
  /**
   * What reads a table other than by a range of an index: a scan of the table, or a walk of
   * an index from one end (SQLite: SCAN; PostgreSQL: an index scan without an Index Cond,
   * as the inner side of a merge join).
   */
  scans: string[];
  /** Scans of a whole table, not even in an index's order (PostgreSQL's Seq Scan). */
  seqScans: string[];
  /** Whether it sorts more than about a page of rows (SQLite: any sort). */
  sorts: boolean;
  text: string;
}

/** The plan of any statement (SELECT, UPDATE, DELETE) on either engine. */
async function statementPlan(backend: Backend, db: BackendDb, sql: string, params: Param[]): Promise<StatementPlan> {
  if (backend.name === 'sqlite') {
    const rows = (await rawSql(backend, db, `EXPLAIN QUERY PLAN ${sql}`, params)) as { detail: string }[];
    const details = rows.map((r) => r.detail);
    // A subquery or VALUES list in FROM is read as a co-routine or materialised: its SCAN
    // is of rows already produced.
    const coroutines = details.flatMap((d) => /^(?:CO-ROUTINE|MATERIALIZE) (\S+)/.exec(d)?.[1] ?? []);
    const reads = details.filter((d) => {
      const m = /^(?:SCAN|SEARCH) (\S+)/.exec(d);
      return m !== null && !/CONSTANT ROWS?$/.test(d) && !coroutines.includes(m[1]!);
    });
    return {
      indexes: reads.map((d) => /USING (?:COVERING )?INDEX (\S+)/.exec(d)?.[1] ?? 'PRIMARY KEY'),
      scans: reads.filter((d) => d.startsWith('SCAN ')),
      seqScans: [],
      sorts: details.some((d) => d.includes('USE TEMP B-TREE')),
      text: details.join('\n'),
    };
  }
  const nodes = await postgresPlanNodes(backend, db, sql, params);
  return {
    indexes: nodes
      .filter((n) => ['Index Scan', 'Index Only Scan', 'Bitmap Index Scan'].includes(n['Node Type'] as string))
      .map((n) => n['Index Name'] as string),
    scans: nodes
      .filter((n) => ['Index Scan', 'Index Only Scan'].includes(n['Node Type'] as string) && !('Index Cond' in n))
      .map((n) => `${String(n['Node Type'])} of all of ${String(n['Index Name'])}`),
    seqScans: nodes
      .filter((n) => n['Node Type'] === 'Seq Scan')
      .map((n) => `Seq Scan on ${String(n['Relation Name'])}`),
    // PostgreSQL may sort the rows of an index range it expects to be about a page (with fewer
    // past the bound than the limit, or a few more): a cost choice that reads about what it
    // returns. A sort of more than twice the limit, or of rows no limit bounds, reads more.
    sorts: nodes.some((n) => {
      if (n['Node Type'] !== 'Sort' && n['Node Type'] !== 'Incremental Sort') return false;
      const limit = nodes.find((l) => l['Node Type'] === 'Limit');
      return limit === undefined || (n['Plan Rows'] as number) > 2 * (limit['Plan Rows'] as number);
    }),
    text: JSON.stringify(nodes[0], null, 1),
  };
}

describe('query plans: the statements covered', () => {
  it('every statement of the store is planned here, or named with why it needs no index', () => {
    const planned = Object.keys(CHECKS);
    const exempt = Object.keys(NO_INDEX);
    assert.deepEqual(
      planned.filter((k) => exempt.includes(k)),
      [],
      'planned or exempt, not both',
    );
    assert.deepEqual(
      Object.keys(SQL)
        .filter((k) => !planned.includes(k) && !exempt.includes(k))
        .sort(),
      [],
      'a statement of sql-store.ts that this file neither plans nor names',
    );
    assert.deepEqual(
      [...planned, ...exempt].filter((k) => !(k in SQL)),
      [],
      'names of statements the store no longer has',
    );
  });
});

for (const backend of backends()) {
  describe(`query plans on ${backend.name}`, () => {
    it('every combination of audit filters walks an index ending in id: no table scan, no sort', async (t) => {
      const db = await backend.fresh(t);
      const events = seedEvents();
      await insertRows(backend, db, AUDIT_EVENTS, events);
      const check = async (when: string) => {
        for (const filter of auditFilters(events)) {
          const { sql, params } = auditListQuery(filter);
          const p = await plan(backend, db, 'audit_events', sql, params);
          const why = `${when}, ${show(filter)}:\n${sql}\n${p.text}`;
          assert.ok(!p.tableScan, `no scan of the table: ${why}`);
          assert.ok(p.indexes.length > 0, `an index: ${why}`);
          const expected = expectedIndexes(backend, filter);
          assert.ok(
            p.indexes.every((name) => expected.includes(name)),
            `${expected.join(' or ')}: ${why}`,
          );
          if (backend.name === 'sqlite') {
            assert.ok(!p.sorts, `the index gives the order: ${why}`);
            // A range of the index, not all of it in order with a filter (only the unfiltered trail walks it whole).
            if (Object.keys(filter).length > 1) assert.match(p.text, /^SEARCH audit_events /, why);
          }
        }
      };
      if (backend.name === 'sqlite') await check('without statistics');
      await rawSql(backend, db, 'ANALYZE');
      await check('after ANALYZE');
    });

    it(
      'the accounts list, unfiltered and by each combination of filters, first page and after a cursor: ' +
        'an index, no scan, no sort',
      async (t) => {
        const db = await backend.fresh(t);
        const accounts = seedAccounts();
        await insertRows(backend, db, ACCOUNTS, accounts);
        const externalIdKey = backend.name === 'sqlite' ? 'sqlite_autoindex_accounts_2' : 'accounts_external_id_key';
        // Each filter with the indexes that may serve it: every account in creation order
        // (created_at, id); one status (status, created_at, id); one external_id (its UNIQUE
        // index, one row at most, which serves it with a status too).
        const filters: [AccountFilter, string[]][] = [
          [{}, ['accounts_created']],
          [{ status: 'suspended' }, ['accounts_status']],
          [{ externalId: 'ext-2077' }, [externalIdKey]],
          [{ status: 'active', externalId: 'ext-2077' }, [externalIdKey]],
        ];
        // The first page, and the page after account 2000 (created before the one external_id asked for).
        const cursor = accounts[2000]!;
        const pages = [{ limit: 101 }, { limit: 101, after: { createdAt: cursor.createdAt, id: cursor.id } }];
        const check = async (when: string) => {
          for (const [filter, expected] of filters) {
            for (const page of pages) {
              const { sql, params } = accountListQuery(filter, page);
              const p = await statementPlan(backend, db, sql, params);
              const which = page.after === undefined ? 'first page' : 'after a cursor';
              const why = `${when}, ${show(filter)} ${which}:\n${sql}\n${p.text}`;
              assert.ok(p.indexes.length > 0, `an index: ${why}`);
              assert.ok(
                p.indexes.every((name) => expected.includes(name)),
                `${expected.join(' or ')}: ${why}`,
              );
              assert.deepEqual(p.seqScans, [], `no scan of the table: ${why}`);
              assert.ok(!p.sorts, `the index gives the order: ${why}`);
              // Only the unfiltered first page walks an index from its start (and stops at the limit).
              if (Object.keys(filter).length > 0 || page.after !== undefined)
                assert.deepEqual(p.scans, [], `a range of the index, not a walk: ${why}`);
            }
          }
        };
        if (backend.name === 'sqlite') await check('without statistics');
        await rawSql(backend, db, 'ANALYZE');
        await check('after ANALYZE');
      },
    );

    it('every other statement of the store reads an index: no table scan, no sort', async (t) => {
      const db = await backend.fresh(t);
      await insertRows(backend, db, ACCOUNTS, seedAccounts());
      await insertRows(backend, db, API_TOKENS, seedTokens());
      await insertRows(backend, db, AUDIT_EVENTS, seedEvents(TOKENS));
      await insertRows(backend, db, CATALOG_REVISIONS, seedRevisions());
      await insertRows(backend, db, INSTANCES, seedInstances());
      await insertRows(backend, db, WEBHOOKS, seedWebhooks());
      await insertRows(backend, db, WEBHOOK_OUTBOX, seedOutbox());
      await insertRows(backend, db, WEBHOOK_DELIVERIES, seedDeliveries());
      // Each token's next expiry notice, as the store writes it: 7 days before its expiry.
      await rawSql(backend, db, 'UPDATE api_tokens SET next_notice_at = expires_at - ?', [7 * DAY]);
      await insertRows(
        backend,
        db,
        RATE_COUNTERS,
        Array.from({ length: 3000 }, (_, i) => i),
      );
      const store = db.open();
      try {
        await store.tokens.addUsage(seedUsage());
      } finally {
        await store.close();
      }
      const check = async (when: string) => {
        for (const [key, c] of Object.entries(CHECKS)) {
          const sql = SQL[key as keyof typeof SQL];
          const allowed = c.indexes[backend.name];
          for (const params of c.params) {
            const p = await statementPlan(backend, db, sql, params);
            const why = `${when}, ${key} ${JSON.stringify(params)}:\n${sql}\n${p.text}`;
            assert.ok(p.indexes.length > 0, `an index: ${why}`);
            assert.ok(
              p.indexes.every((name) => allowed.includes(name)),
              `${allowed.join(' or ')}: ${why}`,
            );
            for (const name of c.reads?.[backend.name] ?? []) assert.ok(p.indexes.includes(name), `${name}: ${why}`);
            assert.ok(!p.sorts, `the index gives the order: ${why}`);
            assert.deepEqual(p.seqScans, [], `no scan of a table: ${why}`);
            if (c.walks !== true) assert.deepEqual(p.scans, [], `a range of an index, not a walk: ${why}`);
            if (c.seeks !== undefined) assert.match(p.text, c.seeks[backend.name], `the range it seeks: ${why}`);
          }
        }
      };
      if (backend.name === 'sqlite') await check('without statistics');
      // PostgreSQL: as autovacuum leaves a table (statistics, and the visibility map that lets
      // an index answer a count alone).
      await rawSql(backend, db, backend.name === 'sqlite' ? 'ANALYZE' : 'VACUUM ANALYZE');
      await check('after ANALYZE');
    });
  });
}
