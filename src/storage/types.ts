// The narrow storage interface. Domain code and routes see only this; sql-store.ts
// implements it once over each backend's driver (sqlite/, postgres/), and every backend
// passes test/storage/contract.test.ts.
//
// Conventions both backends keep:
// - Timestamps are integer milliseconds since the epoch (UTC); formatting is the API's job.
// - A method that resolves has made its write durable (SQLite synchronous=FULL,
//   PostgreSQL synchronous commit): the caller may acknowledge it to a client.
// - Connectivity failures reject with StorageUnavailableError, so the HTTP layer can
//   answer 503 + Retry-After instead of 500.
import type {
  ACCOUNTS,
  API_TOKENS,
  AUDIT_EVENTS,
  AccountStatus,
  CATALOG_REVISIONS,
  CATALOG_REVISION_INFO,
  INSTANCES,
  RecordOfTable,
  WEBHOOK_DELIVERIES,
  WEBHOOK_OUTBOX,
  WEBHOOKS,
} from './tables.js';

export type { AccountStatus, ActorCredential, ActorType, TargetType } from './tables.js';

/**
 * One audit event (its columns: tables.ts). Every mutation below takes the event that
 * records it and writes it in the same transaction as the change, only when the change
 * happened: a crash never leaves a change without its event, nor an event without its change.
 */
export type AuditEventRecord = RecordOfTable<typeof AUDIT_EVENTS>;

/** A stored API token (its columns: tables.ts). Only the SHA-256 of the secret is ever stored. */
export type TokenRecord = RecordOfTable<typeof API_TOKENS>;

/**
 * A token as verification reads it: with its account's status, from the same row read
 * (a join), so the status travels with the cached entry and costs no extra statement.
 */
export interface TokenWithAccount extends TokenRecord {
  accountStatus: AccountStatus;
  /** The account's own rate limit (null: the default), read and cached with the status. */
  accountRateLimit: number | null;
}

/** A stored account (tenant) (its columns: tables.ts). */
export type AccountRecord = RecordOfTable<typeof ACCOUNTS>;

export type CreateAccountResult = 'created' | 'external_id_taken';

export interface AccountFilter {
  status?: AccountStatus | undefined;
  externalId?: string | undefined;
}

/**
 * A place in a list kept oldest first (created_at, then id): the last row of a page.
 * Keyset pagination: the next page is the rows after it, so rows added meanwhile never
 * shift a page (no row skipped, none shown twice), and each page is one index range.
 */
export interface ListPosition {
  createdAt: number;
  id: string;
}

/** One page of a list: the rows after `after` (from the start when absent), at most `limit`. */
export interface PageRequest<P = ListPosition> {
  after?: P | undefined;
  limit: number;
}

/**
 * A place in a token list kept by last use (the most recent first, never-used tokens last,
 * ties oldest first by id): the last row of a page, its last_used_at (null: never used)
 * and id. A token's last_used_at only ever moves later, so a token used during a walk
 * moves ahead of the pages still to come: it is never shown twice.
 */
export interface LastUsePosition {
  lastUsedAt: number | null;
  id: string;
}

export interface AccountStore {
  /** Inserts the account; 'external_id_taken' (nothing stored) when its external_id is already used. */
  create(account: AccountRecord, event: AuditEventRecord): Promise<CreateAccountResult>;
  get(id: string): Promise<AccountRecord | null>;
  /** Accounts matching every given filter, oldest first (created_at, then id): one page. */
  list(filter: AccountFilter, page: PageRequest): Promise<AccountRecord[]>;
  /** Sets the given fields; resolves to the account as it is afterwards, or null when no such id. */
  update(
    id: string,
    changes: { name?: string | undefined; status?: AccountStatus | undefined; rateLimit?: number | null | undefined },
    event: AuditEventRecord,
  ): Promise<AccountRecord | null>;
  /**
   * Deletes the account and every token of it, in one transaction ordered with token
   * creation (no token can be created into it meanwhile); false when no such id.
   */
  delete(id: string, event: AuditEventRecord): Promise<boolean>;
}

