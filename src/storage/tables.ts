import { USAGE_OUTCOMES } from '../tokens/usage-reasons.js';

// The stored tables, each declared once: its columns, in order, and how each record
// field is written to and read from a column. Record types (types.ts), the column lists
// and placeholders of the SQL (sql-store.ts) and the row <-> record mapping all come
// from here, so a new column is one line here plus its migration (migrations.ts).

/** A bound value: the column types infracat uses (TEXT, INTEGER/BIGINT, NULL). */
export type Param = string | number | null;

/** How one record field is stored in one column. */
interface Column<V> {
  readonly column: string;
  write(value: V): Param;
  read(raw: unknown): V;
}

// BIGINT columns come back from PostgreSQL as strings (SQLite: numbers); epoch
// milliseconds fit a double exactly.
const toNumber = (raw: unknown): number => (typeof raw === 'number' ? raw : Number(raw));

const text = <V extends string = string>(column: string): Column<V> => ({
  column,
  write: (v) => v,
  read: (raw) => raw as V,
});
const textOrNull = <V extends string = string>(column: string): Column<V | null> => ({
  column,
  write: (v) => v,
  read: (raw) => (raw === null || raw === undefined ? null : (raw as V)),
});
const integer = (column: string): Column<number> => ({ column, write: (v) => v, read: toNumber });
const integerOrNull = (column: string): Column<number | null> => ({
  column,
  write: (v) => v,
  read: (raw) => (raw === null ? null : toNumber(raw)),
});
/** A JSON document in a TEXT column. */
const json = <V>(column: string): Column<V> => ({
  column,
  write: (v) => JSON.stringify(v),
  read: (raw) => JSON.parse(raw as string) as V,
});

/** A boolean as 1 or 0 in an INTEGER column (SQLite has no boolean type). */
const flag = (column: string): Column<boolean> => ({
  column,
  write: (v) => (v ? 1 : 0),
  read: (raw) => toNumber(raw) === 1,
});

/** A JSON document in a nullable TEXT column. */
const jsonOrNull = <V>(column: string): Column<V | null> => ({
  column,
  write: (v) => (v === null ? null : JSON.stringify(v)),
  read: (raw) => (raw === null || raw === undefined ? null : (JSON.parse(raw as string) as V)),
});

// Column<V>'s methods are bivariant in V, so every column fits Column<unknown>.
type Columns = Record<string, Column<unknown>>;
/** The record a table's columns describe. */
export type RecordOf<C extends Columns> = { -readonly [K in keyof C]: C[K] extends Column<infer V> ? V : never };

export interface Table<R> {
  readonly name: string;
  /** `a, b, c`: the column list of SELECT and INSERT. */
  readonly columns: string;
  /** `x.a, x.b, x.c`: the column list of a SELECT that joins this table as `alias`. */
  qualified(alias: string): string;
  /** `?, ?, ?`: one placeholder per column, for INSERT. */
  readonly placeholders: string;
  fromRow(row: Record<string, unknown>): R;
  /** The record's values in column order. */
  params(record: R): Param[];
}

/** The record type of a table. */
export type RecordOfTable<T> = T extends Table<infer R> ? R : never;

function table<C extends Columns>(name: string, fields: C): Table<RecordOf<C>> {
  const entries = Object.entries(fields) as [keyof C & string, Column<unknown>][];
  return {
    name,
    columns: entries.map(([, c]) => c.column).join(', '),
    qualified: (alias) => entries.map(([, c]) => `${alias}.${c.column}`).join(', '),
    placeholders: entries.map(() => '?').join(', '),
    fromRow(row) {
      const record: Record<string, unknown> = {};
      for (const [key, c] of entries) record[key] = c.read(row[c.column]);
      return record as RecordOf<C>;
    },
    params(record) {
      return entries.map(([key, c]) => c.write(record[key]));
    },
  };
}

/** api_tokens: one row per token. Only the SHA-256 of the secret is ever stored. */
export const API_TOKENS = table('api_tokens', {
  id: text('id'),
  name: text('name'),
  scopes: json<string[]>('scopes'),
  /** Lowercase hex SHA-256 of the secret. */
  secretHash: text('secret_hash'),
  createdAt: integer('created_at'),
  expiresAt: integerOrNull('expires_at'),
  lastUsedAt: integerOrNull('last_used_at'),
  /** The client address of the use last_used_at records (migration 15); null before the first use. */
  lastUsedIp: textOrNull('last_used_ip'),
  /** The account (tenant) the token belongs to (migration 4). */
  accountId: text('account_id'),
  /**
   * After a rotation with a grace period: the SHA-256 of the secret that was current,
   * which keeps working until previousExpiresAt (migration 5). Null otherwise.
   */
  previousSecretHash: textOrNull('previous_secret_hash'),
  previousExpiresAt: integerOrNull('previous_expires_at'),
  /**
   * The conditions of use (migration 14): the canonical CIDRs it may be used from (null:
   * anywhere), when it starts to work (null: at once), and whether it works at all.
   */
  allowedCidrs: jsonOrNull<string[]>('allowed_cidrs'),
  notBefore: integerOrNull('not_before'),
  enabled: flag('enabled'),
});

