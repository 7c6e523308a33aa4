// The token domain: issue, list, delete and verify API tokens. Knows the rules and
// the storage interface; knows nothing of HTTP or SQL.
import type { AuditContext } from '../audit/context.js';
import { SYSTEM_CONTEXT } from '../audit/context.js';
import { auditEvent, NO_SINK, tokenTarget, type AuditAction, type AuditSink } from '../audit/events.js';
import { AppError } from '../errors.js';
import { OPERATOR_ACCOUNT_ID } from '../storage/migrations.js';
import type {
  AuditEventRecord,
  LastUsePosition,
  TokenRecord,
  TokenStore,
  TokenWithAccount,
  UsageCell,
} from '../storage/types.js';
import type { BlockList } from 'node:net';
import { inBatches } from '../periodic.js';
import { pageBy, pageOf, type LastUsePage, type ListPage, type Page } from './query.js';
import type { VerificationCache } from './cache.js';
import { addressAllowed, cidrWithin, compileCidrs, type ClientAddress } from './conditions.js';
import { checkSecret, generateSecret, hashSecret } from './format.js';
import { newTokenId } from './ids.js';
import type { LastUsedTracker } from './last-used.js';
import { readUsageRange, type UsageTracker } from './usage.js';
import { isUsageReason, type UsageOutcome } from './usage-reasons.js';
import { inGrace, isExpired, verdictOf, type SecretKind } from './verdict.js';
import {
  notBeforeProblem,
  validateCreate,
  validatePatch,
  validateRotate,
  type Caller,
  type CreateTokenInput,
  type PatchTokenInput,
  type RotateTokenInput,
  type RuleContext,
} from './rules.js';
import { missingScopes, type ScopeRegistry } from './scopes.js';

export interface TokenServiceOptions {
  prefix: string;
  registry: ScopeRegistry;
  /** Most live (unexpired) tokens one account may hold. */
  maxLive: number;
  /**
   * Most tokens one account keeps stored, live and expired alike: creating one more purges
   * the account's earliest-expired tokens first. At least maxLive.
   */
  maxStored: number;
  /** Longest allowed lifetime of a token created with expires_at. */
  maxLifetimeMs: number;
  /** How long expired tokens stay listed before they are purged. */
  expiredRetentionMs: number;
  /** How long hourly usage counts are kept (TOKEN_USAGE_RETENTION_DAYS); 0 or absent: forever. */
  usageRetentionMs?: number;
  cache: VerificationCache;
  tracker: LastUsedTracker;
  /** Each token's uses per hour (written in batches). */
  usage: UsageTracker;
  /** Told of each audit event once written (the audit log line). */
  audit?: AuditSink;
  now?: () => number;
}

/** What a leak report says about where a secret was found (GitHub's fields; never the secret). */
export interface LeakReport {
  type: string | null;
  url: string | null;
  source: string | null;
}

// Expired tokens purged per transaction: a backlog is worked off in short transactions,
// with a turn of the event loop between them (src/periodic.ts). Small: on SQLite a batch
// (a delete and an event per token, several indexes each) holds the event loop while it
// runs, measured at about 15 ms for 50 on a loaded machine.
const PURGE_BATCH = 50;
// Usage rows pruned per statement: one range of the (hour, token_id) index.
const USAGE_PRUNE_BATCH = 1000;
// A leak report's free-text fields, as kept in the event.
const LEAK_FIELD_MAX = 2048;

// Anything else cannot be an id we issued (tok_ + ULID; older or imported ids are still
// plain ASCII). Checked before storage: PostgreSQL rejects some strings (NUL) outright.
const PLAUSIBLE_ID = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * Why a secret was refused. After the token is found: `suspended` (its account),
 * `expired`, `disabled` (enabled: false), `not_yet_valid` (before not_before), `address`
 * (the client address is outside allowed_cidrs, or unknown).
 */
export type VerifyFailure =
  'format' | 'checksum' | 'unknown' | 'expired' | 'suspended' | 'disabled' | 'not_yet_valid' | 'address';
