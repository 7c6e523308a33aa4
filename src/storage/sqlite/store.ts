// The embedded default: one SQLite file through better-sqlite3, in WAL mode.
// Every committed write is fsync'd (synchronous=FULL), so a 201/204 survives kill -9.
// better-sqlite3 is synchronous; methods are async only to share the Store interface.
import { accessSync, chmodSync, closeSync, constants, existsSync, fsyncSync, linkSync, openSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import Database, { type SqliteDatabase, type SqliteStatement } from './driver.js';
import { BOOTSTRAP_KEY, pendingMigrations, schemaVersion } from '../migrations.js';
import { preparePrivateFile, type StorageWarning } from './files.js';
import { TOKEN_COLUMNS, WRITE_PROBE_SQL, bootstrapOutcome, latestPerId, tokenFromRow, tokenParams, type TokenRow } from '../rows.js';
import {
  StorageUnavailableError,
  type BackupReport,
  type CatalogRevision,
  type CatalogStore,
  type CreateTokenResult,
  type MigrationReport,
  type Store,
  type TokenRecord,
  type TokenStore,
} from '../types.js';

export interface SqliteOptions {
  path: string;
  /** How long a writer waits for another process's lock before failing (ms). */
  busyTimeoutMs: number;
  /** Told when the database's directory or files can be reached by other local users. */
  onWarning?: StorageWarning;
}

// Errors that mean "storage cannot serve right now" (locked by another process, disk
// trouble, a read-only file or filesystem, closed during shutdown) rather than a bug:
// they become 503, not 500.
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|READONLY)/;

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly description: string;
  readonly tokens: TokenStore;
  readonly catalog: CatalogStore;
  readonly stats = STATS;
  private readonly db: SqliteDatabase;
  private closed = false;

  private readonly path: string;

  constructor(options: SqliteOptions) {
    this.path = options.path;
    this.description = `sqlite:${options.path}`;
    try {
      preparePrivateFile(options.path, options.onWarning);
      this.db = new Database(options.path, { timeout: options.busyTimeoutMs });
      this.db.pragma('journal_mode = WAL');
    } catch (err) {
      throw openFailure(options.path, err);
    }
    // FULL: in WAL mode this syncs the log on every commit; NORMAL could lose the last
    // acknowledged writes on power loss.
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    this.tokens = new SqliteTokenStore(this.db);
    this.catalog = new SqliteCatalogStore(this.db);
  }

  migrate(options: { upTo?: number } = {}): Promise<MigrationReport> {
    return run(() => {
      this.db.exec(`CREATE TABLE IF NOT EXISTS infracat_schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
      // IMMEDIATE takes the write lock first, so two processes never both decide to apply.
      const apply = this.db.transaction((): MigrationReport => {
        const rows = this.db.prepare('SELECT version FROM infracat_schema_migrations').all() as { version: number }[];
        const before = new Set(rows.map((r) => r.version));
        const pending = pendingMigrations(before, options.upTo);
        const record = this.db.prepare('INSERT INTO infracat_schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
        for (const m of pending) {
          for (const sql of m.sqlite) this.db.exec(sql);
          record.run(m.version, m.name, Date.now());
        }
        return { applied: pending.map((m) => m.version), version: schemaVersion(before, pending) };
      });
      return apply.immediate();
    });
  }

  schemaVersion(): Promise<number> {
    return run(() => {
      const table = this.db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'infracat_schema_migrations'`).get();
      if (table === undefined) return 0;
      return (this.db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM infracat_schema_migrations').get() as { v: number }).v;
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
      const copy = new Database(partial, { fileMustExist: true });
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

  ping(): Promise<void> {
    return run(() => {
      this.db.prepare('SELECT 1').get();
      // Reads work on a read-only file; writes need the file and its directory (-wal, -shm).
      try {
        accessSync(this.path, constants.W_OK);
        accessSync(path.dirname(this.path), constants.W_OK);
      } catch (err) {
        throw Object.assign(new Error(`the database file or its directory is not writable (${(err as Error).message})`), { code: 'SQLITE_READONLY' });
      }
    });
  }

  checkWritable(): Promise<void> {
    return run(() => {
      this.db.prepare(WRITE_PROBE_SQL).run();
    });
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.db.close();
    }
    return Promise.resolve();
  }
}

// SQL of the token store. Statements are prepared on first use and then reused:
// the tables exist only after migrate(), which runs after the store opens.
const SQL = {
  insert: `INSERT INTO api_tokens (${TOKEN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  countLive: 'SELECT COUNT(*) AS n FROM api_tokens WHERE expires_at IS NULL OR expires_at > ?',
  count: 'SELECT COUNT(*) AS n FROM api_tokens',
  list: `SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE expires_at IS NULL OR expires_at > ? ORDER BY created_at, id`,
  get: `SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE id = ?`,
  byHash: `SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE secret_hash = ?`,
  delete: 'DELETE FROM api_tokens WHERE id = ?',
  purgeExpired: 'DELETE FROM api_tokens WHERE expires_at IS NOT NULL AND expires_at <= ?',
  // SQLite's two-argument MAX() is NULL if either side is NULL, hence the COALESCE.
  touch: 'UPDATE api_tokens SET last_used_at = MAX(COALESCE(last_used_at, 0), ?) WHERE id = ?',
  markBootstrap: 'INSERT INTO infracat_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING',
} as const;

class SqliteTokenStore implements TokenStore {
  private readonly prepared = new Map<keyof typeof SQL, SqliteStatement>();

  constructor(private readonly db: SqliteDatabase) {}

  private q(name: keyof typeof SQL): SqliteStatement {
    let stmt = this.prepared.get(name);
    if (stmt === undefined) {
      stmt = this.db.prepare(SQL[name]);
      this.prepared.set(name, stmt);
    }
    return stmt;
  }

  create(token: TokenRecord, limits: { maxLive: number; now: number }): Promise<CreateTokenResult> {
    return run(() =>
      this.db
        .transaction((): CreateTokenResult => {
          const { n } = this.q('countLive').get(limits.now) as { n: number };
          if (n >= limits.maxLive) return 'limit_reached';
          this.q('insert').run(...tokenParams(token));
          return 'created';
        })
        .immediate(),
    );
  }

  bootstrap(token: TokenRecord | null): Promise<boolean> {
    // IMMEDIATE: the write lock first, so racing processes decide one after the other.
    return run(() =>
      this.db
        .transaction((): boolean => {
          const { n } = this.q('count').get() as { n: number };
          const mint = token !== null && n === 0;
          if (this.q('markBootstrap').run(BOOTSTRAP_KEY, bootstrapOutcome(token, n)).changes === 0) return false;
          if (mint) this.q('insert').run(...tokenParams(token));
          return mint;
        })
        .immediate(),
    );
  }

  list(expiredAfter: number): Promise<TokenRecord[]> {
    return run(() => (this.q('list').all(expiredAfter) as TokenRow[]).map(tokenFromRow));
  }

  purgeExpired(before: number): Promise<number> {
    return run(() => this.q('purgeExpired').run(before).changes);
  }

  get(id: string): Promise<TokenRecord | null> {
    return run(() => {
      const row = this.q('get').get(id) as TokenRow | undefined;
      return row === undefined ? null : tokenFromRow(row);
    });
  }

  findByHash(secretHash: string): Promise<TokenRecord | null> {
    return run(() => {
      const row = this.q('byHash').get(secretHash) as TokenRow | undefined;
      return row === undefined ? null : tokenFromRow(row);
    });
  }

  delete(id: string): Promise<boolean> {
    return run(() => this.q('delete').run(id).changes > 0);
  }

  touch(entries: readonly { id: string; at: number }[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return run(() => {
      this.db.transaction(() => {
        for (const [id, at] of latestPerId(entries)) this.q('touch').run(at, id);
      })();
    });
  }

  count(): Promise<number> {
    return run(() => (this.q('count').get() as { n: number }).n);
  }
}

class SqliteCatalogStore implements CatalogStore {
  constructor(private readonly db: SqliteDatabase) {}

  latestVersion(): Promise<number> {
    return run(() => (this.db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM catalog_revisions').get() as { v: number }).v);
  }

  current(): Promise<CatalogRevision | null> {
    return run(() => {
      const row = this.db
        .prepare('SELECT version, document, applied_at FROM catalog_revisions ORDER BY version DESC LIMIT 1')
        .get() as { version: number; document: string; applied_at: number } | undefined;
      return row === undefined ? null : { version: row.version, document: row.document, appliedAt: row.applied_at };
    });
  }

  apply(document: string, expectedVersion: number, now: number): Promise<boolean> {
    return run(
      () =>
        this.db
          .prepare('INSERT INTO catalog_revisions (version, document, applied_at) VALUES (?, ?, ?) ON CONFLICT (version) DO NOTHING')
          .run(expectedVersion + 1, document, now).changes === 1,
    );
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

// One counter per process is enough for a metric; stores share it.
const STATS = { queries: 0 };

/** Runs a synchronous database step, turning lock time-outs into StorageUnavailableError. */
function run<T>(step: () => T): Promise<T> {
  STATS.queries += 1;
  try {
    return Promise.resolve(step());
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE.test(code)) {
      return Promise.reject(new StorageUnavailableError(`the SQLite database is unavailable (${code})`, { cause: err }));
    }
    if (err instanceof TypeError && /connection is not open/.test(err.message)) {
      return Promise.reject(new StorageUnavailableError('the SQLite database is closed', { cause: err }));
    }
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
