// Wire shapes of the webhook endpoints, each declared once (as src/tokens/schemas.ts):
// Fastify validates and serialises by them, and the OpenAPI document names them. A
// webhook's secret is a field of WebhookCreated alone (creation and rotate-secret): every
// other answer is serialised by a schema without it.
import { Type, type Static } from 'typebox';
import { numericText } from '../http/documented-as.js';
import { NAME_MAX } from '../tokens/limits.js';
import { Timestamp } from '../tokens/schemas.js';
import { WEBHOOK_EVENT_TYPES } from './events.js';
import { URL_MAX } from './targets.js';

export const WebhookId = Type.String({
  description: 'Webhook id, `whk_` + ULID',
  examples: ['whk_01JD3X5Y6Z7A8B9C0D1E2F3G4H'],
});

export const EventType = Type.Enum([...WEBHOOK_EVENT_TYPES], { description: 'An event type (docs/webhooks.md)' });

const UrlField = Type.String({
  maxLength: URL_MAX,
  description:
    `Where events are POSTed: an https URL (at most ${URL_MAX} characters; no user name or password, no ` +
    'fragment) whose host resolves to public addresses only; a private, loopback, link-local or other ' +
    'non-public target is refused (422 WEBHOOK_TARGET_REFUSED), and checked again at every delivery on the ' +
    'address connected to. WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows http and private targets.',
  examples: ['https://hooks.example.com/infracat'],
});
const eventsField = (description: string) =>
  Type.Array(EventType, {
    minItems: 1,
    maxItems: WEBHOOK_EVENT_TYPES.length,
    description,
    examples: [['api_token.created', 'api_token.deleted', 'api_token.expiring']],
  });
const DescriptionField = Type.String({
  maxLength: NAME_MAX,
  description: `A label, at most ${NAME_MAX} characters, with the rules of a token's name (surrounding spaces trimmed)`,
  examples: ['deploy notifications'],
});
const AllAccountsField = Type.Boolean({
  description:
    "true: the webhook receives the events of every account (each as the operator's audit trail shows it); " +
    "only the operator account's webhooks may (422 elsewhere). false: its own account's events.",
});

export const CreateWebhookBody = Type.Object(
  {
    url: UrlField,
    events: eventsField('The event types to receive (each once)'),
    description: Type.Optional(DescriptionField),
    all_accounts: Type.Optional(AllAccountsField),
  },
  {
    additionalProperties: false,
    examples: [{ url: 'https://hooks.example.com/infracat', events: ['api_token.created', 'api_token.expiring'] }],
  },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

/** PATCH body, a JSON merge patch (RFC 7396): the fields present are set, absent ones kept. */
export const PatchWebhookBody = Type.Object(
  {
    url: Type.Optional(UrlField),
    events: Type.Optional(eventsField('The whole new list of event types (it replaces the old one)')),
    description: Type.Optional(Type.Union([DescriptionField, Type.Null()], { description: 'null: no description' })),
    enabled: Type.Optional(
      Type.Boolean({
        description:
          'false: nothing is delivered (what was pending is dropped); true: deliveries resume, and a webhook ' +
          'infracat disabled after failing starts afresh',
      }),
    ),
    all_accounts: Type.Optional(AllAccountsField),
  },
  { additionalProperties: false, examples: [{ enabled: true }] },
);
export type PatchWebhookBody = Static<typeof PatchWebhookBody>;

/** A webhook as every answer but the two that show its secret shows it. */
export const WebhookView = Type.Object({
  id: WebhookId,
  url: Type.String({ examples: ['https://hooks.example.com/infracat'] }),
  events: Type.Array(EventType),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean({ description: 'false: nothing is delivered' }),
  all_accounts: Type.Boolean({ description: "true: it receives every account's events (operator account only)" }),
  created_at: Timestamp,
  updated_at: Timestamp,
  failing_since: Type.Union([Timestamp, Type.Null()], {
    description:
      'Since when every delivery has failed; null after a success. A webhook failing for 24 hours is disabled',
  }),
  disabled_reason: Type.Union([Type.Literal('failing'), Type.Null()], {
    description: '`failing`: infracat disabled it after its deliveries failed for 24 hours; null otherwise',
  }),
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()], {
    description:
      'After a rotation, until when the previous secret also signs (a second signature in `webhook-signature`); ' +
      'null when only one secret signs',
  }),
});
export type WebhookView = Static<typeof WebhookView>;

