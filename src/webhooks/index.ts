// Wires the webhook domain from plain settings (the configuration's values): the service
// behind the routes, the delivery worker, the expiry notices and the delivery log's
// retention. The HTTP app and the CLI make it alike (the CLI delivers nothing).
import type { AuditSink } from '../audit/events.js';
import type { Store } from '../storage/types.js';
import { inBatches } from '../periodic.js';
import { sendDueNotices } from './notices.js';
import type { EncryptionKeys } from './keys.js';
import { SecretBox } from './secrets.js';
import { WebhookService } from './service.js';
import { systemResolver, type Resolver, type TargetPolicy } from './targets.js';
import { DeliveryWorker, type WorkerOptions } from './worker.js';

/** What the webhook domain is made with; each field is the setting of the same name (src/config.ts). */
export interface WebhookSettings {
  webhookAllowPrivateTargets: boolean;
  webhookTimeoutMs: number;
  webhookRetryDelaysS: readonly number[];
  webhookConcurrency: number;
  webhookConcurrencyPerHost: number;
  webhookPollMs: number;
  webhookMaxPerAccount: number;
  webhookDeliveryRetentionDays: number;
}

export interface WebhookDomain {
  service: WebhookService;
  worker: DeliveryWorker;
  /** Sends the expiry notices due now; resolves to how many tokens were due. */
  sendNotices(): Promise<number>;
  /** Deletes delivery log rows older than WEBHOOK_DELIVERY_RETENTION_DAYS; resolves to how many. */
  pruneDeliveries(): Promise<number>;
}

export interface WebhookDomainOptions {
  /** How host names resolve (the system resolver by default; tests point names where they like). */
  resolve?: Resolver | undefined;
  now?: (() => number) | undefined;
  audit?: AuditSink | undefined;
  /** Told of storage failures of the worker. */
  onError?: WorkerOptions['onError'];
  onDisabled?: WorkerOptions['onDisabled'];
}

// Delivery log rows deleted per statement: one range of its primary key.
const PRUNE_BATCH = 1000;

/**
 * The webhook domain on `store`; `keys` seal and open the signing secrets
 * (loadEncryptionKeys, src/webhooks/keys.ts), null when there are none.
 */
export function createWebhookDomain(
  settings: WebhookSettings,
  store: Store,
  keys: EncryptionKeys | null,
  options: WebhookDomainOptions = {},
): WebhookDomain {
  const now = options.now ?? Date.now;
  const audit = options.audit ?? (() => {});
  const secrets = keys === null ? null : new SecretBox(keys.keys);
  const policy: TargetPolicy = {
    allowPrivate: settings.webhookAllowPrivateTargets,
    resolve: options.resolve ?? systemResolver,
  };
  const service = new WebhookService(store.webhooks, {
    secrets,
    maxPerAccount: settings.webhookMaxPerAccount,
    policy,
    audit,
    now,
  });
  const worker = new DeliveryWorker({
    store: store.webhooks,
    secrets,
    policy,
    now,
    concurrency: settings.webhookConcurrency,
    perHost: Math.min(settings.webhookConcurrencyPerHost, settings.webhookConcurrency),
    pollMs: settings.webhookPollMs,
    timeoutMs: settings.webhookTimeoutMs,
    retryDelaysMs: settings.webhookRetryDelaysS.map((s) => s * 1000),
    audit,
    onError: options.onError ?? (() => {}),
    ...(options.onDisabled !== undefined ? { onDisabled: options.onDisabled } : {}),
  });
  const retentionMs = settings.webhookDeliveryRetentionDays * 86_400_000;
  return {
    service,
    worker,
    sendNotices: () => sendDueNotices(store.tokens, now),
    pruneDeliveries: () =>
      inBatches(PRUNE_BATCH, () => store.webhooks.pruneDeliveries(now() - retentionMs, PRUNE_BATCH)),
  };
}