/** Refusals of a request whose token verified: a missing scope, the rate limit. */
export type RefusedAfterVerification = 'scope' | 'rate_limited';
export type { SecretKind } from './verdict.js';
export type VerifyResult =
  { ok: true; token: TokenWithAccount; secret: SecretKind } | { ok: false; reason: VerifyFailure };

/**
 * Runs a verification's storage lookup by hash (`read`), possibly after a wait, or answers
 * null (unknown) without one: the failed-authentication limiter's per-address gate.
 */
export type LookupGate = (
  hash: string,
  read: () => Promise<TokenWithAccount | null>,
) => Promise<TokenWithAccount | null>;

export interface VerifyOptions {
  /** Where a storage lookup goes (the failed-authentication limiter's gate); none: straight to storage. */
  gate?: LookupGate;
  /**
   * false: a success is not recorded as a use here; the caller records it (introspection,
   * where another account's token is answered as unknown and is no use). Default true.
   * A refusal of a found token is counted against it either way.
   */
  recordUse?: boolean;
  /**
   * The client address the token is presented from, judged against its allowed_cidrs and
   * recorded with a use (last_used_ip). Absent or unknown: a token with allowed_cidrs is
   * refused (fail closed).
   */
  address?: ClientAddress;
}

const DEFAULT_VERIFY: VerifyOptions = {};

export interface IssuedToken {
  token: TokenRecord;
  /** The secret: returned once, never stored. */
  secret: string;
}

export class TokenService {
  readonly registry: ScopeRegistry;
  readonly prefix: string;
  /**
   * Verification outcomes since start (metrics), and the requests of verified tokens refused
   * afterwards: for a missing scope (auth) or over the rate limit (the rate limiter).
   */
  readonly verifications: Record<VerifyFailure | 'ok' | 'error' | RefusedAfterVerification, number> = {
    ok: 0,
    format: 0,
    checksum: 0,
    unknown: 0,
    expired: 0,
    suspended: 0,
    disabled: 0,
    not_yet_valid: 0,
    address: 0,
    error: 0,
    scope: 0,
    rate_limited: 0,
  };
  /**
   * Each cached token's allowed_cidrs as a BlockList, made on its first verification: a
   * cache hit finds the same record, so a request compiles nothing. Dropped with the record.
   */
  private readonly compiledCidrs = new WeakMap<TokenRecord, BlockList>();
  private readonly now: () => number;
  private readonly audit: AuditSink;

  constructor(
    private readonly store: TokenStore,
    private readonly options: TokenServiceOptions,
  ) {
    this.registry = options.registry;
    this.prefix = options.prefix;
    this.now = options.now ?? Date.now;
    this.audit = options.audit ?? NO_SINK;
  }

  /** The event of a change to `token` by `context`, in the token's account. */
  private event(
    action: AuditAction,
    token: Pick<TokenRecord, 'id' | 'name' | 'accountId'>,
    context: AuditContext,
    now: number,
    details?: Record<string, unknown>,
  ) {
    return auditEvent({
      action,
      target: tokenTarget(token),
      accountId: token.accountId,
      context,
      now,
      details,
    });
  }

  private rules(caller: Caller | null, accountId: string, now: number): RuleContext {
    return {
      registry: this.registry,
      now,
      maxLifetimeMs: this.options.maxLifetimeMs,
      caller,
      operatorAccount: accountId === OPERATOR_ACCOUNT_ID,
    };
  }

