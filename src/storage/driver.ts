// What a backend offers the shared store (sql-store.ts): three query methods and a
// write-locked transaction, plus what truly differs between engines (opening, error
// translation, readiness, backup, finding a table). Every SQL statement of infracat is
// in the shared store or migrations.ts, written once with `?` placeholders; a backend
// only runs it. A driver rejects with StorageUnavailableError when the database cannot
// serve right now (locked, unreachable, read-only, closed), never with its own errors.
import type { Param } from './tables.js';
import type { BackupReport, ChangeHandlers, ChangeWatch } from './types.js';

/** The three query methods; `params` fill the `?` placeholders in order. */
export interface Queries {
  /** Runs a statement that returns no rows; resolves to the number of rows it changed. */
  run(sql: string, params?: readonly Param[]): Promise<number>;
  /** The first row, or undefined. */
  get<R>(sql: string, params?: readonly Param[]): Promise<R | undefined>;
  all<R>(sql: string, params?: readonly Param[]): Promise<R[]>;
}

/**
 * Names of the write locks (rows of infracat_locks on PostgreSQL, created by migration 0;
 * SQLite has one write lock, the database's). `migrate` orders schema changes, `tokens`
 * orders every count-then-insert of tokens.
 */
export type LockName = 'migrate' | 'tokens';

export interface Driver extends Queries {
  /** Short name of the engine ('sqlite', 'postgres'): said in /readyz and logs, never branched on. */
  readonly backend: string;
  /** Where the database is, for logs and messages, any password redacted. */
  readonly description: string;
  /**
   * Which text of a dialect-specific migration step applies here (released migrations
   * where the two dialects differ; see migrations.ts).
   */
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * Runs `body` in one transaction, committed (durably) when it resolves and rolled back
   * when it rejects. It takes the write lock before its first statement (SQLite: BEGIN
   * IMMEDIATE, so a later write never meets SQLITE_BUSY without waiting); with `lock`, it
   * also holds that named lock across processes and instances (PostgreSQL: a row lock),
   * so one count-then-insert cannot interleave with another.
   */
  transaction<T>(body: (tx: Queries) => Promise<T>, lock?: LockName): Promise<T>;
  /**
   * Runs an idempotent statement (CREATE TABLE IF NOT EXISTS, INSERT ... ON CONFLICT DO
   * NOTHING) that several instances may run at the same moment: losing that race is success.
   */
  ensure(sql: string): Promise<void>;
  /** Whether a table of that name exists (in the current schema). Writes nothing. */
  tableExists(table: string): Promise<boolean>;
  /** Resolves when the database answers and looks writable, without writing. */
  ping(): Promise<void>;
  /**
   * Announces a change (changes.ts) to every watcher of the database when the transaction
   * `tx` commits, and never if it rolls back (PostgreSQL: NOTIFY in the transaction).
   * SQLite sends nothing: its watchers notice the file changed.
   */
  announce(tx: Queries, payload: string): Promise<void>;
  /** See Store.watch. */
  watch(handlers: ChangeHandlers): ChangeWatch;
  /** See Store.backup. */
  backup(file: string): Promise<BackupReport>;
  /** Waits for in-flight work and releases handles. Idempotent. */
  close(): Promise<void>;
}