/**
 * token_usage: each token's uses counted per hour (migration 15), primary key (token_id,
 * hour). `hour` is the epoch milliseconds of the hour's start; then one count column per
 * usage outcome, in USAGE_OUTCOMES order: `verified`, then `refused_<reason>`. Rows are
 * added to (never replaced) by every instance's flush, and pruned after
 * TOKEN_USAGE_RETENTION_DAYS.
 */
export const TOKEN_USAGE = {
  name: 'token_usage',
  counts: USAGE_OUTCOMES.map((o) => (o === 'verified' ? o : `refused_${o}`)),
} as const;

/** `active` accounts' tokens work; a `suspended` account's tokens are refused everywhere. */
export type AccountStatus = 'active' | 'suspended';

/** accounts: one row per account (tenant); the operator account is created by migration 4. */
export const ACCOUNTS = table('accounts', {
  id: text('id'),
  name: text('name'),
  /** The platform's own id of its customer; unique when set (a UNIQUE index). */
  externalId: textOrNull('external_id'),
  status: text<AccountStatus>('status'),
  createdAt: integer('created_at'),
  /** Requests per rate-limit window for all the account's tokens together; null: RATE_LIMIT_ACCOUNT (migration 13). */
  rateLimit: integerOrNull('rate_limit'),
});

/** What a revision records besides its document (migration 6 added the last two). */
const REVISION_INFO = {
  version: integer('version'),
  appliedAt: integer('applied_at'),
  /** Who applied it: an audit actor ({type, id, name}); null before migration 6. */
  appliedBy: jsonOrNull<{ type: ActorType; id: string | null; name: string | null }>('applied_by'),
  /** What it changed, in one line (`2 added, 1 changed, 0 removed`); null before migration 6. */
  summary: textOrNull('summary'),
  /** What it changed, counted (catalog/diff.ts ChangeCounts); null before migration 12. */
  changes: jsonOrNull<RevisionChanges>('changes'),
};

type KindCounts = { images: number; plans: number; regions: number };
/** Settings changed, and catalog entries added, removed and changed per kind. */
export type RevisionChanges = { settings: number; added: KindCounts; removed: KindCounts; changed: KindCounts };

/** catalog_revisions: every applied catalog document; the highest version is live. */
export const CATALOG_REVISIONS = table('catalog_revisions', { ...REVISION_INFO, document: text('document') });

/** A revision without its document: what the history lists. */
export const CATALOG_REVISION_INFO = table('catalog_revisions', REVISION_INFO);

/** Who made a change: a token over the API, the operator's CLI, GitHub's secret scanning, or infracat itself. */
export type ActorType = 'api_token' | 'cli' | 'secret_scanning' | 'system';
/** What a change was made to (or, for `webhook`, what changed by itself: a webhook disabled after failing). */
export type TargetType = 'api_token' | 'account' | 'catalog' | 'webhook';
/** Which of a token's secrets acted: its current one, or its previous one in a grace period. */
export type ActorCredential = 'current' | 'previous';

/**
 * audit_events: one row per change to tokens, accounts and the catalog, written in the
 * same transaction as the change (migration 5). Never holds a secret.
 */
export const AUDIT_EVENTS = table('audit_events', {
  /** `evt_` + ULID: sorts by time, the order of the trail and its pagination cursor. */
  id: text('id'),
  /** Whose trail the event is in: the token's account, the account itself, or the operator's (catalog). */
  accountId: text('account_id'),
  action: text('action'),
  occurredAt: integer('occurred_at'),
  actorType: text<ActorType>('actor_type'),
  actorId: textOrNull('actor_id'),
  actorName: textOrNull('actor_name'),
  /**
   * The account the actor acted for: the calling token's (api_token), the operator's (cli);
   * null for infracat itself and secret scanning (migration 10). A customer reading its
   * trail sees an actor of another account as the operator, without what identifies it.
   */
  actorAccountId: textOrNull('actor_account_id'),
  /**
   * Which of the acting token's secrets made the change, `current` or `previous` (migration 9);
   * null when the actor is not a token, and on events written before migration 9.
   */
  actorCredential: textOrNull<ActorCredential>('actor_credential'),
  targetType: text<TargetType>('target_type'),
  targetId: textOrNull('target_id'),
  targetName: textOrNull('target_name'),
  ip: textOrNull('ip'),
  userAgent: textOrNull('user_agent'),
  requestId: textOrNull('request_id'),
  /** What else the event says (changed fields, grace period, a leak's URL), as a JSON object. */
  details: json<Record<string, unknown>>('details'),
});