  /**
   * Issues a token in account `accountId`. `caller` is the token making the request, or
   * null for the operator (CLI, bootstrap), who may grant any registered scope and any
   * lifetime. A token can grant only scopes it holds, and the new token never outlives
   * it (rules.ts); only the operator account's tokens may hold accounts:* scopes.
   * An account that does not exist is NOT_FOUND.
   */
  async create(
    input: CreateTokenInput,
    caller: Caller | null,
    accountId: string,
    context: AuditContext,
  ): Promise<IssuedToken> {
    const now = this.now();
    const checked = validateCreate(input, this.rules(caller, accountId, now));
    if ('errors' in checked) throw this.invalid(accountId, 'the token request is invalid; see errors', checked.errors);
    const { name, scopes, expiresAt, allowedCidrs, notBefore, enabled } = checked.value;
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
      lastUsedIp: null,
      accountId,
      previousSecretHash: null,
      previousExpiresAt: null,
      allowedCidrs,
      notBefore,
      enabled,
    };
    const event = this.event('api_token.created', token, context, now, {
      scopes,
      expires_at: isoOrNull(expiresAt),
      allowed_cidrs: allowedCidrs,
      not_before: isoOrNull(notBefore),
      enabled,
    });
    // The expired tokens purged to keep the account within TOKEN_MAX_STORED: by infracat
    // itself, as the background purge, in the transaction of the creation that needed room.
    const purged: AuditEventRecord[] = [];
    const stored = {
      max: this.options.maxStored,
      eventFor: (expired: TokenRecord) => {
        const purge = this.event('api_token.expired_purged', expired, SYSTEM_CONTEXT, now, {
          expires_at: isoOrNull(expired.expiresAt),
          reason: 'max_stored',
        });
        purged.push(purge);
        return purge;
      },
    };
    const result = await this.store.create(token, { maxLive: this.options.maxLive, now, stored }, event);
    if (result === 'no_account') throw new AppError('NOT_FOUND', `no account with id ${accountId}`);
    if (result === 'limit_reached') {
      throw new AppError(
        'TOKEN_LIMIT_REACHED',
        `at most ${this.options.maxLive} live tokens may exist in an account; delete one first`,
      );
    }
    // The transaction committed: the purges (each written) came before the creation.
    for (const purge of purged) this.audit(purge);
    this.audit(event);
    return { token, secret };
  }

  /** The 422 of a request about a token of `accountId`: `valid_scopes` are those its tokens may hold. */
  private invalid(accountId: string, message: string, errors: { pointer: string; detail: string }[]): AppError {
    const scopeProblem = errors.some((e) => e.pointer.startsWith('/scopes'));
    const validScopes = () => this.registry.namesFor(accountId === OPERATOR_ACCOUNT_ID);
    return new AppError('VALIDATION_FAILED', message, {
      errors,
      ...(scopeProblem ? { members: { valid_scopes: validScopes() } } : {}),
    });
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
      await this.store.bootstrap(null, null);
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
      lastUsedIp: null,
      // The first-start admin belongs to the operator account.
      accountId: OPERATOR_ACCOUNT_ID,
      previousSecretHash: null,
      previousExpiresAt: null,
      allowedCidrs: null,
      notBefore: null,
      enabled: true,
    };
    const event = this.event('api_token.created', token, SYSTEM_CONTEXT, now, {
      scopes: token.scopes,
      expires_at: null,
      bootstrap: true,
    });
    if (!(await this.store.bootstrap(token, event))) return null;
    this.audit(event);
    return { token, secret };
  }

  /**
   * One page of the account's tokens, oldest first: live ones and those expired within the
   * retention, with uses not yet flushed counted.
   */
  async list(accountId: string, page: ListPage): Promise<Page<TokenRecord>> {
    // One more than a page: whether another page follows, without a count.
    const rows = await this.store.list(accountId, this.retainedSince(), { after: page.after, limit: page.perPage + 1 });
    const { items, next } = pageOf(rows, page.perPage);
    return { items: items.map((t) => this.withPendingUse(t)), next };
  }

  /**
   * One page of the same tokens by last use: the most recently used first, never-used ones
   * last, ties by id. The order (and the next position) is the stored last_used_at's; a use
   * not yet flushed (at most LAST_USED_FLUSH_MS old) shows in the token but moves it only
   * once written.
   */
  async listByLastUse(accountId: string, page: LastUsePage): Promise<Page<TokenRecord, LastUsePosition>> {
    const rows = await this.store.listByLastUse(accountId, this.retainedSince(), {
      after: page.after,
      limit: page.perPage + 1,
    });
    const { items, next } = pageBy(rows, page.perPage, (last) => ({ lastUsedAt: last.lastUsedAt, id: last.id }));
    return { items: items.map((t) => this.withPendingUse(t)), next };
  }

  /**
   * A token of the account by id, or null (unknown, another account's, deleted, or expired
   * longer ago than the retention): another account's token is answered exactly as an
   * unknown one. An expired token is still shown, so its owner can see why it stopped working.
   */
  async get(accountId: string, id: string): Promise<TokenRecord | null> {
    if (!PLAUSIBLE_ID.test(id)) return null;
    const token = await this.store.get(accountId, id);
    return token === null || isExpired(token, this.retainedSince()) ? null : this.withPendingUse(token);
  }

  /**
   * A token's hourly usage in the range a query asks for (usage.ts readUsageRange; a bad
   * one is INVALID_QUERY), oldest first, or null when the account has no such
   * token (as get(): another account's token is answered as an unknown one). Hours with no
   * use have no row. What this and the other instances counted but have not flushed yet
   * (at most a flush interval's uses) is not in it yet.
   */
  async usage(
    accountId: string,
    id: string,
    query: { since?: string | undefined; until?: string | undefined },
  ): Promise<UsageCell[] | null> {
    const read = readUsageRange(query, this.now());
    if ('errors' in read) {
      const names = [...new Set(read.errors.map((e) => e.pointer.replace('querystring:/', '')))].join(', ');
      throw new AppError('INVALID_QUERY', `invalid query parameter ${names}`, { errors: read.errors });
    }
    if ((await this.get(accountId, id)) === null) return null;
    return this.store.usage(id, read.range.from, read.range.to);
  }

  /**
   * Deletes hourly usage older than TOKEN_USAGE_RETENTION_DAYS, in batches; resolves to how
   * many rows. A deleted token's rows go the same way: nothing reads them (ids are never
   * reused), and rows another instance flushes after the delete would outlive any delete.
   */
  pruneUsage(): Promise<number> {
    const retention = this.options.usageRetentionMs ?? 0;
    if (retention === 0) return Promise.resolve(0);
    return inBatches(USAGE_PRUNE_BATCH, () => this.store.pruneUsage(this.now() - retention, USAGE_PRUNE_BATCH));
  }

  /**
   * Deletes the tokens that expired before the retention period, each with its
   * `api_token.expired_purged` event (by infracat itself); resolves to how many.
   */
  purgeExpired(): Promise<number> {
    return inBatches(PURGE_BATCH, async () => {
      const now = this.now();
      const events: AuditEventRecord[] = [];
      const purged = await this.store.purgeExpired(this.retainedSince(), PURGE_BATCH, (token) => {
        const event = this.event('api_token.expired_purged', token, SYSTEM_CONTEXT, now, {
          expires_at: isoOrNull(token.expiresAt),
        });
        events.push(event);
        return event;
      });
      // The transaction committed: these events are written (a token deleted meanwhile
      // by someone else made no event, so only as many as were purged).
      for (const event of events.slice(0, purged)) this.audit(event);
      return purged;
    });
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
  async delete(accountId: string, id: string, caller: Caller | null, context: AuditContext): Promise<boolean> {
    if (!PLAUSIBLE_ID.test(id)) return false;
    const target = await this.store.get(accountId, id);
    if (caller !== null) {
      if (target === null) return false;
      refuseUnheld(caller, target.scopes, 'a token can only delete tokens whose scopes it holds itself; it lacks');
    }
    // Already gone from storage (ids are never reused): nothing to delete or audit, but
    // this instance may still cache it.
    const event = target === null ? null : this.event('api_token.deleted', target, context, this.now());
    const deleted = event !== null && (await this.store.delete(accountId, id, event));
    // After the storage delete, so a verification that reads storage later finds nothing,
    // and one whose read began earlier is neither cached nor joined (cache.ts).
    this.forget(accountId, id, target);
    this.options.tracker.forget(id);
    if (deleted && event !== null) this.audit(event);
    return deleted;
  }

  /**
   * Drops this instance's cached verifications of a token that changed (every secret it
   * had), after the storage write: the next verification reads the token as it is now.
   */
  private forget(accountId: string, id: string, before: TokenRecord | null): void {
    const { cache } = this.options;
    if (before === null) {
      cache.evict(id, undefined, accountId);
      return;
    }
    cache.evict(id, before.secretHash, accountId);
    if (before.previousSecretHash !== null) cache.evict(id, before.previousSecretHash, accountId);
  }

  /**
   * Gives a token of the account a new secret (returned once, like at creation); null when
   * the account has no such id. The secret current until now keeps working for the grace
   * period (0: refused at once), replacing any earlier previous secret (at most two live
   * secrets). A token may rotate only tokens it could delete (it holds their scopes), and
   * a new `expires_at` follows the creation rules. Without one the token keeps its expiry,
   * capped at the caller's: the caller is handed a working secret, and like a token it
   * creates, that secret never outlives the caller. An expired token is not rotated
   * (CONFLICT): its new secret would not work, and reviving it with a new expiry would
   * bypass the cap on live tokens.
   */
  async rotate(
    accountId: string,
    id: string,
    input: RotateTokenInput,
    caller: Caller | null,
    context: AuditContext,
  ): Promise<IssuedToken | null> {
    if (!PLAUSIBLE_ID.test(id)) return null;
    const now = this.now();
    const checked = validateRotate(input, this.rules(caller, accountId, now));
    if ('errors' in checked)
      throw this.invalid(accountId, 'the rotation request is invalid; see errors', checked.errors);
    const target = await this.store.get(accountId, id);
    if (target === null || isExpired(target, this.retainedSince())) return null;
    if (caller !== null) {
      refuseUnheld(caller, target.scopes, 'a token can only rotate tokens whose scopes it holds itself; it lacks');
      refuseWider(caller, target, target.allowedCidrs, 'rotate');
    }
    if (isExpired(target, now)) {
      throw new AppError(
        'CONFLICT',
        `token ${id} expired at ${isoOrNull(target.expiresAt)}: an expired token cannot be rotated; create a new one`,
      );
    }
    const { graceMs, expiresAt } = checked.value;
    const secret = generateSecret(this.prefix);
    const previousExpiresAt = graceMs > 0 ? now + graceMs : null;
    const newExpiry = expiresAt === undefined ? earlier(target.expiresAt, caller?.expiresAt ?? null) : expiresAt;
    const event = this.event('api_token.rotated', target, context, now, {
      grace_period_s: graceMs / 1000,
      previous_secret_valid_until: isoOrNull(previousExpiresAt),
      expires_at: isoOrNull(newExpiry),
    });
    const rotated = await this.store.rotate(
      accountId,
      id,
      { secretHash: hashSecret(secret), previousExpiresAt, expiresAt: newExpiry },
      event,
    );
    this.forget(accountId, id, target);
    if (rotated === null) return null;
    this.audit(event);
    return { token: this.withPendingUse(rotated), secret };
  }

  /**
   * Applies a merge patch (name, scopes) to a token of the account; null when no such id.
   * As at creation, a token grants only scopes it holds, and edits only tokens it could
   * delete. A narrowed token is refused at once on this instance (its cached entries go).
   */
  async update(
    accountId: string,
    id: string,
    patch: PatchTokenInput,
    caller: Caller | null,
    context: AuditContext,
  ): Promise<TokenRecord | null> {
    if (!PLAUSIBLE_ID.test(id)) return null;
    const now = this.now();
    const checked = validatePatch(patch, this.rules(caller, accountId, now));
    if ('errors' in checked) throw this.invalid(accountId, 'the token patch is invalid; see errors', checked.errors);
    const target = await this.store.get(accountId, id);
    if (target === null || isExpired(target, this.retainedSince())) return null;
    const { name, scopes, allowedCidrs, notBefore, enabled } = checked.value;
    if (caller !== null) {
      refuseUnheld(caller, target.scopes, 'a token can only edit tokens whose scopes it holds itself; it lacks');
      if (scopes !== undefined) refuseUnheld(caller, scopes, 'a token cannot grant scopes it does not hold');
      // A list in the patch was checked against the caller's (rules.ts); a kept one is checked here.
      if (allowedCidrs === undefined) refuseWider(caller, target, target.allowedCidrs, 'edit');
    }
    const never = notBeforeProblem(notBefore === undefined ? target.notBefore : notBefore, target.expiresAt);
    if (never !== null) throw this.invalid(accountId, 'the token patch is invalid; see errors', [never]);
    const changes: Record<string, unknown> = {};
    if (name !== undefined && name !== target.name) changes.name = { from: target.name, to: name };
    if (scopes !== undefined && !sameList(scopes, target.scopes)) changes.scopes = { from: target.scopes, to: scopes };
    if (allowedCidrs !== undefined && !sameOrBothNull(allowedCidrs, target.allowedCidrs))
      changes.allowed_cidrs = { from: target.allowedCidrs, to: allowedCidrs };
    if (notBefore !== undefined && notBefore !== target.notBefore)
      changes.not_before = { from: isoOrNull(target.notBefore), to: isoOrNull(notBefore) };
    if (enabled !== undefined && enabled !== target.enabled) changes.enabled = { from: target.enabled, to: enabled };
    if (Object.keys(changes).length === 0) return this.withPendingUse(target);
    const event = this.event('api_token.updated', target, context, now, { changes });
    const updated = await this.store.update(
      accountId,
      id,
      {
        name,
        scopes,
        ...(changes.allowed_cidrs !== undefined ? { allowedCidrs } : {}),
        ...(changes.not_before !== undefined ? { notBefore } : {}),
        ...(changes.enabled !== undefined ? { enabled } : {}),
      },
      event,
    );
    this.forget(accountId, id, target);
    if (updated === null) return null;
    this.audit(event);
    return this.withPendingUse(updated);
  }

  /**
   * Revokes the token a leaked secret belongs to (a secret scanning report): its current
   * secret deletes the token; its previous secret, still in its grace period, ends the
   * grace period at once (the token keeps its current secret). Each is audited as
   * `api_token.revoked_leaked` with where the secret was found. True when something was
   * revoked; false for a malformed secret, an unknown one, a secret no longer valid.
   */
  async revokeLeaked(secret: string, leak: LeakReport, context: AuditContext): Promise<boolean> {
    if (!checkSecret(secret, this.prefix).ok) return false;
    const hash = hashSecret(secret);
    const token = await this.store.findByHash(hash);
    if (token === null) return false;
    const now = this.now();
    const current = token.secretHash === hash;
    if (current ? isExpired(token, now) : !inGrace(token, now)) return false;
    const event = this.event('api_token.revoked_leaked', token, context, now, {
      secret: current ? 'current' : 'previous',
      type: clip(leak.type),
      url: clip(leak.url),
      source: clip(leak.source),
    });
    const revoked = current
      ? await this.store.delete(token.accountId, token.id, event)
      : await this.store.endGrace(token.accountId, token.id, hash, event);
    this.forget(token.accountId, token.id, token);
    if (current) this.options.tracker.forget(token.id);
    if (revoked) this.audit(event);
    return revoked;
  }

  /**
   * The one verification of a presented secret, for every path (API authentication,
   * forward auth, introspection, token exchange): shape and checksum checked offline (a
   * typo or a made-up string costs no storage lookup), the secret hashed once, the cache
   * consulted, and on a miss the storage lookup made (through `options.gate` when given);
   * then the token judged and the outcome counted once, a success also as a use
   * (last_used_at) unless `options.recordUse` is false. Storage errors propagate (counted
   * as `error`): verification fails closed.
   */
  async verify(secret: string, options: VerifyOptions = DEFAULT_VERIFY): Promise<VerifyResult> {
    const shape = checkSecret(secret, this.prefix);
    if (!shape.ok) return this.counted({ ok: false, reason: shape.reason }, options);
    const hash = hashSecret(secret);
    const { cache } = this.options;
    const cached = cache.get(hash);
    if (cached !== undefined) return this.counted(this.judge(cached, hash, options.address), options, cached);
    const { gate } = options;
    let token: TokenWithAccount | null;
    try {
      // At the gate the load may wait its turn; it then finds in the cache what others learnt meanwhile.
      token = await (gate === undefined ? cache.load(hash) : gate(hash, () => cache.load(hash)));
    } catch (err) {
      this.verifications.error += 1;
      throw err;
    }
    // Judged after the lookup: a gated one may have waited its turn.
    if (token === null) return this.counted({ ok: false, reason: 'unknown' }, options);
    return this.counted(this.judge(token, hash, options.address), options, token);
  }

  /**
   * Counts a verification's outcome (metrics) and, for a found token, its use: a success
   * as a use (last_used_at and usage) unless the caller records it, a refusal for one of
   * the usage reasons (usage-reasons.ts) against the token. A secret of no token (or a
   * previous secret past its grace period) has no token to count against.
   */
  private counted(result: VerifyResult, options: VerifyOptions, token?: TokenRecord): VerifyResult {
    this.verifications[result.ok ? 'ok' : result.reason] += 1;
    if (result.ok) {
      const { address } = options;
      if (options.recordUse !== false) this.recordUse(result.token, address?.known === true ? address.address : null);
    } else if (token !== undefined && isUsageReason(result.reason)) this.countUse(token.id, result.reason);
    return result;
  }

  /**
   * A found token's verdict (verdict.ts: grace period, account status, expiry, enabled,
   * not_before), then the client address against allowed_cidrs (an unknown address fails
   * them).
   */
  private judge(token: TokenWithAccount, hash: string, address: ClientAddress | undefined): VerifyResult {
    const verdict = verdictOf(token, hash, this.now());
    if (!verdict.ok) return verdict;
    if (
      token.allowedCidrs !== null &&
      (address?.known !== true || !this.fromAllowed(token, token.allowedCidrs, address.address))
    )
      return { ok: false, reason: 'address' };
    return { ok: true, token, secret: verdict.secret };
  }

  private fromAllowed(token: TokenRecord, cidrs: readonly string[], address: string): boolean {
    let list = this.compiledCidrs.get(token);
    if (list === undefined) {
      list = compileCidrs(cidrs);
      this.compiledCidrs.set(token, list);
    }
    return addressAllowed(list, address);
  }

  /** Counts a successful authentication towards last_used_at (with the client address) and usage. */
  recordUse(token: TokenRecord, ip: string | null = null): void {
    const now = this.now();
    this.options.tracker.record(token.id, now, ip);
    this.options.usage.record(token.id, 'verified', now);
  }

  /**
   * Counts a request of a verified token that was refused afterwards: for a scope it lacks
   * (or a change made with a previous secret: auth) or over the rate limit. Such a request
   * is also among the token's verified uses; the usage view subtracts it.
   */
  recordRefusal(token: TokenRecord, reason: RefusedAfterVerification): void {
    this.verifications[reason] += 1;
    this.countUse(token.id, reason);
  }

  /** The one place a use is counted into a token's hourly usage. */
  private countUse(tokenId: string, outcome: UsageOutcome): void {
    this.options.usage.record(tokenId, outcome, this.now());
  }

  withPendingUse(token: TokenRecord): TokenRecord {
    const pending = this.options.tracker.pending(token.id);
    if (pending === undefined || (token.lastUsedAt !== null && token.lastUsedAt >= pending.at)) return token;
    return { ...token, lastUsedAt: pending.at, lastUsedIp: pending.ip ?? null };
  }
}

