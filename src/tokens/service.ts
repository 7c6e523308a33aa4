// The token domain: issue, list, delete and verify API tokens. Knows the rules and
// the storage interface; knows nothing of HTTP or SQL.
import { AppError } from '../errors.js';
import { OPERATOR_ACCOUNT_ID } from '../storage/migrations.js';
import type { TokenRecord, TokenStore, TokenWithAccount } from '../storage/types.js';
import type { VerificationCache } from './cache.js';
import { checkSecret, generateSecret, hashSecret } from './format.js';
import { newTokenId } from './ids.js';
import type { LastUsedTracker } from './last-used.js';
import { validateCreate, type Caller, type CreateTokenInput } from './rules.js';
import { missingScopes, type ScopeRegistry } from './scopes.js';

export interface TokenServiceOptions {
  prefix: string;
  registry: ScopeRegistry;
  /** Most live (unexpired) tokens one account may hold. */
  maxLive: number;
  /** Longest allowed lifetime of a token created with expires_at. */
  maxLifetimeMs: number;
  /** How long expired tokens stay listed before they are purged. */
  expiredRetentionMs: number;
  cache: VerificationCache;
  tracker: LastUsedTracker;
  now?: () => number;
}

// Anything else cannot be an id we issued (tok_ + ULID; older or imported ids are still
// plain ASCII). Checked before storage: PostgreSQL rejects some strings (NUL) outright.
const PLAUSIBLE_ID = /^[A-Za-z0-9_-]{1,100}$/;

export type VerifyFailure = 'format' | 'checksum' | 'unknown' | 'expired' | 'suspended';
export type VerifyResult = { ok: true; token: TokenWithAccount } | { ok: false; reason: VerifyFailure };

/**
 * Runs a verification's storage lookup by hash (`read`), possibly after a wait, or answers
 * null (unknown) without one: the failed-authentication limiter's per-address gate.
 */
export type LookupGate = (
  hash: string,
  read: () => Promise<TokenWithAccount | null>,
) => Promise<TokenWithAccount | null>;

export interface IssuedToken {
  token: TokenRecord;
  /** The secret: returned once, never stored. */
  secret: string;
}

export class TokenService {
  readonly registry: ScopeRegistry;
  readonly prefix: string;
  /** Verification outcomes since start (metrics). */
  readonly verifications: Record<VerifyFailure | 'ok' | 'error', number> = {
    ok: 0,
    format: 0,
    checksum: 0,
    unknown: 0,
    expired: 0,
    suspended: 0,
    error: 0,
  };
  private readonly now: () => number;

  constructor(
    private readonly store: TokenStore,
    private readonly options: TokenServiceOptions,
  ) {
    this.registry = options.registry;
    this.prefix = options.prefix;
    this.now = options.now ?? Date.now;
  }

  /**
   * Issues a token in account `accountId`. `caller` is the token making the request, or
   * null for the operator (CLI, bootstrap), who may grant any registered scope and any
   * lifetime. A token can grant only scopes it holds, and the new token never outlives
   * it (rules.ts); only the operator account's tokens may hold accounts:* scopes.
   * An account that does not exist is NOT_FOUND.
   */
  async create(input: CreateTokenInput, caller: Caller | null, accountId: string): Promise<IssuedToken> {
    const now = this.now();
    const checked = validateCreate(input, {
      registry: this.registry,
      now,
      maxLifetimeMs: this.options.maxLifetimeMs,
      caller,
      operatorAccount: accountId === OPERATOR_ACCOUNT_ID,
    });
    if ('errors' in checked) {
      const scopeProblem = checked.errors.some((e) => e.pointer.startsWith('/scopes'));
      throw new AppError('VALIDATION_FAILED', 'the token request is invalid; see errors', {
        errors: checked.errors,
        ...(scopeProblem ? { members: { valid_scopes: this.registry.names() } } : {}),
      });
    }
    const { name, scopes, expiresAt } = checked.value;
    if (caller !== null) refuseUnheld(caller, scopes, 'a token cannot grant scopes it does not hold');
    const secret = generateSecret(this.prefix);
    const token: TokenRecord = {
      id: newTokenId(now),
      name,
      scopes,
      secretHash: hashSecret(secret),
      createdAt: now,
      expiresAt,
      lastUsedAt: null,
      accountId,
    };
    const result = await this.store.create(token, { maxLive: this.options.maxLive, now });
    if (result === 'no_account') throw new AppError('NOT_FOUND', `no account with id ${accountId}`);
    if (result === 'limit_reached') {
      throw new AppError(
        'TOKEN_LIMIT_REACHED',
        `at most ${this.options.maxLive} live tokens may exist in an account; delete one first`,
      );
    }
    return { token, secret };
  }

  /**
   * The first-start bootstrap, decided once per database ever: on its first start, a
   * database holding no token gets one with every registered scope (unless `mint` is
   * false: BOOTSTRAP_ADMIN_TOKEN=false). Null when nothing was minted: turned off,
   * another instance or an earlier start decided, or tokens already existed. Deleting
   * every token later never brings it back; recovery is an explicit operator command.
   */
  async bootstrapAdmin(mint: boolean): Promise<IssuedToken | null> {
    if (!mint) {
      await this.store.bootstrap(null);
      return null;
    }
    const now = this.now();
    const secret = generateSecret(this.prefix);
    const token: TokenRecord = {
      id: newTokenId(now),
      name: 'admin (bootstrap)',
      scopes: this.registry.names(),
      secretHash: hashSecret(secret),
      createdAt: now,
      expiresAt: null,
      lastUsedAt: null,
      // The first-start admin belongs to the operator account.
      accountId: OPERATOR_ACCOUNT_ID,
    };
    return (await this.store.bootstrap(token)) ? { token, secret } : null;
  }

