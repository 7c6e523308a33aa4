// The webhook domain: create, list, change, delete and test an account's webhooks, rotate
// their secrets, read their delivery log. Knows the rules and the storage interface;
// nothing of HTTP or SQL. Another account's webhook is answered exactly as an unknown one.
import type { AuditContext } from '../audit/context.js';
import { auditEvent, NO_SINK, urlOrigin, webhookTarget, type AuditAction, type AuditSink } from '../audit/events.js';
import { AppError, type FieldError } from '../errors.js';
import { CURSOR_ERROR, decodeCursor, encodeCursor } from '../paging.js';
import { isOperatorAccount } from '../accounts/ids.js';
import type { WebhookRecord, WebhookStore, DeliveryRecord } from '../storage/types.js';
import { newId, ULID_PATTERN_SOURCE } from '../tokens/ids.js';
import { pageOf, type ListPage, type Page } from '../tokens/query.js';
import { validateName } from '../tokens/rules.js';
import { testMessage } from './events.js';
import { generateSecret, type SecretBox } from './secrets.js';
import { targetProblem, type TargetPolicy } from './targets.js';
import { RETRY_WINDOW_MS } from './worker.js';

// Anything else cannot be an id we issued; checked before storage (PostgreSQL refuses NUL).
const PLAUSIBLE_ID = /^[A-Za-z0-9_-]{1,100}$/;
const DELIVERY_ID_PATTERN = new RegExp(`^dlv_${ULID_PATTERN_SOURCE}$`);
/** How long the previous secret also signs after a rotation. */
export const PREVIOUS_SECRET_MS = RETRY_WINDOW_MS;

export interface WebhookServiceOptions {
  /** null: no keys (PostgreSQL without WEBHOOK_ENCRYPTION_KEYS): no webhook can be given a secret. */
  secrets: SecretBox | null;
  /** WEBHOOK_MAX_PER_ACCOUNT. */
  maxPerAccount: number;
  policy: TargetPolicy;
  audit?: AuditSink;
  now?: () => number;
}

export interface WebhookInput {
  url: string;
  events: readonly string[];
  description?: string | undefined;
  all_accounts?: boolean | undefined;
}

export interface WebhookPatch {
  url?: string | undefined;
  events?: readonly string[] | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
  all_accounts?: boolean | undefined;
}

export interface IssuedWebhook {
  webhook: WebhookRecord;
  /** Shown once, never stored in plaintext. */
  secret: string;
}

export interface DeliveryPage {
  items: DeliveryRecord[];
  /** The cursor of the next page, or null. */
  next: string | null;
}

export class WebhookService {
  private readonly now: () => number;
  private readonly audit: AuditSink;

  constructor(
    private readonly store: WebhookStore,
    private readonly options: WebhookServiceOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.audit = options.audit ?? NO_SINK;
  }

  private event(
    action: AuditAction,
    webhook: Pick<WebhookRecord, 'id' | 'description' | 'url' | 'accountId'>,
    context: AuditContext,
    now: number,
    details?: Record<string, unknown>,
  ) {
    return auditEvent({ action, target: webhookTarget(webhook), accountId: webhook.accountId, context, now, details });
  }

  /** The box that seals secrets, or 503 WEBHOOKS_NOT_CONFIGURED. */
  private box(): SecretBox {
    if (this.options.secrets === null)
      throw new AppError(
        'WEBHOOKS_NOT_CONFIGURED',
        'webhooks cannot be given a secret: the operator has not set WEBHOOK_ENCRYPTION_KEYS (docs/webhooks.md)',
      );
    return this.options.secrets;
  }

