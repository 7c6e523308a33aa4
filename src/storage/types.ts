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
import type { ACCOUNTS, API_TOKENS, AccountStatus, CATALOG_REVISIONS, RecordOfTable } from './tables.js';

export type { AccountStatus } from './tables.js';

/** A stored API token (its columns: tables.ts). Only the SHA-256 of the secret is ever stored. */
export type TokenRecord = RecordOfTable<typeof API_TOKENS>;

/**
 * A token as verification reads it: with its account's status, from the same row read
 * (a join), so the status travels with the cached entry and costs no extra statement.
 */
export interface TokenWithAccount extends TokenRecord {
  accountStatus: AccountStatus;
}

/** A stored account (tenant) (its columns: tables.ts). */
export type AccountRecord = RecordOfTable<typeof ACCOUNTS>;

export type CreateAccountResult = 'created' | 'external_id_taken';

export interface AccountFilter {
  status?: AccountStatus | undefined;
  externalId?: string | undefined;
}

export interface AccountStore {
  /** Inserts the account; 'external_id_taken' (nothing stored) when its external_id is already used. */
  create(account: AccountRecord): Promise<CreateAccountResult>;
  get(id: string): Promise<AccountRecord | null>;
  /** Accounts matching every given filter, oldest first (created_at, then id). */
  list(filter: AccountFilter): Promise<AccountRecord[]>;
  /** Sets the given fields; resolves to the account as it is afterwards, or null when no such id. */
  update(
    id: string,
    changes: { name?: string | undefined; status?: AccountStatus | undefined },
  ): Promise<AccountRecord | null>;
  /**
   * Deletes the account and every token of it, in one transaction ordered with token
   * creation (no token can be created into it meanwhile); false when no such id.
   */
  delete(id: string): Promise<boolean>;
}

export interface LastUsed {
  id: string;
  at: number;
}

/** limit_reached: the account holds maxLive live tokens; no_account: the account does not exist. */
export type CreateTokenResult = 'created' | 'limit_reached' | 'no_account';

export interface TokenStore {
  /**
   * Inserts the token unless its account does not exist or already holds `maxLive` live
   * (unexpired at `now`) tokens. The check and the insert are one atomic step, also
   * across instances (and ordered with deleting the account).
   */
  create(token: TokenRecord, limits: { maxLive: number; now: number }): Promise<CreateTokenResult>;
  /**
   * The first-start bootstrap, decided once per database, ever. If it was never
   * decided: records that it now is and, when `token` is given and the store holds no
   * token at all, inserts it (null: the operator turned the bootstrap token off).
   * Returns whether `token` was inserted. Once decided (or when migration 3 found a
   * database already in use) it returns false and changes nothing, even after every
   * token is deleted. One atomic step: exactly one of several racing instances decides.
   */
  bootstrap(token: TokenRecord | null): Promise<boolean>;
  /**
   * The account's tokens that never expire or expire after `expiredAfter` (callers pass
   * now minus the retention of expired tokens), oldest first (created_at, then id).
   */
  list(accountId: string, expiredAfter: number): Promise<TokenRecord[]>;
  /** Deletes tokens that expired at or before `before`; resolves to how many. */
  purgeExpired(before: number): Promise<number>;
  /** The token of that id in that account; null when there is none (in that account). */
  get(accountId: string, id: string): Promise<TokenRecord | null>;
  /** The token of that hash with its account's status (one statement: a join); any account. */
  findByHash(secretHash: string): Promise<TokenWithAccount | null>;
  /** Deletes the token of that id in that account; false when there is none (in that account). */
  delete(accountId: string, id: string): Promise<boolean>;
  /** Sets last_used_at = max(stored, at) for each entry; unknown ids are ignored. */
  touch(entries: readonly LastUsed[]): Promise<void>;
  /** Number of stored tokens, expired included. */
  count(): Promise<number>;
}

/** One applied catalog: the serialised catalog document and its version (tables.ts). */
export type CatalogRevision = RecordOfTable<typeof CATALOG_REVISIONS>;

export interface CatalogStore {
  /** Highest applied version, 0 when no catalog was ever applied. Cheap: polled. */
  latestVersion(): Promise<number>;
  /** The live (highest) revision, or null. */
  current(): Promise<CatalogRevision | null>;
  /**
   * Stores `document` as version `expectedVersion + 1`, only if that is still the next
   * version (optimistic concurrency: false when another apply got there first).
   */
  apply(document: string, expectedVersion: number, now: number): Promise<boolean>;
}

export interface MigrationReport {
  /** Versions applied by this call (empty when the schema was current). */
  applied: number[];
  /** Schema version after the call. */
  version: number;
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
  readonly tokens: TokenStore;
  readonly accounts: AccountStore;
  readonly catalog: CatalogStore;
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