function isoOrNull(at: number | null): string | null {
  return at === null ? null : new Date(at).toISOString();
}

/** The earlier of two expiries (null: never). */
function earlier(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.min(a, b);
}

function clip(text: string | null): string | null {
  return text === null ? null : text.slice(0, LEAK_FIELD_MAX);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function sameOrBothNull(a: readonly string[] | null, b: readonly string[] | null): boolean {
  return a === null || b === null ? a === b : sameList(a, b);
}

/**
 * 403 CONDITIONS_NOT_HELD when a calling token limited to networks would rotate or edit a
 * token usable from outside them (`cidrs`, null: anywhere): it would hand out, or change,
 * a token that works where the caller does not.
 */
function refuseWider(caller: Caller, target: TokenRecord, cidrs: readonly string[] | null, verb: string): void {
  const limit = caller.allowedCidrs;
  if (limit === null) return;
  const outside = cidrs === null ? null : cidrs.filter((c) => !limit.some((outer) => cidrWithin(c, outer)));
  if (outside !== null && outside.length === 0) return;
  throw new AppError(
    'CONDITIONS_NOT_HELD',
    `a token limited to allowed_cidrs (${limit.join(', ')}) can only ${verb} tokens limited to networks within them; ` +
      `token ${target.id} may be used from ${outside === null ? 'anywhere' : outside.join(', ')}`,
  );
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
