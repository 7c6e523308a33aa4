// The embedded default: one SQLite file through better-sqlite3, in WAL mode. Every
// committed write is fsync'd (synchronous=FULL), so a 201/204 survives kill -9.
// This file is the SQLite Driver (../driver.ts) and SqliteStore, the shared store over it;
// the SQL itself is in ../sql-store.ts and ../migrations.ts.
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  rmSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { openDatabase, type SqliteDatabase, type SqliteStatement } from './driver.js';
import { preparePrivateFile, type StorageWarning } from './files.js';
import type { Driver, Queries } from '../driver.js';
import { SqlStore } from '../sql-store.js';
import type { Param } from '../tables.js';
import { StorageUnavailableError, type BackupReport, type ChangeHandlers, type ChangeWatch } from '../types.js';
import { RESYNC } from '../changes.js';

export interface SqliteOptions {
  path: string;
  /** How long a writer waits for another process's lock before failing (ms). */
  busyTimeoutMs: number;
  /** Told when the database's directory or files can be reached by other local users. */
  onWarning?: StorageWarning;
}

/** The shared store on a SQLite file. */
export class SqliteStore extends SqlStore {
  constructor(options: SqliteOptions) {
    super(new SqliteDriver(options));
  }
}

// Errors that mean "storage cannot serve right now" (locked by another process, disk
// trouble, a read-only file or filesystem, closed during shutdown) rather than a bug:
// they become 503, not 500.
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|READONLY)/;

/**
 * How often a watch reads the file's change counter (PRAGMA data_version: a read of the
 * shared-memory header, microseconds, no I/O): well inside the one-second bound on how
 * long another process's change may go unnoticed.
 */
export const CHANGE_CHECK_MS = 200;

/**
 * The transaction open in this process, if any: it settles when that transaction ends.
 * better-sqlite3 is synchronous, and a transaction's body awaits between its statements.
 * Meanwhile any other statement of this process waits here: on the same connection it
 * would land inside the transaction and share its commit or rollback; on another
 * connection (several stores on one file, as tests and tools open them) a write would
 * block the whole process in busy_timeout waiting for a lock that only this process's
 * next microtask can release. Other processes wait in busy_timeout as they always do.
 */
const open: { now: Promise<void> | undefined } = { now: undefined };

class SqliteDriver implements Driver {
  readonly backend = 'sqlite';
  readonly dialect = 'sqlite' as const;
  readonly description: string;
  private readonly db: SqliteDatabase;
  private readonly path: string;
  // Prepared once per SQL text, then reused (the texts are the store's constants).
  private readonly statements = new Map<string, SqliteStatement>();
  private closed = false;
  /** Statements of the open transaction: they skip the wait that everything else does. */
  private readonly tx: Queries = {
    run: (sql, params = []) => attempt(() => this.prepared(sql).run(...params).changes),
    get: <R>(sql: string, params: readonly Param[] = []) =>
      attempt(() => this.prepared(sql).get(...params) as R | undefined),
    all: <R>(sql: string, params: readonly Param[] = []) => attempt(() => this.prepared(sql).all(...params) as R[]),
  };

  constructor(options: SqliteOptions) {
    this.path = options.path;
    this.description = `sqlite:${options.path}`;
    try {
      preparePrivateFile(options.path, options.onWarning);
      this.db = openDatabase(options.path, { timeout: options.busyTimeoutMs });
      this.db.pragma('journal_mode = WAL');
    } catch (err) {
      throw openFailure(options.path, err);
    }
    // FULL: in WAL mode this syncs the log on every commit; NORMAL could lose the last
    // acknowledged writes on power loss.
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
  }