/** The create and rotate-secret answer: the only place a secret is ever shown. */
export const WebhookCreated = Type.Object({
  ...WebhookView.properties,
  secret: Type.String({
    description:
      'The signing secret (`whsec_` + base64), shown in this answer only. Verify each delivery with it ' +
      '(Standard Webhooks: docs/webhooks.md)',
    examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
  }),
});
export type WebhookCreated = Static<typeof WebhookCreated>;

export const WebhookDeliveryView = Type.Object({
  id: Type.String({ description: 'The attempt, `dlv_` + ULID', examples: ['dlv_01JD3X5Y6Z7A8B9C0D1E2F3G4H'] }),
  event_id: Type.String({
    description: 'The event: its `webhook-id` header, the same in every attempt',
    examples: ['evt_01JD3X5Y6Z7A8B9C0D1E2F3G4H'],
  }),
  event_type: Type.String({ examples: ['api_token.created'] }),
  attempt: Type.Integer({ minimum: 1, description: "1 for the event's first attempt" }),
  attempted_at: Timestamp,
  status_code: Type.Union([Type.Integer(), Type.Null()], {
    description: "The receiver's status code; null when none came (refused target, connection error, timeout)",
  }),
  duration_ms: Type.Integer({ minimum: 0 }),
  delivered: Type.Boolean({ description: 'true: the receiver answered 2xx' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why the attempt failed; null when delivered' }),
  next_attempt_at: Type.Union([Timestamp, Type.Null()], {
    description: 'When the event is tried again; null when it is not (delivered, or given up)',
  }),
});
export type WebhookDeliveryView = Static<typeof WebhookDeliveryView>;

/** The answer of a test: the event queued. */
export const WebhookTestQueued = Type.Object({
  event_id: Type.String({
    description: 'The test event: its `webhook-id`, and the event_id of its attempts in the delivery log',
    examples: ['evt_01JD3X5Y6Z7A8B9C0D1E2F3G4H'],
  }),
  type: Type.Literal('webhook.test'),
});
export type WebhookTestQueued = Static<typeof WebhookTestQueued>;

export const DELIVERIES_PER_PAGE_MAX = 100;
export const DELIVERIES_PER_PAGE_DEFAULT = 30;

/** GET .../deliveries: newest first, paged by an opaque cursor; unknown parameters are refused. */
export const DeliveriesQuery = Type.Object(
  {
    per_page: Type.Optional(
      numericText(
        Type.String({
          pattern: `^(?:[1-9][0-9]?|${DELIVERIES_PER_PAGE_MAX})$`,
          default: String(DELIVERIES_PER_PAGE_DEFAULT),
          description: `Attempts per page: a whole number from 1 to ${DELIVERIES_PER_PAGE_MAX}, in decimal digits`,
        }),
        {
          type: 'integer',
          minimum: 1,
          maximum: DELIVERIES_PER_PAGE_MAX,
          default: DELIVERIES_PER_PAGE_DEFAULT,
        },
      ),
    ),
    cursor: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'Where the page starts: copy it from the `Link: <...>; rel="next"` header of the previous page',
      }),
    ),
  },
  { additionalProperties: false },
);
export type DeliveriesQuery = Static<typeof DeliveriesQuery>;

/** The webhook shapes by their names in the OpenAPI document's components.schemas. */
export const WEBHOOK_SCHEMAS = {
  Webhook: WebhookView,
  WebhookCreated,
  WebhookCreate: CreateWebhookBody,
  WebhookPatch: PatchWebhookBody,
  WebhookDelivery: WebhookDeliveryView,
  WebhookTestQueued,
};
