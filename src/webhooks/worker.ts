// Delivery: each instance claims what is due in the outbox (the store's claim: on
// PostgreSQL FOR UPDATE SKIP LOCKED, so each row goes to one instance), signs and sends it
// (send.ts), and records the attempt in the delivery log together with what becomes of
// the row: deleted when delivered or given up, due again after a backoff otherwise.
//
// At least once: a row leaves the outbox only in the transaction that records its
// delivery. A claim is a lease: the row falls due again when it ends, so the deliveries
// of an instance killed mid-way are taken up by the next claim, by it after a restart or
// by another instance (the receiver may then see the same `webhook-id` twice).
//
// Bounded: at most WEBHOOK_CONCURRENCY attempts (and claimed rows) per instance, at most
// WEBHOOK_CONCURRENCY_PER_HOST to one host (the others wait in this instance's queue,
// within their lease), each attempt within WEBHOOK_TIMEOUT_MS.
//
// Retries: after WEBHOOK_RETRY_DELAYS_S (5 s, then growing; the last delay repeats) for
// RETRY_WINDOW_MS from the event, with the same `webhook-id` and body every time. A
// webhook whose every delivery failed for RETRY_WINDOW_MS is disabled, with an audit
// event (`webhook.disabled`) that says so.
import { randomBytes } from 'node:crypto';
import { SYSTEM_CONTEXT } from '../audit/context.js';
import { auditEvent, webhookTarget, type AuditSink } from '../audit/events.js';
import type { ClaimedDelivery, DeliveryRecord, AttemptOutcome, WebhookRecord, WebhookStore } from '../storage/types.js';
import { newId } from '../tokens/ids.js';
import { VERSION } from '../version.js';
import { SealedSecretError, signatureHeader, type SecretBox } from './secrets.js';
import { send, type AttemptResult } from './send.js';
import { bareHost, type TargetPolicy } from './targets.js';

/** What a claim's lease adds to the time its attempts may take. */
const LEASE_MARGIN_MS = 5000;

/** How long an event is retried, and how long a webhook may fail before it is disabled. */
export const RETRY_WINDOW_MS = 24 * 3_600_000;

export interface WorkerOptions {
  store: WebhookStore;
  /** null: no keys (PostgreSQL without WEBHOOK_ENCRYPTION_KEYS), so no secret opens and every attempt fails. */
  secrets: SecretBox | null;
  policy: TargetPolicy;
  /** The clock of due times, leases and retries (the service's). */
  now: () => number;
  concurrency: number;
  perHost: number;
  pollMs: number;
  timeoutMs: number;
  /** The delays before each retry, in ms; the last one repeats. */
  retryDelaysMs: readonly number[];
  /** Told of each audit event written here (a webhook disabled). */
  audit: AuditSink;
  /** Told of failures of storage (a claim or a record that could not be written). */
  onError: (err: unknown) => void;
  /** Told when a webhook is disabled after failing for the retry window. */
  onDisabled?: (webhook: WebhookRecord) => void;
}

export interface WorkerStats {
  delivered: number;
  failed: number;
  disabled: number;
}

/** The `webhook-*` headers and the body of an attempt, signed with the webhook's secrets. */
function signed(
  claimed: ClaimedDelivery & { webhook: WebhookRecord },
  secrets: readonly string[],
): Record<string, string> {
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': `infracat-webhooks/${VERSION}`,
    'webhook-id': claimed.outbox.eventId,
    // The receiver compares it with its own clock (replay protection): the wall clock, always.
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, claimed.outbox.eventId, timestamp, claimed.outbox.body),
  };
}

export class DeliveryWorker {
  readonly stats: WorkerStats = { delivered: 0, failed: 0, disabled: 0 };
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  /** Polling on its timer (start), and stopped for good (stop): a stopped worker claims nothing. */
  private started = false;
  private stopped = false;
  /** Attempts in flight, and claimed rows waiting for their host. */
  private active = 0;
  private readonly perHost = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private readonly leaseMs: number;