  private prepared(sql: string): SqliteStatement {
    let stmt = this.statements.get(sql);
    if (stmt === undefined) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  // Outside a transaction a statement runs at once, unless one is open (see `open` below).
  run(sql: string, params?: readonly Param[]): Promise<number> {
    return open.now === undefined ? this.tx.run(sql, params) : open.now.then(() => this.run(sql, params));
  }

  get<R>(sql: string, params?: readonly Param[]): Promise<R | undefined> {
    return open.now === undefined ? this.tx.get<R>(sql, params) : open.now.then(() => this.get<R>(sql, params));
  }

  all<R>(sql: string, params?: readonly Param[]): Promise<R[]> {
    return open.now === undefined ? this.tx.all<R>(sql, params) : open.now.then(() => this.all<R>(sql, params));
  }

  /**
   * BEGIN IMMEDIATE takes the database's write lock first (waiting up to busy_timeout for
   * other processes), so two processes never both count and then insert. One lock for
   * the whole file: the named lock adds nothing here.
   */
  async transaction<T>(body: (tx: Queries) => Promise<T>): Promise<T> {
    while (open.now !== undefined) await open.now;
    let end!: () => void;
    open.now = new Promise((resolve) => (end = resolve));
    try {
      await this.tx.run('BEGIN IMMEDIATE');
      try {
        const result = await body(this.tx);
        await this.tx.run('COMMIT');
        return result;
      } catch (err) {
        // Undo what the body wrote; a failed COMMIT may leave nothing to undo.
        if (this.db.open && this.db.inTransaction) await this.tx.run('ROLLBACK').catch(() => undefined);
        throw err;
      }
    } finally {
      open.now = undefined;
      end();
    }
  }

  announce(): Promise<void> {
    // Nothing to send: every watcher of the file sees its change counter move (watch()).
    return Promise.resolve();
  }

  /**
   * Another connection's commit (another process, or another store on the file) moves
   * this connection's data_version; this connection's own commits do not, and need no
   * telling (the instance that made a change forgets what it changed itself). What changed
   * is not known here: each move is a resync (a dropped verification cache costs one
   * indexed read per token in use, and the catalog check one read).
   */
  watch(handlers: ChangeHandlers): ChangeWatch {
    const version = (): number | undefined => {
      try {
        return this.closed ? undefined : (this.db.pragma('data_version', { simple: true }) as number);
      } catch {
        return undefined; // closed meanwhile, or unreadable for now: the next check tells
      }
    };
    let last = version();
    handlers.connected?.();
    handlers.change(RESYNC);
    const timer = setInterval(() => {
      const now = version();
      if (now === undefined || now === last) return;
      last = now;
      handlers.change(RESYNC);
    }, CHANGE_CHECK_MS);
    timer.unref();
    return {
      stop: () => {
        clearInterval(timer);
        return Promise.resolve();
      },
    };
  }

  async ensure(sql: string): Promise<void> {
    await this.run(sql);
  }

  async tableExists(table: string): Promise<boolean> {
    return (
      (await this.get(`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?`, [table])) !== undefined
    );
  }

  async ping(): Promise<void> {
    await this.get('SELECT 1 AS ok');
    // Reads work on a read-only file; writes need the file and its directory (-wal, -shm).
    await attempt(() => {
      try {
        accessSync(this.path, constants.W_OK);
        accessSync(path.dirname(this.path), constants.W_OK);
      } catch (err) {
        const why = `the database file or its directory is not writable (${(err as Error).message})`;
        throw Object.assign(new Error(why), { code: 'SQLITE_READONLY' });
      }
    });
  }

  /**
   * SQLite's online backup API through this connection: the copy is one consistent
   * state of the database, including what still sits in the -wal file (which a plain
   * `cp` of the main file misses), taken while other processes keep writing. All pages
   * go in one step, so a busy writer cannot make the copy restart forever. The copy is
   * written beside the target, checked, synced, and only then linked into place.
   */
  async backup(file: string): Promise<BackupReport> {
    const target = path.resolve(file);
    if (existsSync(target)) throw new Error(`${target} already exists; a backup never overwrites a file`);
    if (!existsSync(path.dirname(target))) throw new Error(`the directory ${path.dirname(target)} does not exist`);
    const partial = `${target}.partial-${process.pid}`;
    try {
      await this.db.backup(partial, { progress: () => 0x7fffffff });
      chmodSync(partial, 0o600); // it holds the token hashes: owner only, like the database
      const copy = openDatabase(partial, { fileMustExist: true });
      try {
        const check = copy.pragma('integrity_check', { simple: true });
        if (check !== 'ok') throw new Error(`the copy failed SQLite's integrity check: ${String(check)}`);
        // One self-contained file: fold the copy's own log in, so the backup is just this file.
        copy.pragma('wal_checkpoint(TRUNCATE)');
        copy.pragma('journal_mode = DELETE');
      } finally {
        copy.close();
      }
      const fd = openSync(partial, 'r+', 0o600);
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      linkSync(partial, target); // fails if the target appeared meanwhile: never overwrite
      return { file: target, bytes: statSync(target).size };
    } finally {
      rmSync(partial, { force: true });
      rmSync(`${partial}-wal`, { force: true });
      rmSync(`${partial}-shm`, { force: true });
    }
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.db.close();
    }
    return Promise.resolve();
  }
}

/**
 * The real reason a database could not be created or opened. Node's recursive mkdir
 * says ENOENT on a read-only filesystem and SQLite only "unable to open database file":
 * the nearest existing directory (or the file itself) tells EROFS or EACCES.
 */
function openFailure(file: string, err: unknown): Error {
  const original = err instanceof Error ? err : new Error(String(err));
  let dir = path.dirname(file);
  while (!existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  for (const target of existsSync(file) ? [file, path.dirname(file)] : [dir]) {
    try {
      accessSync(target, constants.W_OK);
    } catch (denied) {
      const code = (denied as NodeJS.ErrnoException).code ?? 'EACCES';
      const why = code === 'EROFS' ? 'is on a read-only filesystem' : 'is not writable';
      return Object.assign(new Error(`${target} ${why} (${code})`, { cause: original }), { code, path: target });
    }
  }
  return original;
}

/** Runs a synchronous database step, turning lock time-outs into StorageUnavailableError. */
function attempt<T>(step: () => T): Promise<T> {
  try {
    return Promise.resolve(step());
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE.test(code)) {
      return Promise.reject(
        new StorageUnavailableError(`the SQLite database is unavailable (${code})`, { cause: err }),
      );
    }
    if (err instanceof TypeError && /connection is not open/.test(err.message)) {
      return Promise.reject(new StorageUnavailableError('the SQLite database is closed', { cause: err }));
    }
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
