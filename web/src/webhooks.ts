// The Webhooks page's logic without the DOM: the event types a webhook may subscribe to
// (the console's one list of them), what a row offers, how a webhook's state and a
// delivery attempt read, and the body of a creation. Unit-tested in
// test/console/logic.test.ts (which also keeps the event types equal to the server's list).
import type { Webhook, WebhookDelivery } from './api.js';
import { exactTime, relativeTime } from './format.js';

export type WebhookEventType = Webhook['events'][number];

/** Every event type a webhook may subscribe to, in the server's order, with what it tells of. */
export const WEBHOOK_EVENTS = [
  { type: 'api_token.created', description: 'A token of the account was created' },
  { type: 'api_token.updated', description: 'A token was renamed or its conditions changed' },
  { type: 'api_token.rotated', description: 'A token was given a new secret' },
  { type: 'api_token.deleted', description: 'A token was deleted' },
  { type: 'api_token.revoked_leaked', description: 'A token was revoked because its secret leaked' },
  { type: 'api_token.expired_purged', description: 'An expired token was purged' },
  { type: 'account.created', description: 'An account was created (operator webhooks of every account)' },
  { type: 'account.updated', description: 'The account was renamed or given a rate limit' },
  { type: 'account.suspended', description: 'The account was suspended' },
  { type: 'account.resumed', description: 'The account was resumed' },
  { type: 'account.deleted', description: 'The account was deleted' },
  { type: 'api_token.expiring', description: 'A token expires within 7 days, and again within 1 day' },
  { type: 'api_token.expired', description: "A token's expiry passed" },
] as const satisfies readonly { type: WebhookEventType; description: string }[];

/** The event types alone, in the same order. */
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = WEBHOOK_EVENTS.map((e) => e.type);

/** The event types grouped by what they are about ("api_token", "account"), in order of first appearance. */
export function eventGroups(): { resource: string; events: (typeof WEBHOOK_EVENTS)[number][] }[] {
  const groups = new Map<string, (typeof WEBHOOK_EVENTS)[number][]>();
  for (const e of WEBHOOK_EVENTS) {
    const resource = e.type.slice(0, e.type.indexOf('.'));
    groups.set(resource, [...(groups.get(resource) ?? []), e]);
  }
  return [...groups].map(([resource, events]) => ({ resource, events }));
}

/** How a webhook is named in labels and dialogs: its description, else its URL. */
export function webhookName(webhook: Pick<Webhook, 'description' | 'url'>): string {
  return webhook.description ?? webhook.url;
}

export type WebhookAction = 'test' | 'disable' | 'enable' | 'rotate' | 'delete';

/**
 * The write actions a webhook row offers: none without webhooks:write. A disabled webhook
 * offers Enable and no test (the server answers 409: nothing is delivered to it).
 */
export function webhookActions(webhook: Pick<Webhook, 'enabled'>, holds: (scope: string) => boolean): WebhookAction[] {
  if (!holds('webhooks:write')) return [];
  return webhook.enabled ? ['test', 'disable', 'rotate', 'delete'] : ['enable', 'rotate', 'delete'];
}

/** A webhook's state in words: `ok` while it delivers, with a note when it fails or has two secrets. */
export interface WebhookState {
  ok: boolean;
  text: string;
  notes: string[];
}

export function webhookState(
  webhook: Pick<Webhook, 'enabled' | 'disabled_reason' | 'failing_since' | 'previous_secret_expires_at'>,
  now: number,
): WebhookState {
  const notes: string[] = [];
  if (webhook.enabled && webhook.failing_since !== null)
    notes.push(`Failing since ${exactTime(webhook.failing_since)}`);
  if (webhook.previous_secret_expires_at !== null && Date.parse(webhook.previous_secret_expires_at) > now)
    notes.push(`The previous secret also signs until ${exactTime(webhook.previous_secret_expires_at)}`);
  if (webhook.enabled) return { ok: true, text: 'Enabled', notes };
  return {
    ok: false,
    text: webhook.disabled_reason === 'failing' ? 'Disabled after failing for 24 hours' : 'Disabled',
    notes,
  };
}

/** How one delivery attempt reads: succeeded or failed, the receiver's answer or why none came, what follows. */
export interface DeliveryOutcome {
  ok: boolean;
  label: 'Succeeded' | 'Failed';
  /** "HTTP 204", or the error when no status came. */
  response: string;
  /** What the error adds to a status ("answered 302: redirects are not followed"); null when nothing. */
  detail: string | null;
  /** "Retried in 5 minutes" when another attempt follows; null otherwise. */
  retry: string | null;
}

export function deliveryOutcome(
  d: Pick<WebhookDelivery, 'delivered' | 'status_code' | 'error' | 'next_attempt_at'>,
  now: number,
): DeliveryOutcome {
  const status = d.status_code === null ? null : `HTTP ${d.status_code}`;
  if (d.delivered) return { ok: true, label: 'Succeeded', response: status ?? 'Delivered', detail: null, retry: null };
  const retry = d.next_attempt_at === null ? null : `Tried again ${relativeTime(d.next_attempt_at, now)}`;
  if (status === null) return { ok: false, label: 'Failed', response: d.error ?? 'No answer', detail: null, retry };
  // "answered 500" says no more than the status itself.
  const detail = d.error === null || d.error === `answered ${d.status_code}` ? null : d.error;
  return { ok: false, label: 'Failed', response: status, detail, retry };
}

/** 85 -> "85 ms", 1234 -> "1.2 s". */
export function durationText(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The first page of a webhook's delivery log (newest first), under /api/v1. */
export function deliveriesPath(webhookId: string): string {
  return `/webhooks/${encodeURIComponent(webhookId)}/deliveries`;
}

/**
 * The body of a creation from the form: the URL as typed (the server judges it), the
 * description left out when blank (no description), the checked events in the list's order.
 */
export function createBody(
  url: string,
  description: string,
  checked: readonly string[],
): { url: string; events: WebhookEventType[]; description?: string } {
  const events = WEBHOOK_EVENT_TYPES.filter((t) => checked.includes(t));
  return { url: url.trim(), events, ...(description.trim() === '' ? {} : { description }) };
}
