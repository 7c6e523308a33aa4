// /api/v1/webhooks: an account's webhooks (create, list, get, patch, delete), their secret
// rotation, a test event and the delivery log. Each acts inside the calling token's
// account only: another account's webhook id is answered exactly as an unknown one (404).
// Every response carries Cache-Control: no-store.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { auditContext } from '../audit/context.js';
import { AppError } from '../errors.js';
import { callerOf } from '../http/caller.js';
import { installMergePatchParser } from '../http/json-body.js';
import { noStoreAnswers } from '../http/no-store.js';
import { NoQuery } from '../http/no-query.js';
import { readPageQuery } from '../http/page-query.js';
import type { App } from '../http/types.js';
import { nextPageLink as pageLink } from '../paging.js';
import { nextPageLink } from '../tokens/query.js';
import { IdParams, LIST_PER_PAGE_DEFAULT, LIST_PER_PAGE_MAX, pagedList, PageParams } from '../tokens/schemas.js';
import {
  CreateWebhookBody,
  DeliveriesQuery,
  DELIVERIES_PER_PAGE_DEFAULT,
  DELIVERIES_PER_PAGE_MAX,
  PatchWebhookBody,
  WebhookCreated,
  WebhookDeliveryView,
  WebhookTestQueued,
  WebhookView,
} from './schemas.js';
import type { WebhookService } from './service.js';
import { createdWebhookView, deliveryView, webhookView } from './views.js';

const tags = ['webhooks'];
const LIST_PATH = '/api/v1/webhooks';
const notFound = (id: string) => new AppError('NOT_FOUND', `no webhook with id ${id}`);

const NOT_CONFIGURED =
  'Webhooks are not configured: on PostgreSQL the operator has not set WEBHOOK_ENCRYPTION_KEYS ' +
  '(WEBHOOKS_NOT_CONFIGURED); ' +
  'or storage unreachable (STORAGE_UNAVAILABLE), or the server is shutting down (SERVICE_UNAVAILABLE)';
const TARGET_REFUSED =
  'The body breaks the schema or a rule (VALIDATION_FAILED), or the URL is not an allowed target: not https, ' +
  'or its host resolves to a private, loopback, link-local or other non-public address (WEBHOOK_TARGET_REFUSED); ' +
  '`errors` has a JSON pointer per field';

export interface WebhookRouteOptions {
  service: WebhookService;
}