  constructor(private readonly options: WorkerOptions) {
    // Long enough for a row to wait behind the others of its host, be sent, and be recorded
    // (storage's own time-out is 5 s by default); short, so a crashed instance's claims
    // are soon taken up again.
    const rounds = Math.ceil(options.concurrency / options.perHost) + 1;
    this.leaseMs = rounds * options.timeoutMs + LEASE_MARGIN_MS;
  }

  /** Whether start() was called: this instance listens and delivers. */
  get running(): boolean {
    return this.started && !this.stopped;
  }

  /** Claims what is due now (idle() waits for it), then every pollMs. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    void this.poll().finally(() => this.schedule(this.options.pollMs));
  }

  /** Resolves once no claim runs and every attempt in flight has settled. */
  async idle(): Promise<void> {
    while (this.polling !== undefined || this.inFlight.size > 0) {
      await this.polling;
      await Promise.all([...this.inFlight]);
    }
  }

  /**
   * Stops claiming and ends the attempts in flight at once; what they and the rows waiting
   * for their host had claimed falls due again when its lease ends (at least once: the
   * receiver may see an attempt again that it had already got).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.abort.abort();
    for (const queue of this.waiting.values()) for (const go of queue) go();
    this.waiting.clear();
    await this.idle();
  }

  /** One claim now (the timer's, or a test's): resolves when it has claimed and started what was due. */
  poll(): Promise<void> {
    this.polling ??= this.claim().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll().finally(() => this.schedule(this.options.pollMs));
    }, ms);
    this.timer.unref();
  }

  private async claim(): Promise<void> {
    const { store, now, concurrency } = this.options;
    // A full batch: claim again at once (a backlog is worked off at the concurrency's pace).
    for (;;) {
      const free = concurrency - this.active;
      if (this.stopped || free <= 0) return;
      const at = now();
      const claim = randomBytes(12).toString('base64url');
      let claimed: ClaimedDelivery[];
      try {
        claimed = await store.claim(at, at + this.leaseMs, claim, free);
      } catch (err) {
        this.options.onError(err);
        return;
      }
      for (const delivery of claimed) this.begin(delivery, claim);
      if (claimed.length < free) return;
    }
  }

  private begin(delivery: ClaimedDelivery, claim: string): void {
    this.active += 1;
    const work = this.deliver(delivery, claim)
      .catch((err: unknown) => this.options.onError(err))
      .finally(() => {
        this.active -= 1;
        this.inFlight.delete(work);
        // A slot is free: what is due now need not wait for the next poll.
        if (this.started && !this.stopped && this.polling === undefined) void this.poll();
      });
    this.inFlight.add(work);
  }

  /** Waits for a free slot of `host`; resolves to a function that frees it. */
  private async slot(host: string): Promise<() => void> {
    if ((this.perHost.get(host) ?? 0) >= this.options.perHost) {
      await new Promise<void>((go) => {
        const queue = this.waiting.get(host) ?? [];
        queue.push(go);
        this.waiting.set(host, queue);
      });
    }
    this.perHost.set(host, (this.perHost.get(host) ?? 0) + 1);
    return () => {
      const left = (this.perHost.get(host) ?? 1) - 1;
      if (left === 0) this.perHost.delete(host);
      else this.perHost.set(host, left);
      const queue = this.waiting.get(host);
      const next = queue?.shift();
      if (queue !== undefined && queue.length === 0) this.waiting.delete(host);
      next?.();
    };
  }

  private async deliver(delivery: ClaimedDelivery, claim: string): Promise<void> {
    const { webhook, outbox } = delivery;
    if (webhook === null || !webhook.enabled) {
      // Deleted or disabled since the row was written (its rows went with it): nothing to send.
      const result = { statusCode: null, error: 'the webhook was deleted or disabled', durationMs: 0 };
      await this.record(delivery, claim, result, { kind: 'given_up' });
      return;
    }
    let secrets: string[];
    try {
      secrets = this.openSecrets(webhook);
    } catch (err) {
      if (!(err instanceof SealedSecretError)) throw err;
      await this.failed({ ...delivery, webhook }, claim, { statusCode: null, error: err.message, durationMs: 0 });
      return;
    }
    let host: string;
    try {
      host = bareHost(new URL(webhook.url)).toLowerCase();
    } catch {
      host = '';
    }
    const release = await this.slot(host);
    try {
      if (this.stopped) return; // stopped while waiting: the lease brings it back
      const result: AttemptResult = await send(
        {
          url: webhook.url,
          headers: signed({ ...delivery, webhook }, secrets),
          body: outbox.body,
          timeoutMs: this.options.timeoutMs,
          signal: this.abort.signal,
        },
        this.options.policy,
      );
      if (result.aborted) return;
      if (result.error === null) {
        this.stats.delivered += 1;
        await this.record(delivery, claim, result, { kind: 'delivered' });
      } else await this.failed({ ...delivery, webhook }, claim, result);
    } finally {
      release();
    }
  }

  /** The webhook's secrets that sign now: the current one, and the previous one within its 24 h. */
  private openSecrets(webhook: WebhookRecord): string[] {
    const box = this.options.secrets;
    if (box === null)
      throw new SealedSecretError('WEBHOOK_ENCRYPTION_KEYS is not set: the secret cannot be opened to sign');
    const secrets = [box.open(webhook.secret, webhook.id)];
    if (
      webhook.previousSecret !== null &&
      webhook.previousSecretExpiresAt !== null &&
      webhook.previousSecretExpiresAt > this.options.now()
    )
      secrets.push(box.open(webhook.previousSecret, webhook.id));
    return secrets;
  }

  /** A failed attempt: retried after its delay while the event's retry window lasts, else given up. */
  private async failed(
    delivery: ClaimedDelivery & { webhook: WebhookRecord },
    claim: string,
    result: Pick<AttemptResult, 'statusCode' | 'error' | 'durationMs'>,
  ): Promise<void> {
    this.stats.failed += 1;
    const { retryDelaysMs } = this.options;
    const at = this.options.now();
    const end = delivery.outbox.createdAt + RETRY_WINDOW_MS;
    const delay = retryDelaysMs[Math.min(delivery.outbox.attempts, retryDelaysMs.length - 1)]!;
    const outcome: AttemptOutcome =
      at >= end ? { kind: 'given_up' } : { kind: 'retry', retryAt: Math.min(at + delay, end) };
    if (await this.record(delivery, claim, result, outcome)) {
      this.stats.disabled += 1;
      this.options.onDisabled?.(delivery.webhook);
    }
  }

  /** Writes the attempt and its outcome; resolves to whether the webhook was disabled. */
  private async record(
    delivery: ClaimedDelivery,
    claim: string,
    result: Pick<AttemptResult, 'statusCode' | 'error' | 'durationMs'>,
    outcome: AttemptOutcome,
  ): Promise<boolean> {
    const at = this.options.now();
    const { outbox, webhook } = delivery;
    const attempt: DeliveryRecord = {
      id: newId('dlv', at),
      webhookId: outbox.webhookId,
      eventId: outbox.eventId,
      eventType: outbox.eventType,
      attempt: outbox.attempts + 1,
      attemptedAt: at,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      error: result.error,
      nextAttemptAt: outcome.kind === 'retry' ? outcome.retryAt : null,
    };
    const event = auditEvent({
      action: 'webhook.disabled',
      target: webhookTarget(webhook ?? { id: outbox.webhookId, description: null, url: '' }),
      accountId: webhook?.accountId ?? '',
      context: SYSTEM_CONTEXT,
      now: at,
      details: {
        reason: 'failing',
        failing_since: new Date(webhook?.failingSince ?? at).toISOString(),
        last_error: result.error,
      },
    });
    const disabled = await this.options.store.finish(outbox, claim, attempt, outcome, {
      failingSince: at - RETRY_WINDOW_MS,
      event,
    });
    if (disabled) this.options.audit(event);
    return disabled;
  }
}
