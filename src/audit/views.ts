// Audit event records -> the wire shape (schemas.ts), as one reader may see them. The
// operator account's tokens (and the operator's own outputs: the audit log line, the CLI)
// see every event whole. A customer sees that the operator acted on its account or
// tokens, and nothing that identifies the operator's token, address or client: those
// belong to the operator, not to the customer's trail.
import { isOperatorAccount } from '../accounts/ids.js';
import type { AuditEventRecord } from '../storage/types.js';
import type { AuditAction } from './events.js';
import type { AuditActor, AuditEvent } from './schemas.js';

/** The operator as a customer sees it acting. */
export const OPERATOR_ACTOR: AuditActor = Object.freeze({ type: 'operator', id: null, name: null });

/**
 * Whether `actor`, acting for the account `actorAccountId`, is the operator as seen by a
 * reader of the account `readerAccountId`: the CLI always, a token of any account but the
 * reader's (only the operator's tokens act across accounts; an event whose token's
 * account is unknown counts as the operator's, so nothing of it shows).
 */
function seenAsOperator(
  actor: Pick<AuditActor, 'type'>,
  actorAccountId: string | null | undefined,
  readerAccountId: string | null,
): boolean {
  if (readerAccountId !== null && isOperatorAccount(readerAccountId)) return false;
  return actor.type === 'cli' || (actor.type === 'api_token' && actorAccountId !== readerAccountId);
}

/** An event as the account `readerAccountId` sees it. */
export function auditEventView(e: AuditEventRecord, readerAccountId: string): AuditEvent {
  const actor: AuditActor = { type: e.actorType, id: e.actorId, name: e.actorName };
  const hidden = seenAsOperator(actor, e.actorAccountId, readerAccountId);
  return {
    id: e.id,
    action: e.action as AuditAction,
    occurred_at: new Date(e.occurredAt).toISOString(),
    // The reader's own account to a customer (its trail is its account's alone).
    account_id: e.accountId,
    actor: hidden ? OPERATOR_ACTOR : actor,
    actor_credential: hidden ? null : e.actorCredential,
    target: { type: e.targetType, id: e.targetId, name: e.targetName },
    ip: hidden ? null : e.ip,
    user_agent: hidden ? null : e.userAgent,
    request_id: hidden ? null : e.requestId,
    details: e.details,
  };
}

/**
 * Who applied a catalog revision, as the account `readerAccountId` sees it: only the
 * operator applies catalogs (catalog:write is the operator account's), so to a customer a
 * token or the CLI is the operator; infracat itself (the default catalog) stays itself.
 */
export function appliedByView(actor: AuditActor | null, readerAccountId: string | null): AuditActor | null {
  if (actor === null) return null;
  return seenAsOperator(actor, null, readerAccountId) ? OPERATOR_ACTOR : actor;
}