  /**
   * The account's tokens, oldest first: live ones and those expired within the retention,
   * with uses not yet flushed counted.
   */
  async list(accountId: string): Promise<TokenRecord[]> {
    return (await this.store.list(accountId, this.retainedSince())).map((t) => this.withPendingUse(t));
  }

  /**
   * A token of the account by id, or null (unknown, another account's, deleted, or expired
   * longer ago than the retention): another account's token is answered exactly as an
   * unknown one. An expired token is still shown, so its owner can see why it stopped working.
   */
  async get(accountId: string, id: string): Promise<TokenRecord | null> {
    if (!PLAUSIBLE_ID.test(id)) return null;
    const token = await this.store.get(accountId, id);
    return token === null || this.isExpired(token, this.retainedSince()) ? null : this.withPendingUse(token);
  }

  /** Deletes the tokens that expired before the retention period; resolves to how many. */
  purgeExpired(): Promise<number> {
    return this.store.purgeExpired(this.retainedSince());
  }

  /** Expired tokens stay visible until this long after their expiry. */
  private retainedSince(): number {
    return this.now() - this.options.expiredRetentionMs;
  }

  /**
   * Deletes a token of the account; false when the account has no such id (another
   * account's token included: answered alike). `caller` is the token making the request,
   * or null for the operator (CLI). As for creation, a token may delete only tokens
   * whose scopes it holds (itself included): otherwise INSUFFICIENT_SCOPE. An unknown
   * id is false before any scope is compared, so it answers alike whoever asks.
   * (Between the read and the delete the target cannot change: scopes and secret hash
   * are immutable.)
   */
  async delete(accountId: string, id: string, caller: Caller | null): Promise<boolean> {
    if (!PLAUSIBLE_ID.test(id)) return false;
    const target = await this.store.get(accountId, id);
    if (caller !== null) {
      if (target === null) return false;
      refuseUnheld(caller, target.scopes, 'a token can only delete tokens whose scopes it holds itself; it lacks');
    }
    const deleted = await this.store.delete(accountId, id);
    // After the storage delete, so a verification that reads storage later finds nothing,
    // and one whose read began earlier is neither cached nor joined (cache.ts). Evicted
    // even when already gone from storage: this instance may still cache it.
    this.options.cache.evict(id, target?.secretHash, accountId);
    this.options.tracker.forget(id);
    return deleted;
  }

  /**
   * Checks a presented secret. Shape and checksum are checked offline (a typo or a
   * made-up string costs no storage lookup); known tokens come from the cache while
   * fresh; otherwise the storage lookup goes through `gate` when one is given. Storage
   * errors propagate: verification fails closed.
   */
  async verify(secret: string, gate?: LookupGate): Promise<VerifyResult> {
    return this.verifyFromMemory(secret) ?? (await this.verifyFromStorage(secret, gate));
  }

  /**
   * verify() when it needs no storage: a malformed secret, or a token the cache holds
   * (fresh); undefined when it takes a lookup. Synchronous, for the request path.
   */
  verifyFromMemory(secret: string): VerifyResult | undefined {
    const shape = checkSecret(secret, this.prefix);
    if (!shape.ok) return this.counted({ ok: false, reason: shape.reason });
    const token = this.options.cache.get(hashSecret(secret));
    if (token === undefined) return undefined;
    return this.counted(this.judge(token));
  }

  private counted(result: VerifyResult): VerifyResult {
    this.verifications[result.ok ? 'ok' : result.reason] += 1;
    return result;
  }

  /** The storage half of verify(), once verifyFromMemory() returned undefined for `secret`. */
  async verifyFromStorage(secret: string, gate?: LookupGate): Promise<VerifyResult> {
    try {
      return this.counted(await this.lookUp(secret, gate));
    } catch (err) {
      this.verifications.error += 1;
      throw err;
    }
  }

  private async lookUp(secret: string, gate?: LookupGate): Promise<VerifyResult> {
    const hash = hashSecret(secret);
    const { cache } = this.options;
    // At the gate the load may wait its turn; it then finds in the cache what others learnt meanwhile.
    const token = (await (gate === undefined ? cache.load(hash) : gate(hash, () => cache.load(hash)))) ?? undefined;
    if (token === undefined) return { ok: false, reason: 'unknown' };
    // Judged after the lookup: a gated one may have waited its turn.
    return this.judge(token);
  }

  /** A found token's verdict: its account's status travels with it (one read, cached together), then its expiry. */
  private judge(token: TokenWithAccount): VerifyResult {
    if (token.accountStatus !== 'active') return { ok: false, reason: 'suspended' };
    if (this.isExpired(token)) return { ok: false, reason: 'expired' };
    return { ok: true, token };
  }

  /** Counts a successful authentication towards last_used_at (written in batches). */
  recordUse(token: TokenRecord): void {
    this.options.tracker.record(token.id, this.now());
  }

  withPendingUse(token: TokenRecord): TokenRecord {
    const pending = this.options.tracker.pending(token.id);
    if (pending === undefined || (token.lastUsedAt !== null && token.lastUsedAt >= pending)) return token;
    return { ...token, lastUsedAt: pending };
  }

  private isExpired(token: TokenRecord, now = this.now()): boolean {
    return token.expiresAt !== null && token.expiresAt <= now;
  }
}

/** 403 INSUFFICIENT_SCOPE unless `caller` holds every one of `scopes` (write implies read). */
function refuseUnheld(caller: Caller, scopes: readonly string[], why: string): void {
  const missing = missingScopes(caller.scopes, scopes);
  if (missing.length > 0) {
    throw new AppError('INSUFFICIENT_SCOPE', `${why}: ${missing.join(', ')}`, {
      members: { missing_scopes: missing },
    });
  }
}
