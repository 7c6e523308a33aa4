// PostgreSQL through a `pg` pool: the production and multi-instance backend.
// Every statement has a server-side and a client-side time-out, so a dead or
// unreachable server turns into StorageUnavailableError (-> 503) instead of a hang.
// This file is the PostgreSQL Driver (../driver.ts) and PostgresStore, the shared store
// over it; the SQL itself is in ../sql-store.ts and ../migrations.ts.
import pg from 'pg';
import type { Driver, LockName, Queries } from '../driver.js';
import type { Param } from '../tables.js';
import { SqlStore } from '../sql-store.js';
import {
  NotSupportedError,
  StorageUnavailableError,
  type BackupReport,
  type ChangeHandlers,
  type ChangeWatch,
} from '../types.js';
import { CHANGE_CHANNEL } from '../changes.js';
import { listen } from './listener.js';
import { numbered } from './placeholders.js';
import { redactUrl } from '../database-url.js';

export interface PostgresOptions {
  url: string;
  poolMax: number;
  timeoutMs: number;
  /** Where watch() listens (DATABASE_NOTIFY_URL); the pool's database when unset. */
  notifyUrl?: string | undefined;
  /** Told about errors of idle pooled connections (the server went away, etc.). */
  onIdleError?: (err: Error) => void;
}

/** The shared store on a PostgreSQL database. */
export class PostgresStore extends SqlStore {
  constructor(options: PostgresOptions) {
    super(new PostgresDriver(options));
  }
}

// SQLSTATE classes and codes that mean "the database cannot serve this right now":
// connection trouble, resources, shutdown, and 25006 (read-only: a standby after a
// failover), which a balancer should route around rather than see as a server bug.
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0[1-4]|25006)/;
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// Messages of node-postgres errors that carry no code but mean the connection is gone.
const UNAVAILABLE_MESSAGE =
  /timeout|Connection terminated|connection .*closed|Client has encountered a connection error|not queryable/i;
// SQLSTATEs of a concurrent CREATE ... IF NOT EXISTS race: unique_violation on the
// catalog, duplicate_table, duplicate_object (the row type). The other creator has
// committed by the time we see them, so the table exists.
const CREATE_RACE = new Set(['23505', '42P07', '42710']);

/** The pool or one checked-out client: where a statement goes. */
interface Target {
  query(text: string, values: Param[]): Promise<pg.QueryResult>;
}

/** Sends `?`-placeholder SQL, rewritten to PostgreSQL's `$n` once per distinct text. */
class Sender implements Queries {
  constructor(private readonly target: Target) {}

  async run(sql: string, params: readonly Param[] = []): Promise<number> {
    return (await this.send(sql, params)).rowCount ?? 0;
  }

  async get<R>(sql: string, params: readonly Param[] = []): Promise<R | undefined> {
    return (await this.send(sql, params)).rows[0] as R | undefined;
  }

  async all<R>(sql: string, params: readonly Param[] = []): Promise<R[]> {
    return (await this.send(sql, params)).rows as R[];
  }

  private async send(sql: string, params: readonly Param[]): Promise<pg.QueryResult> {
    try {
      return await this.target.query(numbered(sql), params as Param[]);
    } catch (err) {
      throw translate(err);
    }
  }
}

class PostgresDriver extends Sender implements Driver {
  readonly backend = 'postgres';
  readonly dialect = 'postgres' as const;
  readonly description: string;
  private readonly pool: pg.Pool;
  private readonly listenOptions: { url: string; timeoutMs: number };
  private closing: Promise<void> | undefined;