export interface LastUsed {
  id: string;
  at: number;
  /** The client address of the use; null or absent when not known. */
  ip?: string | null;
}

/**
 * One token's uses in one hour (a token_usage row, or what an instance adds to it): `hour`
 * is the epoch milliseconds of the hour's start; `counts` one per outcome, in
 * USAGE_OUTCOMES order (src/tokens/usage-reasons.ts).
 */
export interface UsageCell {
  tokenId: string;
  hour: number;
  counts: number[];
}

/** limit_reached: the account holds maxLive live tokens; no_account: the account does not exist. */
export type CreateTokenResult = 'created' | 'limit_reached' | 'no_account';

/**
 * The bound on the tokens one account keeps stored, live and expired alike: when an insert
 * would make the account hold more than `max`, the account's tokens that expired (at
 * `now`) the earliest are deleted first, each with its event (`eventFor`).
 */
export interface StoredBound {
  max: number;
  eventFor: (token: TokenRecord) => AuditEventRecord;
}

/** The fields a token update sets (absent: kept); null clears a condition. */
export interface TokenChanges {
  name?: string | undefined;
  scopes?: readonly string[] | undefined;
  allowedCidrs?: readonly string[] | null | undefined;
  notBefore?: number | null | undefined;
  enabled?: boolean | undefined;
}

export interface TokenStore {
  /**
   * Inserts the token unless its account does not exist or already holds `maxLive` live
   * (unexpired at `now`) tokens. With `stored`, the account never holds more than
   * `stored.max` tokens afterwards: the earliest-expired ones make room (limit_reached,
   * nothing changed, when too few have expired). The checks, the deletes and the insert
   * are one atomic step, also across instances (and ordered with deleting the account).
   */
  create(
    token: TokenRecord,
    limits: { maxLive: number; now: number; stored?: StoredBound | undefined },
    event: AuditEventRecord,
  ): Promise<CreateTokenResult>;
  /**
   * The first-start bootstrap, decided once per database, ever. If it was never
   * decided: records that it now is and, when `token` is given and the store holds no
   * token at all, inserts it (null: the operator turned the bootstrap token off).
   * Returns whether `token` was inserted. Once decided (or when migration 3 found a
   * database already in use) it returns false and changes nothing, even after every
   * token is deleted. One atomic step: exactly one of several racing instances decides.
   */
  bootstrap(token: TokenRecord | null, event: AuditEventRecord | null): Promise<boolean>;
  /**
   * The account's tokens that never expire or expire after `expiredAfter` (callers pass
   * now minus the retention of expired tokens), oldest first (created_at, then id): one page.
   */
  list(accountId: string, expiredAfter: number, page: PageRequest): Promise<TokenRecord[]>;
  /**
   * The same tokens as list(), by last use: the most recently used first, never-used ones
   * last, ties oldest first (by id): one page.
   */
  listByLastUse(accountId: string, expiredAfter: number, page: PageRequest<LastUsePosition>): Promise<TokenRecord[]>;
  /**
   * Deletes tokens that expired at or before `before`, each with its event (`eventFor`),
   * at most `limit` per call; resolves to how many.
   */
  purgeExpired(before: number, limit: number, eventFor: (token: TokenRecord) => AuditEventRecord): Promise<number>;
  /** The token of that id in that account; null when there is none (in that account). */
  get(accountId: string, id: string): Promise<TokenRecord | null>;
  /**
   * The token whose current or previous (grace-period) secret has that hash, with its
   * account's status (one statement: a join); any account. Which one matched is for the
   * caller to compare (`secretHash` or `previousSecretHash`).
   */
  findByHash(secretHash: string): Promise<TokenWithAccount | null>;
  /** Deletes the token of that id in that account; false when there is none (in that account). */
  delete(accountId: string, id: string, event: AuditEventRecord): Promise<boolean>;
  /**
   * Gives the token a new secret. With `previousExpiresAt` the secret current until now
   * becomes the previous one, valid until then (replacing any earlier previous secret:
   * at most two live secrets); with null the previous secret is cleared. `expiresAt`
   * becomes the token's expiry. One atomic step: concurrent rotations each move the
   * then-current secret. Resolves to the token as it is afterwards, or null when there
   * is none (in that account).
   */
  rotate(
    accountId: string,
    id: string,
    change: { secretHash: string; previousExpiresAt: number | null; expiresAt: number | null },
    event: AuditEventRecord,
  ): Promise<TokenRecord | null>;
  /** Sets the given fields; resolves to the token as it is afterwards, or null when there is none (in that account). */
  update(accountId: string, id: string, changes: TokenChanges, event: AuditEventRecord): Promise<TokenRecord | null>;
  /**
   * Ends a grace period at once: clears the token's previous secret if its hash is still
   * `previousSecretHash`; false otherwise (rotated again, or no such token).
   */
  endGrace(accountId: string, id: string, previousSecretHash: string, event: AuditEventRecord): Promise<boolean>;
  /**
   * Sets last_used_at = max(stored, at) for each entry, and last_used_ip to the address of
   * that use; unknown ids are ignored.
   */
  touch(entries: readonly LastUsed[]): Promise<void>;
  /**
   * Adds each cell's counts to its (token, hour) row, creating it when absent: additive, so
   * the flushes of every instance sum. At most one cell per (token, hour) in a call.
   */
  addUsage(cells: readonly UsageCell[]): Promise<void>;
  /** A token's usage rows of the hours from `from` (inclusive) to `to` (exclusive), oldest first. */
  usage(tokenId: string, from: number, to: number): Promise<UsageCell[]>;
  /**
   * Deletes usage rows of hours before `before`, the oldest first, at most `limit` per
   * call; resolves to how many.
   */
  pruneUsage(before: number, limit: number): Promise<number>;
  /** Number of stored tokens, expired included. */
  count(): Promise<number>;
  /**
   * The expiry notices due at `now`, at most `limit`, earliest first: for each token whose
   * next notice is due, `decide` says its next notice time and the message (if any); the
   * new time is written and the message put in the outbox in one transaction, only if no
   * other instance handled that notice meanwhile (each notice is sent once). Resolves to
   * how many due tokens it read.
   */
  notices(now: number, limit: number, decide: (token: NoticeDue) => NoticeDecision): Promise<number>;
}