export function webhookRoutes(app: App, { service }: WebhookRouteOptions): void {
  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    noStoreAnswers(api);

    api.post(
      LIST_PATH,
      {
        config: {
          auth: { scopes: ['webhooks:write'] },
          problems: {
            409: 'The cap on webhooks per account (WEBHOOK_MAX_PER_ACCOUNT) is reached (WEBHOOK_LIMIT_REACHED)',
            422: TARGET_REFUSED,
            503: NOT_CONFIGURED,
          },
        },
        schema: {
          tags,
          operationId: 'createWebhook',
          summary: 'Create a webhook: events of the account POSTed to a URL, signed (Standard Webhooks)',
          description:
            'The answer is the only one that ever shows the signing secret (`secret`). The webhook receives the ' +
            "events listed in `events` of the calling token's account (`all_accounts: true`, operator account " +
            'only: of every account). The URL must be https and resolve to public addresses (422 ' +
            'WEBHOOK_TARGET_REFUSED). 409 WEBHOOK_LIMIT_REACHED past WEBHOOK_MAX_PER_ACCOUNT webhooks.',
          body: CreateWebhookBody,
          response: { 201: WebhookCreated },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request.token);
        const issued = await service.create(caller.accountId, request.body, auditContext(request));
        reply.code(201).header('location', `${LIST_PATH}/${issued.webhook.id}`);
        return createdWebhookView(issued);
      },
    );

    api.get(
      LIST_PATH,
      {
        config: { auth: { scopes: ['webhooks:read'] } },
        schema: {
          tags,
          operationId: 'listWebhooks',
          summary: "List the calling token's account's webhooks (never their secrets), oldest first",
          description:
            `At most \`per_page\` webhooks (default ${LIST_PER_PAGE_DEFAULT}, at most ${LIST_PER_PAGE_MAX}); when ` +
            'more follow, a `Link: <...>; rel="next"` header names the next page. The body stays a bare array.',
          querystring: PageParams,
          response: { 200: pagedList(WebhookView, 'Webhooks') },
        },
      },
      async (request, reply) => {
        const page = readPageQuery(request.query);
        const { items, next } = await service.list(callerOf(request.token).accountId, page);
        if (next !== null) reply.header('link', nextPageLink(LIST_PATH, {}, page.perPage, next));
        return items.map(webhookView);
      },
    );

    api.get(
      `${LIST_PATH}/:id`,
      {
        config: { auth: { scopes: ['webhooks:read'] } },
        schema: {
          tags,
          operationId: 'getWebhook',
          summary: "One webhook of the calling token's account (another account's id: 404)",
          params: IdParams,
          querystring: NoQuery,
          response: { 200: WebhookView },
        },
      },
      async (request) => {
        const webhook = await service.get(callerOf(request.token).accountId, request.params.id);
        if (webhook === null) throw notFound(request.params.id);
        return webhookView(webhook);
      },
    );

    api.delete(
      `${LIST_PATH}/:id`,
      {
        config: { auth: { scopes: ['webhooks:write'] } },
        schema: {
          tags,
          operationId: 'deleteWebhook',
          summary: 'Delete a webhook; what it had still to deliver is dropped',
          params: IdParams,
          response: { 204: { type: 'null', description: 'Deleted' } },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request.token);
        if (!(await service.delete(caller.accountId, request.params.id, auditContext(request))))
          throw notFound(request.params.id);
        return reply.code(204).send(null);
      },
    );

    api.post(
      `${LIST_PATH}/:id/rotate-secret`,
      {
        config: { auth: { scopes: ['webhooks:write'] }, problems: { 503: NOT_CONFIGURED } },
        schema: {
          tags,
          operationId: 'rotateWebhookSecret',
          summary: 'Give a webhook a new signing secret; the previous one also signs for 24 hours',
          description:
            'Answers the webhook with its new secret, shown this once. For 24 hours every delivery carries two ' +
            "signatures in `webhook-signature` (the new secret's, then the previous one's), so receivers switch " +
            'without missing one; rotating again within that time ends the earlier previous secret at once. No body.',
          params: IdParams,
          response: { 200: WebhookCreated },
        },
      },
      async (request) => {
        const caller = callerOf(request.token);
        const issued = await service.rotateSecret(caller.accountId, request.params.id, auditContext(request));
        if (issued === null) throw notFound(request.params.id);
        return createdWebhookView(issued);
      },
    );

    api.post(
      `${LIST_PATH}/:id/test`,
      {
        config: {
          auth: { scopes: ['webhooks:write'] },
          problems: { 409: 'The webhook is disabled: enable it first (CONFLICT)' },
        },
        schema: {
          tags,
          operationId: 'testWebhook',
          summary: 'Send a `webhook.test` event to the webhook',
          description:
            'Queues a `webhook.test` event for this webhook alone (whatever it subscribes to), delivered like any ' +
            'other: signed, retried, in the delivery log under the answered `event_id`. No body.',
          params: IdParams,
          response: { 202: WebhookTestQueued },
        },
      },
      async (request, reply) => {
        const queued = await service.test(callerOf(request.token).accountId, request.params.id);
        if (queued === null) throw notFound(request.params.id);
        reply.code(202);
        return { event_id: queued.eventId, type: 'webhook.test' as const };
      },
    );

    api.get(
      `${LIST_PATH}/:id/deliveries`,
      {
        config: { auth: { scopes: ['webhooks:read'] } },
        schema: {
          tags,
          operationId: 'listWebhookDeliveries',
          summary: "A webhook's delivery log: every attempt, newest first",
          description:
            "Each attempt with its event (id and type), attempt number, time, the receiver's status code, " +
            'duration and error, and when the event is tried next. Kept WEBHOOK_DELIVERY_RETENTION_DAYS. At most ' +
            `\`per_page\` attempts (default ${DELIVERIES_PER_PAGE_DEFAULT}, at most ${DELIVERIES_PER_PAGE_MAX}); ` +
            'when ' +
            'more follow, a `Link: <...>; rel="next"` header names the next page.',
          params: IdParams,
          querystring: DeliveriesQuery,
          response: {
            200: pagedList(WebhookDeliveryView, 'Attempts', 'newest first'),
          },
        },
      },
      async (request, reply) => {
        const { id } = request.params;
        const perPage =
          request.query.per_page === undefined ? DELIVERIES_PER_PAGE_DEFAULT : Number(request.query.per_page);
        const page = await service.deliveries(callerOf(request.token).accountId, id, {
          perPage,
          cursor: request.query.cursor,
        });
        if (page === null) throw notFound(id);
        if (page.next !== null)
          reply.header('link', pageLink(`${LIST_PATH}/${encodeURIComponent(id)}/deliveries`, {}, perPage, page.next));
        return page.items.map(deliveryView);
      },
    );

    // The merge-patch media type is accepted by this route only (its own plugin), as for tokens.
    void api.register(async (patchPlugin) => {
      installMergePatchParser(patchPlugin);
      patchPlugin.withTypeProvider<TypeBoxTypeProvider>().patch(
        `${LIST_PATH}/:id`,
        {
          config: { auth: { scopes: ['webhooks:write'] }, problems: { 422: TARGET_REFUSED } },
          schema: {
            tags,
            operationId: 'updateWebhook',
            summary: 'Change a webhook: its URL, events, description, whether it is enabled (JSON merge patch)',
            description:
              'A JSON merge patch (RFC 7396), as `application/merge-patch+json` or `application/json`: the fields ' +
              'present are set, the others kept; `{}` answers the webhook unchanged. A new URL is checked as at ' +
              'creation (422 WEBHOOK_TARGET_REFUSED). `enabled: false` drops what was pending. Unknown id, or ' +
              "another account's: 404.",
            consumes: ['application/merge-patch+json', 'application/json'],
            params: IdParams,
            body: PatchWebhookBody,
            response: { 200: WebhookView },
          },
        },
        async (request) => {
          const caller = callerOf(request.token);
          const webhook = await service.update(
            caller.accountId,
            request.params.id,
            request.body,
            auditContext(request),
          );
          if (webhook === null) throw notFound(request.params.id);
          return webhookView(webhook);
        },
      );
    });
  });
}