  /** The checked fields of a request, or the 422 with every problem. */
  private async check(
    accountId: string,
    input: {
      url?: string | undefined;
      description?: string | null | undefined;
      all_accounts?: boolean | undefined;
      events?: readonly string[] | undefined;
    },
  ): Promise<{ description?: string | null | undefined }> {
    const errors: FieldError[] = [];
    let description: string | null | undefined = input.description;
    if (typeof input.description === 'string') {
      const checked = validateName(input.description);
      if ('error' in checked) errors.push({ pointer: '/description', detail: checked.error.detail });
      else description = checked.name;
    }
    if (input.events !== undefined) {
      const seen = new Set<string>();
      input.events.forEach((type, i) => {
        if (seen.has(type)) errors.push({ pointer: `/events/${i}`, detail: `duplicate event type "${type}"` });
        seen.add(type);
      });
    }
    if (input.all_accounts === true && !isOperatorAccount(accountId))
      errors.push({
        pointer: '/all_accounts',
        detail: "only the operator account's webhooks may receive every account's events",
      });
    if (errors.length > 0)
      throw new AppError('VALIDATION_FAILED', 'the webhook request is invalid; see errors', { errors });
    if (input.url !== undefined) {
      const problem = await targetProblem(input.url, this.options.policy);
      if (problem !== null)
        throw new AppError('WEBHOOK_TARGET_REFUSED', `the webhook URL is refused: ${problem}`, {
          errors: [{ pointer: '/url', detail: problem }],
        });
    }
    return { description };
  }

  /** Creates an enabled webhook in the account; its secret is shown once. 409 WEBHOOK_LIMIT_REACHED past the cap. */
  async create(accountId: string, input: WebhookInput, context: AuditContext): Promise<IssuedWebhook> {
    // First: without the keys nothing can be created, and the URL's name is not even looked up.
    const box = this.box();
    const { description } = await this.check(accountId, input);
    const now = this.now();
    const id = newId('whk', now);
    const secret = generateSecret();
    const webhook: WebhookRecord = {
      id,
      accountId,
      watch: input.all_accounts === true ? '*' : accountId,
      url: input.url,
      events: [...input.events],
      description: description ?? null,
      enabled: true,
      secret: box.seal(secret, id),
      previousSecret: null,
      previousSecretExpiresAt: null,
      createdAt: now,
      updatedAt: now,
      failingSince: null,
      disabledReason: null,
    };
    const event = this.event('webhook.created', webhook, context, now, {
      origin: urlOrigin(webhook.url),
      events: webhook.events,
      all_accounts: webhook.watch === '*',
    });
    const result = await this.store.create(webhook, this.options.maxPerAccount, event);
    if (result === 'no_account') throw new AppError('NOT_FOUND', `no account with id ${accountId}`);
    if (result === 'limit_reached')
      throw new AppError(
        'WEBHOOK_LIMIT_REACHED',
        `at most ${this.options.maxPerAccount} webhooks may exist in an account; delete one first`,
      );
    this.audit(event);
    return { webhook, secret };
  }

  /** One page of the account's webhooks, oldest first. */
  async list(accountId: string, page: ListPage): Promise<Page<WebhookRecord>> {
    return pageOf(await this.store.list(accountId, { after: page.after, limit: page.perPage + 1 }), page.perPage);
  }

  /** A webhook of the account, or null (unknown, or another account's: answered alike). */
  async get(accountId: string, id: string): Promise<WebhookRecord | null> {
    return PLAUSIBLE_ID.test(id) ? this.store.get(accountId, id) : null;
  }