/** One applied catalog: the serialised catalog document, its version, who and what (tables.ts). */
export type CatalogRevision = RecordOfTable<typeof CATALOG_REVISIONS>;
/** A revision without its document. */
export type CatalogRevisionInfo = RecordOfTable<typeof CATALOG_REVISION_INFO>;

export interface CatalogStore {
  /** Highest applied version, 0 when no catalog was ever applied. Cheap: polled. */
  latestVersion(): Promise<number>;
  /** The live (highest) revision, or null. */
  current(): Promise<CatalogRevision | null>;
  /** One revision with its document, or null. */
  revision(version: number): Promise<CatalogRevision | null>;
  /** Revisions without documents, newest first: at most `limit`, versions below `before` when given. */
  revisions(limit: number, before?: number): Promise<CatalogRevisionInfo[]>;
  /**
   * Stores `revision` as version `expectedVersion + 1` (its own `version` is ignored), only
   * if that is still the next version (optimistic concurrency: false when another apply
   * got there first), with its audit event in the same transaction.
   */
  apply(revision: Omit<CatalogRevision, 'version'>, expectedVersion: number, event: AuditEventRecord): Promise<boolean>;
}

export interface AuditFilter {
  /** Only this account's trail; undefined: every account's (the operator's view). */
  accountId?: string | undefined;
  action?: string | undefined;
  targetId?: string | undefined;
  /**
   * occurred_at >= since (ms), read from the id: every event's id is `evt_` + the ULID of
   * its occurredAt (src/tokens/ids.ts), so the filter is an id range an index serves.
   */
  since?: number | undefined;
  /** occurred_at < until (ms), read from the id like since. */
  until?: number | undefined;
  /** Only events older than this event id (the pagination cursor). */
  before?: string | undefined;
  /** At most this many events. */
  limit: number;
}

