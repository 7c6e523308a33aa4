// The wire shape of an audit event, declared once: GET /api/v1/audit-events, the
// `"audit": true` log line and `infracat audit list --json` all show this.
import { numericText } from '../http/documented-as.js';
import { Type, type Static } from 'typebox';
import { Timestamp } from '../tokens/schemas.js';
import { AUDIT_ACTIONS } from './events.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const AuditAction = Type.Enum([...AUDIT_ACTIONS], { description: 'What happened' });

/** Who made a change: the audit events' actor, and who applied a catalog revision. */
export const AuditActor = Type.Object(
  {
    type: Type.Union(
      [
        Type.Literal('api_token'),
        Type.Literal('cli'),
        Type.Literal('secret_scanning'),
        Type.Literal('system'),
        Type.Literal('operator'),
      ],
      {
        description:
          '`api_token`: a token over the API; `cli`: the operator with the `infracat` command (name: the OS user); ' +
          "`secret_scanning`: GitHub's secret scanning (id: its signing key); `system`: infracat itself " +
          "(the purge of expired tokens); `operator`: the platform's operator, as customer accounts see it " +
          '(id and name null: its token or command; the event then shows no ip, user_agent or request_id)',
      },
    ),
    id: NullableString,
    name: NullableString,
  },
  { description: 'Who made the change' },
);
export type AuditActor = Static<typeof AuditActor>;

export const AuditEvent = Type.Object({
  id: Type.String({ description: '`evt_` + ULID: sorts by time', examples: ['evt_01JD3X5Y6Z7A8B9C0D1E2F3G4H'] }),
  action: AuditAction,
  occurred_at: Timestamp,
  account_id: Type.String({
    description:
      "The account whose trail the event is in (`acc_` + ULID): a token's event its account's, an account's " +
      "event that account's, `catalog.applied` the operator account's",
    examples: ['acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H'],
  }),
  actor: AuditActor,
  actor_credential: Type.Union([Type.Literal('current'), Type.Literal('previous'), Type.Null()], {
    description:
      "Which of the acting token's secrets made the change: `current`, or `previous` (the secret it had " +
      'before its last rotation, during the grace period); null when the actor is not a token, and on events ' +
      'recorded before this field existed',
  }),
  target: Type.Object(
    {
      type: Type.Union([
        Type.Literal('api_token'),
        Type.Literal('account'),
        Type.Literal('catalog'),
        Type.Literal('webhook'),
      ]),
      id: NullableString,
      name: NullableString,
    },
    { description: 'What was changed (its name as it was at the time)' },
  ),
  ip: Type.Union([Type.String(), Type.Null()], { description: 'Client address; null off HTTP' }),
  user_agent: Type.Union([Type.String(), Type.Null()], { description: 'Client User-Agent (at most 512 characters)' }),
  request_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The `x-request-id` of the request that made the change; null off HTTP',
  }),
  details: Type.Record(Type.String(), Type.Unknown(), {
    description:
      "What else the event records (changed fields, grace period, a leak report's url and source); never a secret",
  }),
});
export type AuditEvent = Static<typeof AuditEvent>;

export const AuditEventList = Type.Array(AuditEvent);

export const PER_PAGE_MAX = 100;
export const PER_PAGE_DEFAULT = 30;
/** What an id filter may be: anything else cannot be an id infracat issued (and PostgreSQL refuses some text, NUL). */
export const ID_FILTER_PATTERN = /^[A-Za-z0-9_-]{1,100}$/;

const Id = (description: string) => Type.String({ pattern: ID_FILTER_PATTERN.source, description });
const Instant = (description: string) =>
  Type.String({
    maxLength: 64,
    description: `${description}: an RFC 3339 timestamp naming a real date and time, e.g. 2026-11-21T19:00:00Z`,
  });

/** GET /api/v1/audit-events: every filter applies when given; unknown parameters are refused. */
export const AuditQuery = Type.Object(
  {
    action: Type.Optional(Type.Enum([...AUDIT_ACTIONS], { description: 'Only events of this action' })),
    target_id: Type.Optional(Id('Only events about this token, account, catalog version or webhook')),
    account_id: Type.Optional(
      Id(
        "Only this account's trail. The operator account's tokens: any account (deleted ones too); " +
          'any other token: its own account only (403 otherwise)',
      ),
    ),
    since: Type.Optional(Instant('Only events that occurred at or after this time')),
    until: Type.Optional(Instant('Only events that occurred before this time')),
    per_page: Type.Optional(
      numericText(
        Type.String({
          pattern: `^(?:[1-9][0-9]?|${PER_PAGE_MAX})$`,
          default: String(PER_PAGE_DEFAULT),
          description: `Events per page: a whole number from 1 to ${PER_PAGE_MAX}, in plain decimal digits`,
        }),
        { type: 'integer', minimum: 1, maximum: PER_PAGE_MAX, default: PER_PAGE_DEFAULT },
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
export type AuditQuery = Static<typeof AuditQuery>;

/** The audit shapes by their names in the OpenAPI document's components.schemas. */
export const AUDIT_SCHEMAS = { AuditEvent };