  /** Applies a merge patch; null when no such webhook. An empty patch, or one that changes nothing, writes nothing. */
  async update(
    accountId: string,
    id: string,
    patch: WebhookPatch,
    context: AuditContext,
  ): Promise<WebhookRecord | null> {
    if (!PLAUSIBLE_ID.test(id)) return null;
    const before = await this.store.get(accountId, id);
    if (before === null) return null;
    // The URL is checked only when it changes: a webhook kept as it is stays as it is.
    const url = patch.url !== undefined && patch.url !== before.url ? patch.url : undefined;
    const { description } = await this.check(accountId, { ...patch, url });
    const watch = patch.all_accounts === undefined ? undefined : patch.all_accounts ? '*' : accountId;
    const changes: Record<string, unknown> = {};
    if (url !== undefined) changes.origin = { from: urlOrigin(before.url), to: urlOrigin(url) };
    if (patch.events !== undefined && !sameList(patch.events, before.events))
      changes.events = { from: before.events, to: patch.events };
    if (description !== undefined && description !== before.description)
      changes.description = { from: before.description, to: description };
    if (watch !== undefined && watch !== before.watch)
      changes.all_accounts = { from: before.watch === '*', to: watch === '*' };
    // Enabling a webhook infracat disabled (or one still failing) starts it afresh, even when it was enabled.
    const restart = patch.enabled === true && (before.failingSince !== null || before.disabledReason !== null);
    if (patch.enabled !== undefined && (patch.enabled !== before.enabled || restart))
      changes.enabled = { from: before.enabled, to: patch.enabled };
    if (Object.keys(changes).length === 0) return before;
    const now = this.now();
    const event = this.event('webhook.updated', before, context, now, { changes });
    const updated = await this.store.update(
      accountId,
      id,
      {
        url,
        events: changes.events === undefined ? undefined : patch.events,
        description: changes.description === undefined ? undefined : description,
        watch: changes.all_accounts === undefined ? undefined : watch,
        enabled: changes.enabled === undefined ? undefined : patch.enabled,
        updatedAt: now,
      },
      event,
    );
    if (updated !== null) this.audit(event);
    return updated;
  }

  /** Deletes the webhook and what it had still to deliver; false when no such webhook. */
  async delete(accountId: string, id: string, context: AuditContext): Promise<boolean> {
    if (!PLAUSIBLE_ID.test(id)) return false;
    const before = await this.store.get(accountId, id);
    if (before === null) return false;
    const event = this.event('webhook.deleted', before, context, this.now());
    const deleted = await this.store.delete(accountId, id, event);
    if (deleted) this.audit(event);
    return deleted;
  }

  /**
   * Gives the webhook a new secret, shown once; the one current until now keeps signing
   * (a second signature) for PREVIOUS_SECRET_MS, so receivers can switch without missing
   * a delivery. A rotation within that time ends the earlier previous secret at once.
   */
  async rotateSecret(accountId: string, id: string, context: AuditContext): Promise<IssuedWebhook | null> {
    if (!PLAUSIBLE_ID.test(id)) return null;
    const box = this.box();
    const before = await this.store.get(accountId, id);
    if (before === null) return null;
    const now = this.now();
    const secret = generateSecret();
    const previousExpiresAt = now + PREVIOUS_SECRET_MS;
    const event = this.event('webhook.secret_rotated', before, context, now, {
      previous_secret_expires_at: new Date(previousExpiresAt).toISOString(),
    });
    const rotated = await this.store.rotateSecret(
      accountId,
      id,
      { secret: box.seal(secret, id), previousExpiresAt, updatedAt: now },
      event,
    );
    if (rotated === null) return null;
    this.audit(event);
    return { webhook: rotated, secret };
  }

  /** Queues a `webhook.test` event to the webhook; null when no such webhook; 409 when it is disabled. */
  async test(accountId: string, id: string): Promise<{ eventId: string } | null> {
    const webhook = await this.get(accountId, id);
    if (webhook === null) return null;
    if (!webhook.enabled)
      throw new AppError('CONFLICT', `webhook ${id} is disabled: enable it (PATCH enabled: true), then test it`);
    const message = testMessage(webhook, this.now());
    await this.store.enqueue(webhook.id, message);
    return { eventId: message.id };
  }

  /** A webhook's delivery log, newest first; null when no such webhook. A bad cursor is INVALID_QUERY. */
  async deliveries(
    accountId: string,
    id: string,
    query: { perPage: number; cursor?: string | undefined },
  ): Promise<DeliveryPage | null> {
    let before: string | undefined;
    if (query.cursor !== undefined) {
      const decoded = decodeCursor(query.cursor, DELIVERY_ID_PATTERN);
      if (decoded === null)
        throw new AppError('INVALID_QUERY', 'invalid query parameter cursor', { errors: [CURSOR_ERROR] });
      before = decoded;
    }
    if ((await this.get(accountId, id)) === null) return null;
    const rows = await this.store.deliveries(id, query.perPage + 1, before);
    const items = rows.slice(0, query.perPage);
    return { items, next: rows.length > query.perPage ? encodeCursor(items.at(-1)!.id) : null };
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