export interface AuditStore {
  /** Events matching every given filter, newest first (by id, a ULID: time order). */
  list(filter: AuditFilter): Promise<AuditEventRecord[]>;
  /**
   * Deletes events that occurred before `before`, the oldest first, at most `limit` per
   * call (a backlog is worked off in short transactions); resolves to how many.
   */
  prune(before: number, limit: number): Promise<number>;
}

/** One running instance's row (its columns: tables.ts). */
export type InstanceRecord = RecordOfTable<typeof INSTANCES>;

/** The live instances as one instance sees them after its heartbeat. */
export interface LiveInstances {
  /** Instances whose expires_at is after the heartbeat's time, the caller included. */
  count: number;
  /** How many of them have an id that sorts before the caller's (0 .. count-1). */
  rank: number;
}

/**
 * The registry of running instances (migration 7): each instance refreshes its own row;
 * the others' rows say how many share the fleet's work (the rate limits).
 */
export interface InstanceStore {
  /**
   * Inserts the instance's row, or refreshes heartbeat_at and expires_at of the row it
   * already has (host, pid and started_at stay as first written); then counts the
   * instances live at `instance.heartbeatAt`.
   */
  heartbeat(instance: InstanceRecord): Promise<LiveInstances>;
  /** Deletes the instance's row (a graceful stop); false when it had none. */
  leave(id: string): Promise<boolean>;
  /** Deletes the rows that expired before `before` (instances that died without leaving); resolves to how many. */
  prune(before: number): Promise<number>;
}

/** What one instance counted for a key in one window, or (returned) the fleet's total for it. */
export interface RateCount {
  /** The limited subject: `t:` + a token id, `c:` + an account id, `a:` + a client address. */
  key: string;
  /** When the key's window ends (epoch ms): the same on every instance (aligned windows). */
  windowEnd: number;
  n: number;
}

/**
 * The fleet's shared rate-limit counters (migration 13): each instance adds what it
 * counted since its last call and learns the fleet's totals back (src/fleet/counts.ts).
 */
export interface RateCounterStore {
  /**
   * Adds each count to its (key, window) counter, creating it at that count; resolves to
   * the totals afterwards, one per count given (in no particular order). Atomic per
   * counter: concurrent adds from several instances all count.
   */
  add(counts: readonly RateCount[]): Promise<RateCount[]>;
  /** Deletes at most `limit` counters of windows that ended before `before`; resolves to how many. */
  prune(before: number, limit: number): Promise<number>;
}

export interface MigrationReport {
  /** Versions applied by this call (empty when the schema was current). */
  applied: number[];
  /** Schema version after the call. */
  version: number;
}

/**
 * A change other instances may hold stale in memory, announced by the store in the
 * transaction that makes it (see changes.ts): a token's secrets, scopes or existence; an
 * account's status or existence; a newly applied catalog; or `resync`: something changed,
 * what is not known (SQLite, a malformed message, or after a gap in listening).
 */
export type Change =
  | { kind: 'token'; accountId: string; id: string }
  | { kind: 'account'; accountId: string }
  | { kind: 'catalog'; version: number }
  | { kind: 'resync' };

export interface ChangeHandlers {
  /** A change made by any instance (this one's own included). */
  change(change: Change): void;
  /** Listening (again): changes arrive from now on. Preceded by no change; followed by a resync. */
  connected?(): void;
  /** Not listening for now (it retries by itself); changes are missed until connected again. */
  disconnected?(err: unknown): void;
}

/** A running watch: stop() ends it and releases its connection. */
export interface ChangeWatch {
  stop(): Promise<void>;
}

/** A stored webhook (its columns: tables.ts); its secrets sealed. */
export type WebhookRecord = RecordOfTable<typeof WEBHOOKS>;
/** One event still to deliver to one webhook (tables.ts). */
export type OutboxRecord = RecordOfTable<typeof WEBHOOK_OUTBOX>;
/** One attempt of the delivery log (tables.ts). */
export type DeliveryRecord = RecordOfTable<typeof WEBHOOK_DELIVERIES>;

/**
 * An event to deliver to the webhooks that subscribe to it: what the outbox rows of one
 * event are made of. Written by the store in the transaction of the change it tells of
 * (an audit event's: src/webhooks/messages.ts says which, and what), or of the expiry
 * notice that marks it sent.
 */
