// Audit events as the domain makes them: the closed list of actions, and one function
// that turns a change (what, to what, by whom, in whose account) into the record the
// store writes in the same transaction as the change.
import type { AuditEventRecord, TargetType, TokenRecord, AccountRecord, WebhookRecord } from '../storage/types.js';
import { newId } from '../tokens/ids.js';
import { redactDeep, redactSecrets } from '../redact.js';
import type { AuditContext } from './context.js';

export const AUDIT_ACTIONS = [
  'api_token.created',
  'api_token.deleted',
  'api_token.rotated',
  'api_token.updated',
  'api_token.revoked_leaked',
  'api_token.expired_purged',
  'account.created',
  'account.updated',
  'account.suspended',
  'account.resumed',
  'account.deleted',
  'catalog.applied',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret_rotated',
  'webhook.disabled',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface Target {
  type: TargetType;
  id: string | null;
  name: string | null;
}

export const tokenTarget = (t: Pick<TokenRecord, 'id' | 'name'>): Target => ({
  type: 'api_token',
  id: t.id,
  name: t.name,
});
export const accountTarget = (a: Pick<AccountRecord, 'id' | 'name'>): Target => ({
  type: 'account',
  id: a.id,
  name: a.name,
});
/** A webhook by its id; named by its description, or by where it delivers when it has none. */
export const webhookTarget = (w: Pick<WebhookRecord, 'id' | 'description' | 'url'>): Target => ({
  type: 'webhook',
  id: w.id,
  name: w.description ?? urlOrigin(w.url),
});

/** A URL's scheme, host and port: never its path or query, which may carry the receiver's own secret. */
export function urlOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

export interface EventFacts {
  action: AuditAction;
  target: Target;
  /** Whose trail the event belongs in. */
  accountId: string;
  context: AuditContext;
  now: number;
  /** Anything else worth keeping (never a secret). */
  details?: Record<string, unknown> | undefined;
}

// A User-Agent is the client's free text: kept short. Cut after scrubbing, so a credential
// cut in half at the limit is still recognised and removed whole.
const USER_AGENT_MAX = 512;

/**
 * The record of one change. Every text in it that did not come from infracat itself is
 * scrubbed of anything shaped like a credential (redact.ts): a leak report's URL can
 * quote the very secret it reports, and an event is stored, listed and logged for a year.
 */
export function auditEvent(facts: EventFacts): AuditEventRecord {
  const { context, target } = facts;
  const text = (value: string | null) => (value === null ? null : redactSecrets(value));
  return {
    id: newId('evt', facts.now),
    accountId: facts.accountId,
    action: facts.action,
    occurredAt: facts.now,
    actorType: context.actor.type,
    actorId: context.actor.id,
    actorName: text(context.actor.name),
    actorAccountId: context.actorAccountId,
    actorCredential: context.actorCredential,
    targetType: target.type,
    targetId: target.id,
    targetName: text(target.name),
    ip: context.ip,
    userAgent: text(context.userAgent)?.slice(0, USER_AGENT_MAX) ?? null,
    requestId: context.requestId,
    details: redactDeep(facts.details ?? {}),
  };
}

/**
 * Told of each event once its transaction committed: one structured log line each
 * (`"audit": true`), for operators to ship to their SIEM. Never throws into the change.
 */
export type AuditSink = (event: AuditEventRecord) => void;

export const NO_SINK: AuditSink = () => {};
