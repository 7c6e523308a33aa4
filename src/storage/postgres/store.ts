// PostgreSQL through a `pg` pool: the production and multi-instance backend.
// Every statement has a server-side and a client-side time-out, so a dead or
// unreachable server turns into StorageUnavailableError (-> 503) instead of a hang.
import pg from 'pg';
import { BOOTSTRAP_KEY, pendingMigrations, schemaVersion } from '../migrations.js';
import { TOKEN_COLUMNS, WRITE_PROBE_SQL, bootstrapOutcome, latestPerId, tokenFromRow, tokenParams, type TokenRow } from '../rows.js';
import {
  NotSupportedError,
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
import { redactUrl } from '../database-url.js';

export interface PostgresOptions {
  url: string;
  poolMax: number;
  timeoutMs: number;
  /** Told about errors of idle pooled connections (the server went away, etc.). */
  onIdleError?: (err: Error) => void;
}

// SQLSTATE classes and codes that mean "the database cannot serve this right now":
// connection trouble, resources, shutdown, and 25006 (read-only: a standby after a
// failover), which a balancer should route around rather than see as a server bug.
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0[1-4]|25006)/;
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
// SQLSTATEs of a concurrent CREATE ... IF NOT EXISTS race: unique_violation on the
// catalog, duplicate_table, duplicate_object (the row type). The other creator has
// committed by the time we see them, so the table exists.
const CREATE_RACE = new Set(['23505', '42P07', '42710']);

export function isUnavailable(err: unknown): boolean {
  if (err instanceof StorageUnavailableError) return true;
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e.code === 'string' && (UNAVAILABLE_SQLSTATE.test(e.code) || UNAVAILABLE_ERRNO.has(e.code))) return true;
  const msg = typeof e.message === 'string' ? e.message : '';
  return /timeout|Connection terminated|connection .*closed|Client has encountered a connection error|not queryable/i.test(msg);
}