export interface WebhookMessage {
  /** `evt_` + ULID: every attempt's `webhook-id`. */
  id: string;
  type: string;
  /** The account the event is about: its own webhooks receive `body`. */
  accountId: string;
  occurredAt: number;
  /** The body as the account's own webhooks receive it. */
  body: string;
  /** The body as the webhooks watching every account receive it (the operator's view). */
  operatorBody: string;
}

/** The fields a webhook update sets (absent: kept). */
export interface WebhookChanges {
  url?: string | undefined;
  events?: readonly string[] | undefined;
  /** null clears it. */
  description?: string | null | undefined;
  watch?: string | undefined;
  /** Enabling clears failing_since and disabled_reason; disabling drops the webhook's pending deliveries. */
  enabled?: boolean | undefined;
  updatedAt: number;
}

export type CreateWebhookResult = 'created' | 'limit_reached' | 'no_account';

/** An outbox row claimed for delivery, with its webhook as it is now (null: deleted meanwhile). */
export interface ClaimedDelivery {
  outbox: OutboxRecord;
  webhook: WebhookRecord | null;
}

/** What became of one attempt (WebhookStore.finish). */
export type AttemptOutcome =
  /** Delivered: the outbox row goes, the webhook is no longer failing. */
  | { kind: 'delivered' }
  /** Failed, tried again at `retryAt`. */
  | { kind: 'retry'; retryAt: number }
  /** Failed for the last time (the event's retry window is over, or its webhook is gone or disabled): the row goes. */
  | { kind: 'given_up' };

export interface WebhookStore {
  /**
   * Inserts the webhook unless its account does not exist or already holds `max`
   * webhooks; one atomic step, ordered with other creates and with deleting the account.
   */
  create(webhook: WebhookRecord, max: number, event: AuditEventRecord): Promise<CreateWebhookResult>;
  /** The webhook of that id in that account; null when there is none (in that account). */
  get(accountId: string, id: string): Promise<WebhookRecord | null>;
  /** The account's webhooks, oldest first (created_at, then id): one page. */
  list(accountId: string, page: PageRequest): Promise<WebhookRecord[]>;
  /** Sets the given fields; the webhook as it is afterwards, or null when there is none (in that account). */
  update(
    accountId: string,
    id: string,
    changes: WebhookChanges,
    event: AuditEventRecord,
  ): Promise<WebhookRecord | null>;
  /**
   * Gives the webhook a new sealed secret; the one current until now becomes the previous
   * one, signing too until `previousExpiresAt`. The webhook afterwards, or null.
   */
  rotateSecret(
    accountId: string,
    id: string,
    change: { secret: string; previousExpiresAt: number; updatedAt: number },
    event: AuditEventRecord,
  ): Promise<WebhookRecord | null>;
  /** Deletes the webhook and what it still had to deliver; false when there is none (in that account). */
  delete(accountId: string, id: string, event: AuditEventRecord): Promise<boolean>;
  /** Puts `message` in the outbox of that one webhook (a test event), due at its occurredAt. */
  enqueue(webhookId: string, message: WebhookMessage): Promise<void>;
  /**
   * Claims at most `limit` outbox rows due at `now`, for this instance: each becomes due
   * again at `leaseUntil` (when this instance dies before finishing it) and carries `claim`.
   * Rows another instance is claiming at the same moment are skipped, never waited for.
   */
  claim(now: number, leaseUntil: number, claim: string, limit: number): Promise<ClaimedDelivery[]>;
  /**
   * Records one attempt in the delivery log and what became of it, in one transaction: the
   * outbox row (only while it still carries `claim`) is deleted or rescheduled; the
   * webhook's failing_since is cleared or set. On a failure, a webhook failing since
   * `disableFailingSince` or earlier is disabled, its outbox emptied and `disabled` recorded.
   * Resolves to whether it disabled the webhook.
   */
  finish(
    row: OutboxRecord,
    claim: string,
    attempt: DeliveryRecord,
    outcome: AttemptOutcome,
    disable: { failingSince: number; event: AuditEventRecord },
  ): Promise<boolean>;
  /** A webhook's delivery log, newest first: at most `limit` attempts, before the id `before` when given. */
  deliveries(webhookId: string, limit: number, before?: string): Promise<DeliveryRecord[]>;
  /** Deletes delivery log rows of attempts before `before`, the oldest first, at most `limit`; resolves to how many. */
  pruneDeliveries(before: number, limit: number): Promise<number>;
  /** Outbox rows due at `now` (tests and the operator: what is pending). */
  pending(now: number, limit: number): Promise<OutboxRecord[]>;
}