/**
 * instances: one row per running infracat process, kept fresh by its heartbeat
 * (migration 7). Live while expires_at is ahead of the clock; each instance writes its own
 * expiry, so instances with different heartbeat settings judge each other correctly.
 */
export const INSTANCES = table('instances', {
  /** Random per process (src/fleet/registry.ts). */
  id: text('id'),
  /** Host name and process id, for an operator reading the table. */
  host: text('host'),
  pid: integer('pid'),
  startedAt: integer('started_at'),
  heartbeatAt: integer('heartbeat_at'),
  expiresAt: integer('expires_at'),
});

/**
 * webhooks: one row per webhook endpoint of an account (migration 17). The signing
 * secrets are sealed (src/webhooks/secrets.ts: AES-256-GCM under WEBHOOK_ENCRYPTION_KEYS),
 * never stored in plaintext.
 */
export const WEBHOOKS = table('webhooks', {
  /** `whk_` + ULID. */
  id: text('id'),
  /** The account the webhook belongs to. */
  accountId: text('account_id'),
  /**
   * Whose events it receives: its own account's id, or `*` for every account's (an operator
   * account's webhook with all_accounts). The fan-out of an event reads this column alone.
   */
  watch: text('watch'),
  url: text('url'),
  /** The event types it subscribes to, a JSON array of strings. */
  events: json<string[]>('events'),
  description: textOrNull('description'),
  enabled: flag('enabled'),
  /** The sealed signing secret. */
  secret: text('secret'),
  /** After a rotation: the sealed secret that was current, which also signs until previousSecretExpiresAt. */
  previousSecret: textOrNull('previous_secret'),
  previousSecretExpiresAt: integerOrNull('previous_secret_expires_at'),
  createdAt: integer('created_at'),
  updatedAt: integer('updated_at'),
  /** Since when every delivery has failed (null: the last one succeeded, or none failed yet). */
  failingSince: integerOrNull('failing_since'),
  /** Why infracat disabled it by itself (`failing`); null when enabled, or disabled by a person. */
  disabledReason: textOrNull('disabled_reason'),
});

/**
 * webhook_outbox: one row per event still to deliver to one webhook (migration 17), written
 * in the transaction of the change it tells of; deleted once delivered or given up.
 * `next_attempt_at` is when it is due, and while an instance delivers it, the end of that
 * instance's lease (a crashed instance's claim falls due again when it passes).
 */
export const WEBHOOK_OUTBOX = table('webhook_outbox', {
  webhookId: text('webhook_id'),
  /** The event's id (`evt_` + ULID): the `webhook-id` header of every attempt. */
  eventId: text('event_id'),
  eventType: text('event_type'),
  /** The exact body every attempt sends (`{type, timestamp, data}`), never holding a secret. */
  body: text('body'),
  createdAt: integer('created_at'),
  /** Attempts made so far. */
  attempts: integer('attempts'),
  nextAttemptAt: integer('next_attempt_at'),
  /** The claim of the instance delivering it now (random per claim); null when unclaimed. */
  claim: textOrNull('claim'),
});

/** webhook_deliveries: the delivery log, one row per attempt (migration 17), kept WEBHOOK_DELIVERY_RETENTION_DAYS. */
export const WEBHOOK_DELIVERIES = table('webhook_deliveries', {
  /** `dlv_` + the ULID of attemptedAt: newest first by id, and the page cursor. */
  id: text('id'),
  webhookId: text('webhook_id'),
  eventId: text('event_id'),
  eventType: text('event_type'),
  /** 1 for the first attempt. */
  attempt: integer('attempt'),
  attemptedAt: integer('attempted_at'),
  /** The receiver's status code; null when no answer came (refused target, connection error, timeout). */
  statusCode: integerOrNull('status_code'),
  durationMs: integer('duration_ms'),
  /** Why it failed; null when delivered. */
  error: textOrNull('error'),
  /** When the next attempt is due; null when none follows (delivered, or given up). */
  nextAttemptAt: integerOrNull('next_attempt_at'),
});
