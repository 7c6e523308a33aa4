// Rows written straight into an infracat database for the scale bench (scripts/bench-scale.ts):
// multi-row INSERTs in large transactions, into the schema `infracat migrate` made, with the
// column lists and the record-to-row mapping of src/storage/tables.ts, ids from the service's
// id scheme (src/tokens/ids.ts) and secrets in its token format (src/tokens/format.ts), so a
// seeded token verifies like an issued one. Seeding through the API would take hours at 1M
// rows (every create is one audited, fsync'd transaction).
//
// The layout is a function of each row's index, so a database grows from one size to the
// next by appending rows, and the bench knows without a query which account, token or
// event sits where (the middle of a list, an account with tokens, a token's events).
import pg from 'pg';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { numbered } from '../../src/storage/postgres/placeholders.js';
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import {
  ACCOUNTS,
  API_TOKENS,
  AUDIT_EVENTS,
  type Param,
  type RecordOfTable,
  type Table,
} from '../../src/storage/tables.js';
import { generateSecret, hashSecret } from '../../src/tokens/format.js';
import { firstIdAt } from '../../src/tokens/ids.js';

export const DAY_MS = 86_400_000;

/** Rows per INSERT: under both engines' caps on bound parameters (SQLite 32,766; PostgreSQL 65,535). */
const ROWS_PER_STATEMENT = 500;
/** Rows of each table per transaction. */
const ROWS_PER_TRANSACTION = 50_000;

/** Where seeded rows go. */
export interface Writer {
  /** Inserts `records` into `table` in one transaction. */
  insert<R>(table: Table<R>, records: readonly R[]): Promise<void>;
  /** The first column of the first row of `sql` (`?` placeholders), as a number. */
  number(sql: string, params?: readonly Param[]): Promise<number>;
  run(sql: string): Promise<void>;
  close(): Promise<void>;
}