/** A token whose next expiry notice is due, as the notice scan reads it. */
export interface NoticeDue {
  id: string;
  name: string;
  accountId: string;
  expiresAt: number | null;
  nextNoticeAt: number;
}

/** What to do about a due notice: the token's next notice time (null: none left), and the message to send (if any). */
export interface NoticeDecision {
  nextNoticeAt: number | null;
  message: WebhookMessage | null;
}

export interface Store {
  /**
   * Short name of the engine ('sqlite', 'postgres'), for /readyz and logs. Code outside
   * src/storage/ never branches on it: every backend behaves as this interface says.
   */
  readonly backend: string;
  /** Human description for logs, with any password redacted. */
  readonly description: string;
  /**
   * Applies pending migrations (only up to `upTo`, when given: tests build an older
   * release's schema with it). Safe when several instances call it at once.
   */
  migrate(options?: { upTo?: number }): Promise<MigrationReport>;
  /** Highest applied schema version; 0 when this database holds no infracat schema. Writes nothing. */
  schemaVersion(): Promise<number>;
  /**
   * Writes a consistent copy of the whole database to `file` (a new file; never
   * overwrites) while the database stays in use, and checks the copy. Backends that are
   * backed up by their own tools reject with NotSupportedError saying which.
   */
  backup(file: string): Promise<BackupReport>;
  /**
   * Resolves when storage answers and looks writable (a cheap check: no write), else
   * rejects with StorageUnavailableError. Readiness probes call it.
   */
  ping(): Promise<void>;
  /** Makes one harmless real write; rejects (StorageUnavailableError) when storage refuses writes. */
  checkWritable(): Promise<void>;
  /** Waits for in-flight work and releases connections/handles. Idempotent. */
  close(): Promise<void>;
  /**
   * Tells `handlers` of every change made to this database by any instance or command,
   * from now on, within about a second (PostgreSQL: LISTEN on its own connection, which
   * reconnects with backoff; SQLite: a cheap check of the file's change counter). Whenever
   * changes may have been missed (at start, after a reconnect) it sends a resync.
   */
  watch(handlers: ChangeHandlers): ChangeWatch;
  readonly tokens: TokenStore;
  readonly accounts: AccountStore;
  readonly catalog: CatalogStore;
  readonly audit: AuditStore;
  readonly instances: InstanceStore;
  readonly rateCounters: RateCounterStore;
  readonly webhooks: WebhookStore;
  /**
   * Statements this store sent to the database since it opened (metrics; proves what
   * never touches storage): each statement counts one, inside a transaction or not,
   * readiness probes included; transaction control (BEGIN, COMMIT, ROLLBACK, the lock)
   * does not. So the same calls count the same on every backend.
   */
  readonly stats: { queries: number };
}

export interface BackupReport {
  /** Absolute path of the written copy. */
  file: string;
  bytes: number;
}

/** The operation is not one this backend offers (the message says what to use instead). */
export class NotSupportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotSupportedError';
  }
}

/** The configured location holds no infracat database (and the caller may not create one). */
export class DatabaseMissingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseMissingError';
  }
}

export class StorageUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageUnavailableError';
  }
}

/**
 * addUsage failed part-way: the first `added` cells (in the order given) are stored, the
 * rest are not, so a retry sends only the rest and counts nothing twice. The cause is the
 * storage error (a StorageUnavailableError when storage was unreachable).
 */
export class UsageWriteError extends Error {
  constructor(
    readonly added: number,
    cause: unknown,
  ) {
    super(`adding token usage failed after ${added} cells`, { cause });
    this.name = 'UsageWriteError';
  }
}
