// The account domain: create, list, change and delete accounts (tenants). Knows the
// rules and the storage interface; knows nothing of HTTP or SQL. A change of status or
// rate limit, or a delete, evicts the account's cached verifications on this instance at
// once (the entry carries both); other instances hear of it within about a second
// (src/fleet/changes.ts), and re-read within TOKEN_CACHE_TTL_MS regardless.
import type { AuditContext } from '../audit/context.js';
import { accountTarget, auditEvent, NO_SINK, type AuditAction, type AuditSink } from '../audit/events.js';
import { AppError } from '../errors.js';
import type { AccountFilter, AccountRecord, AccountStatus, AccountStore } from '../storage/types.js';
import type { VerificationCache } from '../tokens/cache.js';
import { pageOf, type ListPage, type Page } from '../tokens/query.js';
import { validateName } from '../tokens/rules.js';
import { isOperatorAccount, newAccountId } from './ids.js';
import { validateCreateAccount, validateExternalId, type CreateAccountInput } from './rules.js';

// Anything else cannot be an id we issued; checked before storage (PostgreSQL refuses NUL).
const PLAUSIBLE_ID = /^[A-Za-z0-9_-]{1,100}$/;

export interface AccountServiceOptions {
  cache: VerificationCache;
  /** Told of each audit event once written (the audit log line). */
  audit?: AuditSink;
  now?: () => number;
}

/** A JSON merge patch of an account (RFC 7396): the fields present are set. */
export interface AccountPatch {
  name?: string | undefined;
  status?: AccountStatus | undefined;
  /** Requests per window for all the account's tokens together; null: the default (RATE_LIMIT_ACCOUNT). */
  rateLimit?: number | null | undefined;
}

export class AccountService {
  private readonly now: () => number;
  private readonly audit: AuditSink;

  constructor(
    private readonly store: AccountStore,
    private readonly options: AccountServiceOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.audit = options.audit ?? NO_SINK;
  }

  /** The event of a change to `account`: in that account's own trail (and the operator's). */
  private event(
    action: AuditAction,
    account: Pick<AccountRecord, 'id' | 'name'>,
    context: AuditContext,
    now: number,
    details?: Record<string, unknown>,
  ) {
    return auditEvent({
      action,
      target: accountTarget(account),
      accountId: account.id,
      context,
      now,
      details,
    });
  }

  /** Creates an active account; 422 for a bad name or external_id, 409 CONFLICT when the external_id is taken. */
  async create(input: CreateAccountInput, context: AuditContext): Promise<AccountRecord> {
    const checked = validateCreateAccount(input);
    if ('errors' in checked)
      throw new AppError('VALIDATION_FAILED', 'the account request is invalid; see errors', { errors: checked.errors });
    const now = this.now();
    const account: AccountRecord = {
      id: newAccountId(now),
      name: checked.value.name,
      externalId: checked.value.externalId,
      status: 'active',
      createdAt: now,
      rateLimit: null,
    };
    const event = this.event('account.created', account, context, now, { external_id: account.externalId });
    if ((await this.store.create(account, event)) === 'external_id_taken') {
      throw new AppError('CONFLICT', 'another account already has this external_id', {
        errors: [{ pointer: '/external_id', detail: 'is already the external_id of another account' }],
      });
    }
    this.audit(event);
    return account;
  }

  /** One page of the accounts matching the filters, oldest first. A malformed external_id filter is INVALID_QUERY. */
  async list(filter: AccountFilter, page: ListPage): Promise<Page<AccountRecord>> {
    if (filter.externalId !== undefined) {
      const bad = validateExternalId(filter.externalId, 'querystring:/external_id');
      if (bad !== null)
        throw new AppError('INVALID_QUERY', `invalid query parameter external_id: ${bad.detail}`, { errors: [bad] });
    }
    // One more than a page: whether another page follows, without a count.
    return pageOf(await this.store.list(filter, { after: page.after, limit: page.perPage + 1 }), page.perPage);
  }

  async get(id: string): Promise<AccountRecord | null> {
    return PLAUSIBLE_ID.test(id) ? this.store.get(id) : null;
  }

  /**
   * Applies a merge patch; null when no such account. The operator account's status
   * cannot become suspended (409 OPERATOR_ACCOUNT). An empty patch changes nothing.
   */
  async update(id: string, patch: AccountPatch, context: AuditContext): Promise<AccountRecord | null> {
    if (!PLAUSIBLE_ID.test(id)) return null;
    let name: string | undefined;
    if (patch.name !== undefined) {
      const checked = validateName(patch.name);
      if ('error' in checked)
        throw new AppError('VALIDATION_FAILED', 'the account patch is invalid; see errors', {
          errors: [checked.error],
        });
      name = checked.name;
    }
    if (patch.status === 'suspended' && isOperatorAccount(id)) {
      throw new AppError('OPERATOR_ACCOUNT', 'the operator account cannot be suspended: it runs the other accounts');
    }
    const before = await this.store.get(id);
    if (before === null) return null;
    const changes: Record<string, unknown> = {};
    if (name !== undefined && name !== before.name) changes.name = { from: before.name, to: name };
    if (patch.status !== undefined && patch.status !== before.status)
      changes.status = { from: before.status, to: patch.status };
    const rateLimit =
      patch.rateLimit !== undefined && patch.rateLimit !== before.rateLimit ? patch.rateLimit : undefined;
    if (rateLimit !== undefined) changes.rate_limit = { from: before.rateLimit, to: rateLimit };
    // Nothing changes (an empty patch, or the values it already has): nothing written or audited.
    if (Object.keys(changes).length === 0) return before;
    // A status change is the event's action (a rename with it is in its details).
    const action: AuditAction =
      changes.status === undefined
        ? 'account.updated'
        : patch.status === 'suspended'
          ? 'account.suspended'
          : 'account.resumed';
    const event = this.event(action, before, context, this.now(), { changes });
    const updated = await this.store.update(id, { name, status: patch.status, rateLimit }, event);
    // After the write: a verification that reads later sees the new status and limit, and
    // one whose read began earlier is not cached (cache.ts).
    if (patch.status !== undefined || rateLimit !== undefined) this.options.cache.evictAccount(id);
    if (updated !== null) this.audit(event);
    return updated;
  }

  /** Deletes the account and its tokens; false when no such account. The operator account: 409. */
  async delete(id: string, context: AuditContext): Promise<boolean> {
    if (!PLAUSIBLE_ID.test(id)) return false;
    if (isOperatorAccount(id)) {
      throw new AppError('OPERATOR_ACCOUNT', 'the operator account cannot be deleted: it runs the other accounts');
    }
    const account = await this.store.get(id);
    if (account === null) return false;
    const event = this.event('account.deleted', account, context, this.now());
    const deleted = await this.store.delete(id, event);
    this.options.cache.evictAccount(id);
    if (deleted) this.audit(event);
    return deleted;
  }
}
