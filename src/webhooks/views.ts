// Webhook records -> their wire shapes (schemas.ts).
import type { DeliveryRecord, WebhookRecord } from '../storage/types.js';
import type { WebhookEventType } from './events.js';
import type { WebhookCreated, WebhookDeliveryView, WebhookView } from './schemas.js';

const iso = (at: number): string => new Date(at).toISOString();
const isoOrNull = (at: number | null): string | null => (at === null ? null : iso(at));

export function webhookView(w: WebhookRecord): WebhookView {
  return {
    id: w.id,
    url: w.url,
    events: w.events as WebhookEventType[],
    description: w.description,
    enabled: w.enabled,
    all_accounts: w.watch === '*',
    created_at: iso(w.createdAt),
    updated_at: iso(w.updatedAt),
    failing_since: isoOrNull(w.failingSince),
    disabled_reason: w.disabledReason === 'failing' ? 'failing' : null,
    previous_secret_expires_at: isoOrNull(w.previousSecretExpiresAt),
  };
}

export function createdWebhookView({ webhook, secret }: { webhook: WebhookRecord; secret: string }): WebhookCreated {
  return { ...webhookView(webhook), secret };
}

export function deliveryView(d: DeliveryRecord): WebhookDeliveryView {
  return {
    id: d.id,
    event_id: d.eventId,
    event_type: d.eventType,
    attempt: d.attempt,
    attempted_at: iso(d.attemptedAt),
    status_code: d.statusCode,
    duration_ms: d.durationMs,
    delivered: d.error === null,
    error: d.error,
    next_attempt_at: isoOrNull(d.nextAttemptAt),
  };
}