  constructor(options: PostgresOptions) {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolMax,
      connectionTimeoutMillis: options.timeoutMs,
      // Server side: no statement or idle transaction outlives the bound.
      statement_timeout: options.timeoutMs,
      idle_in_transaction_session_timeout: options.timeoutMs * 2,
      // Client side: covers a server that stops answering without closing the socket.
      query_timeout: options.timeoutMs + 1000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'infracat',
    });
    super(pool);
    this.pool = pool;
    this.description = redactUrl(options.url);
    this.listenOptions = { url: options.notifyUrl ?? options.url, timeoutMs: options.timeoutMs };
    // Without a listener an idle client's error (server restart) would crash the process.
    this.pool.on('error', (err) => options.onIdleError?.(err));
  }

  /** One transaction on one pooled connection; with `lock`, its row is locked first. */
  async transaction<T>(body: (tx: Queries) => Promise<T>, lock?: LockName): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw translate(err);
    }
    let broken = false;
    // While checked out, a dying server's FATAL arrives as an 'error' event on the
    // client; without a listener it would crash the process (the pool only listens to
    // idle clients). The next query on it fails anyway; just mark it unusable.
    const onError = (): void => {
      broken = true;
    };
    client.on('error', onError);
    const tx = new Sender(client);
    try {
      await tx.run('BEGIN');
      // A row lock, not an advisory lock: plain SQL that distributed PostgreSQL engines
      // also honour. A missing row would lock nothing: refuse rather than run unserialised.
      if (
        lock !== undefined &&
        (await tx.get('SELECT name FROM infracat_locks WHERE name = ? FOR UPDATE', [lock])) === undefined
      ) {
        throw new Error(`the lock row '${lock}' is missing from infracat_locks; run infracat migrate`);
      }
      const result = await body(tx);
      await tx.run('COMMIT');
      return result;
    } catch (err) {
      // A connection that stopped answering (a partition: the statement's client-side
      // time-out fired) would hold a ROLLBACK behind that statement for another time-out;
      // dropping it ends the transaction just as well (the server rolls back a session that
      // ends), so the request waits for one time-out, not two.
      if (broken || connectionLost(err)) broken = true;
      else {
        try {
          await client.query('ROLLBACK');
        } catch {
          broken = true; // the connection is unusable; drop it from the pool
        }
      }
      throw translate(err);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  async announce(tx: Queries, payload: string): Promise<void> {
    // Queued by the server and delivered at COMMIT, in commit order; dropped on ROLLBACK.
    await tx.get('SELECT pg_notify(?, ?)', [CHANGE_CHANNEL, payload]);
  }

  watch(handlers: ChangeHandlers): ChangeWatch {
    return listen(this.listenOptions, handlers);
  }

  async ensure(sql: string): Promise<void> {
    // CREATE TABLE IF NOT EXISTS can still collide in the catalog when several instances
    // run it at once; a collision just means "exists".
    try {
      await this.run(sql);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (!(typeof code === 'string' && CREATE_RACE.has(code))) throw err;
    }
  }

  async tableExists(table: string): Promise<boolean> {
    // information_schema rather than to_regclass(): plain SQL the distributed engines share.
    const found = await this.get(
      'SELECT 1 AS found FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?',
      [table],
    );
    return found !== undefined;
  }

  async ping(): Promise<void> {
    // One round trip that also tells a primary from a read-only standby (after a failover).
    const row = await this.get<{ transaction_read_only: string }>('SHOW transaction_read_only');
    if (row?.transaction_read_only === 'on')
      throw new StorageUnavailableError('PostgreSQL is read-only (transaction_read_only = on)');
  }

  backup(): Promise<BackupReport> {
    return Promise.reject(
      new NotSupportedError(
        'a PostgreSQL database is backed up with pg_dump and restored with pg_restore ' +
          '(docs/operations.md, "Backups"); infracat backup copies SQLite databases',
      ),
    );
  }

  close(): Promise<void> {
    this.closing ??= this.pool.end();
    return this.closing;
  }
}

function isUnavailable(err: unknown): boolean {
  if (err instanceof StorageUnavailableError) return true;
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e.code === 'string' && (UNAVAILABLE_SQLSTATE.test(e.code) || UNAVAILABLE_ERRNO.has(e.code))) return true;
  const msg = typeof e.message === 'string' ? e.message : '';
  return UNAVAILABLE_MESSAGE.test(msg);
}

/** A failure of the connection itself (no answer, a broken socket), not an error the server reported. */
function connectionLost(err: unknown): boolean {
  const original = err instanceof StorageUnavailableError && err.cause !== undefined ? err.cause : err;
  return !(original instanceof pg.DatabaseError) && isUnavailable(original);
}

function translate(err: unknown): Error {
  if (err instanceof StorageUnavailableError) return err;
  if (isUnavailable(err)) return new StorageUnavailableError('PostgreSQL is unreachable', { cause: err });
  return err instanceof Error ? err : new Error(String(err));
}
