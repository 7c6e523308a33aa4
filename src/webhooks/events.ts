// Which events webhooks receive, and the body each sends (Standard Webhooks: `{type,
// timestamp, data}`). The changes to tokens and accounts are their audit events (the same
// action names), each sent with the audit event as the receiving account reads it
// (src/audit/views.ts): an account's own webhooks see the operator's changes without what
// identifies the operator; the operator's webhooks that watch every account see them
// whole. Expiry notices and the test event say what they are about in the same form
// (`target`, `details`). No body ever holds a secret: audit events never do.
import { OPERATOR_ACCOUNT_ID } from '../accounts/ids.js';
import type { AuditAction } from '../audit/events.js';
import { auditEventView } from '../audit/views.js';
import type { AuditEventRecord, WebhookMessage } from '../storage/types.js';
import { newId } from '../tokens/ids.js';

/** The audit actions webhooks may subscribe to: what happens to an account's tokens and to the account. */
export const AUDITED_EVENT_TYPES = [
  'api_token.created',
  'api_token.updated',
  'api_token.rotated',
  'api_token.deleted',
  'api_token.revoked_leaked',
  'api_token.expired_purged',
  'account.created',
  'account.updated',
  'account.suspended',
  'account.resumed',
  'account.deleted',
] as const satisfies readonly AuditAction[];

/** A token's expiry, told ahead (7 days and 1 day before) and when it passes: notices, not changes. */
export const NOTICE_EVENT_TYPES = ['api_token.expiring', 'api_token.expired'] as const;

/** Every event type a webhook may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [...AUDITED_EVENT_TYPES, ...NOTICE_EVENT_TYPES] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** What POST /api/v1/webhooks/{id}/test sends: to that webhook only, whatever it subscribes to. */
export const TEST_EVENT_TYPE = 'webhook.test';

const AUDITED: ReadonlySet<string> = new Set(AUDITED_EVENT_TYPES);

/** The body of an event: the bytes every attempt sends and signs. */
function envelope(type: string, occurredAt: number, data: unknown): string {
  return JSON.stringify({ type, timestamp: new Date(occurredAt).toISOString(), data });
}

/** The message of an audit event, or null when no webhook may subscribe to its action. */
export function auditMessage(event: AuditEventRecord): WebhookMessage | null {
  if (!AUDITED.has(event.action)) return null;
  return {
    id: event.id,
    type: event.action,
    accountId: event.accountId,
    occurredAt: event.occurredAt,
    body: envelope(event.action, event.occurredAt, auditEventView(event, event.accountId)),
    operatorBody: envelope(event.action, event.occurredAt, auditEventView(event, OPERATOR_ACCOUNT_ID)),
  };
}

/** A message that reads the same to every receiver: its data names the account, the target and the details. */
function plainMessage(
  type: string,
  accountId: string,
  now: number,
  target: { type: string; id: string; name: string | null },
  details: Record<string, unknown>,
): WebhookMessage {
  const body = envelope(type, now, { account_id: accountId, target, details });
  return { id: newId('evt', now), type, accountId, occurredAt: now, body, operatorBody: body };
}

/** Which expiry notice: `7d` and `1d` ahead (api_token.expiring), or `expired` (api_token.expired). */
export type NoticeKind = '7d' | '1d' | 'expired';

/** The notice of a token's coming or passed expiry. */
export function noticeMessage(
  token: { id: string; name: string; accountId: string; expiresAt: number },
  kind: NoticeKind,
  now: number,
): WebhookMessage {
  const expiresAt = new Date(token.expiresAt).toISOString();
  return plainMessage(
    kind === 'expired' ? 'api_token.expired' : 'api_token.expiring',
    token.accountId,
    now,
    { type: 'api_token', id: token.id, name: token.name },
    kind === 'expired' ? { expires_at: expiresAt } : { expires_at: expiresAt, within: kind },
  );
}

/** The test event of one webhook. */
export function testMessage(
  webhook: { id: string; accountId: string; description: string | null },
  now: number,
): WebhookMessage {
  return plainMessage(
    TEST_EVENT_TYPE,
    webhook.accountId,
    now,
    { type: 'webhook', id: webhook.id, name: webhook.description },
    {},
  );
}
