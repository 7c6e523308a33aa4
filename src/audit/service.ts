// Reading the audit trail, and its retention. Knows the tenancy rule and the storage
// interface; nothing of HTTP or SQL. Events are written by the services that make the
// changes (in the change's transaction); this one only reads and prunes them.
import { isOperatorAccount } from '../accounts/ids.js';
import { AppError } from '../errors.js';
import { inBatches } from '../periodic.js';
import type { AuditEventRecord, AuditStore } from '../storage/types.js';
import type { AuditListQuery } from './query.js';

export interface AuditServiceOptions {
  /** How long events are kept, in ms; 0 keeps them forever (AUDIT_RETENTION_DAYS). */
  retentionMs: number;
  now?: () => number;
}

export interface AuditPage {
  /** Newest first (by id: a ULID, so time order). */
  events: AuditEventRecord[];
  /** The id of the last event when another page follows, else null. */
  next: string | null;
}

// Events deleted per transaction: a backlog (a lowered retention) goes in short steps, with
// a turn of the event loop between them (src/periodic.ts); one DELETE of 500 holds it for
// about as long as a batch of the token purge.
const PRUNE_BATCH = 500;

export class AuditService {
  private readonly now: () => number;

  constructor(
    private readonly store: AuditStore,
    private readonly options: AuditServiceOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /**
   * One page of the trail `viewerAccountId` may read. The operator account reads every
   * account's (or one account's, deleted ones included: their trail outlives them); any
   * other account its own only. Asking for another account is refused the same way
   * whether that account exists or not, so the answer tells nothing about it.
   */
  async list(viewerAccountId: string, query: AuditListQuery): Promise<AuditPage> {
    let accountId = query.accountId;
    if (!isOperatorAccount(viewerAccountId)) {
      if (accountId !== undefined && accountId !== viewerAccountId)
        throw new AppError(
          'INSUFFICIENT_SCOPE',
          "a token reads its own account's audit events only; only the operator account's tokens may name another",
        );
      accountId = viewerAccountId;
    }
    // One more than a page: whether another page follows, without a count.
    const rows = await this.store.list({
      accountId,
      action: query.action,
      targetId: query.targetId,
      since: query.since,
      until: query.until,
      before: query.before,
      limit: query.perPage + 1,
    });
    const events = rows.slice(0, query.perPage);
    return { events, next: rows.length > query.perPage ? events.at(-1)!.id : null };
  }

  /** Deletes events older than the retention (none when it is 0: kept forever); resolves to how many. */
  async prune(): Promise<number> {
    if (this.options.retentionMs === 0) return 0;
    return inBatches(PRUNE_BATCH, () => this.store.prune(this.now() - this.options.retentionMs, PRUNE_BATCH));
  }
}