function insertSql(table: Table<unknown>, rows: number): string {
  const values = Array.from({ length: rows }, () => `(${table.placeholders})`).join(', ');
  return `INSERT INTO ${table.name} (${table.columns}) VALUES ${values}`;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function sqliteWriter(file: string): Writer {
  const db = openDatabase(file);
  // This connection only: the server opens its own with synchronous=FULL.
  db.pragma('synchronous = OFF');
  return {
    async insert(table, records) {
      db.transaction(() => {
        for (const chunk of chunks(records, ROWS_PER_STATEMENT))
          db.prepare(insertSql(table, chunk.length)).run(chunk.flatMap((r) => table.params(r)));
      })();
    },
    async number(sql, params = []) {
      const row = db
        .prepare(sql)
        .raw()
        .get(...params) as unknown[];
      return Number(row[0]);
    },
    async run(sql) {
      db.exec(sql);
    },
    async close() {
      db.close();
    },
  };
}

async function postgresWriter(url: string): Promise<Writer> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // This session only: a crash loses a bench's seed, never the server's acknowledged writes.
  await client.query('SET synchronous_commit = off');
  return {
    async insert(table, records) {
      await client.query('BEGIN');
      try {
        for (const chunk of chunks(records, ROWS_PER_STATEMENT))
          await client.query(
            numbered(insertSql(table, chunk.length)),
            chunk.flatMap((r) => table.params(r)),
          );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
    },
    async number(sql, params = []) {
      const r = await client.query<unknown[]>({ text: numbered(sql), values: [...params], rowMode: 'array' });
      return Number(r.rows[0]?.[0]);
    },
    async run(sql) {
      await client.query(sql);
    },
    async close() {
      await client.end();
    },
  };
}

/** A writer into the database of a DATABASE_URL (`sqlite:PATH` or `postgres://...`). */
export function openWriter(databaseUrl: string): Promise<Writer> {
  if (databaseUrl.startsWith('sqlite:')) return Promise.resolve(sqliteWriter(databaseUrl.slice('sqlite:'.length)));
  return postgresWriter(databaseUrl);
}

type Token = RecordOfTable<typeof API_TOKENS>;
type Account = RecordOfTable<typeof ACCOUNTS>;
type AuditEvent = RecordOfTable<typeof AUDIT_EVENTS>;

/** The scopes of every seeded token: what the forward-auth check asks for. */
export const SEEDED_SCOPE = 'apps:read';
/** Tokens per account among the tokens seeded across accounts. */
export const TOKENS_PER_ACCOUNT = 10;
/** The actions of seeded audit events, in turn: each token seeded across accounts is the target of one of each. */
export const EVENT_ACTIONS = [
  'api_token.created',
  'api_token.updated',
  'api_token.rotated',
  'api_token.deleted',
] as const;

// Each seeded row of index k has its own millisecond, `base + 4k + slot`, so every id (the
// first id of its millisecond: firstIdAt) is unique and sorts as the row was created.
const SLOT = { operatorToken: 0, accountToken: 1, account: 2, event: 3 } as const;

/**
 * The rows of a scale database of size N, for N growing: N tokens in the operator account
 * (one in ten expired, within retention), N accounts (one in ten suspended), N tokens across
 * the first N/10 accounts (ten each), N audit events (four per token of the first N/4
 * across accounts, in those tokens' accounts' trails).
 */
export class ScaleLayout {
  /** Creation time of row 0: some weeks ago, so every seeded row is in the past. */
  readonly base: number;

  constructor(
    readonly now: number,
    readonly prefix: string,
  ) {
    this.base = now - 45 * DAY_MS;
  }

  time(slot: keyof typeof SLOT, k: number): number {
    return this.base + 4 * k + SLOT[slot];
  }

  operatorTokenId(k: number): string {
    return firstIdAt('tok', this.time('operatorToken', k));
  }
  accountTokenId(j: number): string {
    return firstIdAt('tok', this.time('accountToken', j));
  }
  accountId(a: number): string {
    return firstIdAt('acc', this.time('account', a));
  }
  externalId(a: number): string {
    return `ext-${a}`;
  }
  eventTime(k: number): number {
    return this.time('event', k);
  }
  /** The account of the token of index j seeded across accounts. */
  accountOf(j: number): number {
    return Math.floor(j / TOKENS_PER_ACCOUNT);
  }
  suspended(a: number): boolean {
    return a % 10 === 9;
  }
  /** The token (index across accounts) event k is about. */
  targetOf(k: number): number {
    return Math.floor(k / EVENT_ACTIONS.length);
  }

  operatorToken(k: number, secret: string): Token {
    const expired = k % 10 === 9;
    return {
      id: this.operatorTokenId(k),
      name: `seed-${k}`,
      scopes: [SEEDED_SCOPE],
      secretHash: hashSecret(secret),
      createdAt: this.time('operatorToken', k),
      // Expired five days ago: within TOKEN_EXPIRED_RETENTION_DAYS, so still listed.
      expiresAt: expired ? this.now - 5 * DAY_MS : k % 2 === 0 ? null : this.now + 200 * DAY_MS,
      lastUsedAt: null,
      lastUsedIp: null,
      accountId: OPERATOR_ACCOUNT_ID,
      previousSecretHash: null,
      previousExpiresAt: null,
      allowedCidrs: null,
      notBefore: null,
      enabled: true,
    };
  }

  accountToken(j: number, secret: string): Token {
    return {
      ...this.operatorToken(j, secret),
      id: this.accountTokenId(j),
      createdAt: this.time('accountToken', j),
      expiresAt: j % 2 === 0 ? null : this.now + 200 * DAY_MS,
      accountId: this.accountId(this.accountOf(j)),
    };
  }

  account(a: number): Account {
    return {
      id: this.accountId(a),
      name: `account ${a}`,
      externalId: this.externalId(a),
      status: this.suspended(a) ? 'suspended' : 'active',
      createdAt: this.time('account', a),
      rateLimit: null,
    };
  }

  event(k: number): AuditEvent {
    const j = this.targetOf(k);
    return {
      id: firstIdAt('evt', this.eventTime(k)),
      accountId: this.accountId(this.accountOf(j)),
      action: EVENT_ACTIONS[k % EVENT_ACTIONS.length]!,
      occurredAt: this.eventTime(k),
      actorType: 'cli',
      actorId: null,
      actorName: 'bench-scale',
      actorAccountId: OPERATOR_ACCOUNT_ID,
      actorCredential: null,
      targetType: 'api_token',
      targetId: this.accountTokenId(j),
      targetName: `seed-${j}`,
      ip: null,
      userAgent: null,
      requestId: null,
      details: {},
    };
  }
}

/**
 * Grows the database from `from` to `to` rows of each kind. Resolves to the secrets of up to
 * `keep` of the new tokens across accounts, spread over them, each in an active account:
 * tokens never presented before, for verifications with a cold cache.
 */
export async function grow(
  writer: Writer,
  layout: ScaleLayout,
  from: number,
  to: number,
  keep: number,
): Promise<string[]> {
  const kept: string[] = [];
  // Every step-th new token is a candidate; nine in ten are in an active account.
  const step = Math.max(1, Math.floor((to - from) / Math.ceil(keep * 1.25)));
  for (let start = from; start < to; start += ROWS_PER_TRANSACTION) {
    const end = Math.min(to, start + ROWS_PER_TRANSACTION);
    const ks = Array.from({ length: end - start }, (_, i) => start + i);
    await writer.insert(
      ACCOUNTS,
      ks.map((k) => layout.account(k)),
    );
    await writer.insert(
      API_TOKENS,
      ks.map((k) => layout.operatorToken(k, generateSecret(layout.prefix))),
    );
    await writer.insert(
      API_TOKENS,
      ks.map((j) => {
        const secret = generateSecret(layout.prefix);
        if (kept.length < keep && (j - from) % step === 0 && !layout.suspended(layout.accountOf(j))) kept.push(secret);
        return layout.accountToken(j, secret);
      }),
    );
    await writer.insert(
      AUDIT_EVENTS,
      ks.map((k) => layout.event(k)),
    );
  }
  return kept;
}

/**
 * The backlog a start may meet: tokens expired longer than `retentionDays` ago (the purge's
 * to delete), topped up to `target` however many an earlier start purged. Rows are appended
 * after `next`; resolves to the next free index.
 */
export async function topUpBacklog(
  writer: Writer,
  layout: ScaleLayout,
  retentionDays: number,
  target: number,
  next: number,
): Promise<number> {
  const purgeable = layout.now - retentionDays * DAY_MS;
  const have = await writer.number('SELECT COUNT(*) FROM api_tokens WHERE expires_at IS NOT NULL AND expires_at <= ?', [
    purgeable,
  ]);
  let k = next;
  for (let missing = target - have; missing > 0;) {
    const n = Math.min(missing, ROWS_PER_TRANSACTION);
    const tokens = Array.from({ length: n }, (_, i) => ({
      ...layout.operatorToken(k + i, generateSecret(layout.prefix)),
      // Created and expired well before the retention began.
      createdAt: layout.time('operatorToken', k + i) - 4 * retentionDays * DAY_MS,
      id: firstIdAt('tok', layout.time('operatorToken', k + i) - 4 * retentionDays * DAY_MS),
      expiresAt: purgeable - retentionDays * DAY_MS,
    }));
    await writer.insert(API_TOKENS, tokens);
    k += n;
    missing -= n;
  }
  return k;
}