type Queryable = Pick<pg.PoolClient, 'query'>;

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly description: string;
  readonly tokens: TokenStore;
  readonly catalog: CatalogStore;
  readonly stats = { queries: 0 };
  private readonly pool: pg.Pool;
  private closing: Promise<void> | undefined;

  constructor(options: PostgresOptions) {
    this.description = redactUrl(options.url);
    this.pool = new pg.Pool({
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
    // Without a listener an idle client's error (server restart) would crash the process.
    this.pool.on('error', (err) => options.onIdleError?.(err));
    this.tokens = new PostgresTokenStore(this);
    this.catalog = new PostgresCatalogStore(this);
  }

  /** Runs one statement on any pooled connection. */
  async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<pg.QueryResult<R>> {
    this.stats.queries += 1;
    try {
      return await this.pool.query<R>(sql, params);
    } catch (err) {
      throw translate(err);
    }
  }

  /** Runs `body` in one transaction on one connection; rolls back on any error. */
  async transaction<T>(body: (client: Queryable) => Promise<T>): Promise<T> {
    this.stats.queries += 1;
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
    try {
      await client.query('BEGIN');
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true; // the connection is unusable; drop it from the pool
      }
      throw translate(err);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  async schemaVersion(): Promise<number> {
    // information_schema rather than to_regclass(): plain SQL the distributed engines share.
    const { rows } = await this.query<{ n: number }>(
      `SELECT COUNT(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'infracat_schema_migrations'`,
    );
    if ((rows[0]?.n ?? 0) === 0) return 0;
    const v = await this.query<{ v: number }>('SELECT COALESCE(MAX(version), 0)::int AS v FROM infracat_schema_migrations');
    return v.rows[0]?.v ?? 0;
  }

  async migrate(options: { upTo?: number } = {}): Promise<MigrationReport> {
    // Bootstrap tables may be created by several instances at once; CREATE TABLE IF
    // NOT EXISTS can still collide in the catalog, so a collision just means "exists".
    await this.ignoringCreateRace(`CREATE TABLE IF NOT EXISTS infracat_schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
    await this.ignoringCreateRace('CREATE TABLE IF NOT EXISTS infracat_locks (name TEXT PRIMARY KEY)');
    await this.query(`INSERT INTO infracat_locks (name) VALUES ('migrate') ON CONFLICT DO NOTHING`);
    return this.transaction(async (c) => {
      // A row lock, not an advisory lock: plain SQL that distributed PostgreSQL engines
      // also honour. The second instance waits here, then finds nothing pending.
      await c.query(`SELECT name FROM infracat_locks WHERE name = 'migrate' FOR UPDATE`);
      const rows = await c.query<{ version: number }>('SELECT version FROM infracat_schema_migrations');
      const before = new Set(rows.rows.map((r) => r.version));
      const pending = pendingMigrations(before, options.upTo);
      for (const m of pending) {
        for (const sql of m.postgres) await c.query(sql);
        await c.query('INSERT INTO infracat_schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          Date.now(),
        ]);
      }
      return { applied: pending.map((m) => m.version), version: schemaVersion(before, pending) };
    });
  }

  private async ignoringCreateRace(sql: string): Promise<void> {
    try {
      await this.query(sql);
    } catch (err) {
      const code = (err as { cause?: { code?: string }; code?: string }).code;
      if (!(typeof code === 'string' && CREATE_RACE.has(code))) throw err;
    }
  }

  async ping(): Promise<void> {
    // One round trip that also tells a primary from a read-only standby (after a failover).
    const { rows } = await this.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
    if (rows[0]?.transaction_read_only === 'on') throw new StorageUnavailableError('PostgreSQL is read-only (transaction_read_only = on)');
  }

  async checkWritable(): Promise<void> {
    await this.query(WRITE_PROBE_SQL);
  }

  backup(): Promise<BackupReport> {
    return Promise.reject(
      new NotSupportedError('a PostgreSQL database is backed up with pg_dump and restored with pg_restore (README, "Backups"); infracat backup copies SQLite databases'),
    );
  }

  close(): Promise<void> {
    this.closing ??= this.pool.end();
    return this.closing;
  }
}

class PostgresTokenStore implements TokenStore {
  constructor(private readonly store: PostgresStore) {}

  create(token: TokenRecord, limits: { maxLive: number; now: number }): Promise<CreateTokenResult> {
    return this.store.transaction(async (c) => {
      await lockTokens(c);
      const live = await c.query<{ n: string }>(
        'SELECT COUNT(*) AS n FROM api_tokens WHERE expires_at IS NULL OR expires_at > $1',
        [limits.now],
      );
      if (Number(live.rows[0]?.n ?? 0) >= limits.maxLive) return 'limit_reached';
      await insert(c, token);
      return 'created';
    });
  }

  bootstrap(token: TokenRecord | null): Promise<boolean> {
    return this.store.transaction(async (c) => {
      // The tokens row lock orders this after any create() in flight (the count is
      // exact); the marker's primary key makes exactly one decision stick regardless.
      await lockTokens(c);
      const stored = await c.query<{ n: string }>('SELECT COUNT(*) AS n FROM api_tokens');
      const n = Number(stored.rows[0]?.n ?? 0);
      const mint = token !== null && n === 0;
      const marked = await c.query('INSERT INTO infracat_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
        BOOTSTRAP_KEY,
        bootstrapOutcome(token, n),
      ]);
      if (marked.rowCount === 0) return false;
      if (mint) await insert(c, token);
      return mint;
    });
  }

  async list(expiredAfter: number): Promise<TokenRecord[]> {
    const res = await this.store.query<TokenRow>(
      `SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE expires_at IS NULL OR expires_at > $1 ORDER BY created_at, id`,
      [expiredAfter],
    );
    return res.rows.map(tokenFromRow);
  }

  async purgeExpired(before: number): Promise<number> {
    const res = await this.store.query('DELETE FROM api_tokens WHERE expires_at IS NOT NULL AND expires_at <= $1', [before]);
    return res.rowCount ?? 0;
  }

  async get(id: string): Promise<TokenRecord | null> {
    const res = await this.store.query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE id = $1`, [id]);
    return res.rows[0] === undefined ? null : tokenFromRow(res.rows[0]);
  }

  async findByHash(secretHash: string): Promise<TokenRecord | null> {
    const res = await this.store.query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE secret_hash = $1`, [secretHash]);
    return res.rows[0] === undefined ? null : tokenFromRow(res.rows[0]);
  }

  async delete(id: string): Promise<boolean> {
    const res = await this.store.query('DELETE FROM api_tokens WHERE id = $1', [id]);
    return (res.rowCount ?? 0) > 0;
  }

  async touch(entries: readonly { id: string; at: number }[]): Promise<void> {
    if (entries.length === 0) return;
    const latest = latestPerId(entries);
    // One statement per batch; GREATEST ignores NULL, so a first use just sets the time.
    await this.store.query(
      `UPDATE api_tokens AS t SET last_used_at = GREATEST(t.last_used_at, v.at)
         FROM (SELECT unnest($1::text[]) AS id, unnest($2::bigint[]) AS at) AS v
        WHERE t.id = v.id`,
      [[...latest.keys()], [...latest.values()]],
    );
  }

  async count(): Promise<number> {
    const res = await this.store.query<{ n: string }>('SELECT COUNT(*) AS n FROM api_tokens');
    return Number(res.rows[0]?.n ?? 0);
  }
}

class PostgresCatalogStore implements CatalogStore {
  constructor(private readonly store: PostgresStore) {}

  async latestVersion(): Promise<number> {
    const res = await this.store.query<{ v: number }>('SELECT COALESCE(MAX(version), 0) AS v FROM catalog_revisions');
    return Number(res.rows[0]?.v ?? 0);
  }

  async current(): Promise<CatalogRevision | null> {
    const res = await this.store.query<{ version: number; document: string; applied_at: string }>(
      'SELECT version, document, applied_at FROM catalog_revisions ORDER BY version DESC LIMIT 1',
    );
    const row = res.rows[0];
    return row === undefined ? null : { version: row.version, document: row.document, appliedAt: Number(row.applied_at) };
  }

  async apply(document: string, expectedVersion: number, now: number): Promise<boolean> {
    const res = await this.store.query(
      'INSERT INTO catalog_revisions (version, document, applied_at) VALUES ($1, $2, $3) ON CONFLICT (version) DO NOTHING',
      [expectedVersion + 1, document, now],
    );
    return res.rowCount === 1;
  }
}

async function lockTokens(c: Queryable): Promise<void> {
  await c.query(`SELECT name FROM infracat_locks WHERE name = 'tokens' FOR UPDATE`);
}

async function insert(c: Queryable, token: TokenRecord): Promise<void> {
  await c.query(`INSERT INTO api_tokens (${TOKEN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, tokenParams(token));
}

function translate(err: unknown): Error {
  if (err instanceof StorageUnavailableError) return err;
  if (isUnavailable(err)) return new StorageUnavailableError('PostgreSQL is unreachable', { cause: err });
  return err instanceof Error ? err : new Error(String(err));
}
