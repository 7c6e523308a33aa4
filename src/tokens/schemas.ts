// Wire shapes of the token endpoints, each declared once: its TypeScript type is its
// Static (views.ts builds it), Fastify validates and serialises by it, and the OpenAPI
// document shows it. Response schemas list every field that may leave the service:
// Fastify's serialiser drops anything else, so a secret or hash on a record can never
// reach a list body by accident.
import { Type, type Static, type TOptional } from 'typebox';
import { ALLOWED_CIDRS_MAX } from './conditions.js';
import { numericText } from '../http/documented-as.js';
import { NEXT_PAGE } from '../http/response-headers.js';
import { GRACE_MAX_S, NAME_MAX, USAGE_SPAN_DEFAULT_DAYS, USAGE_SPAN_MAX_DAYS } from './limits.js';
import { USAGE_REASONS, type UsageReason } from './usage-reasons.js';

export const Timestamp = Type.String({
  format: 'date-time',
  description: 'RFC 3339 UTC timestamp',
  examples: ['2026-11-21T19:00:00.000Z'],
});
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const Scopes = Type.Array(Type.String(), {
  description: '`<resource>:<action>` scopes',
  examples: [['apps:read', 'apps:write']],
});

export const TokenId = Type.String({
  description: 'Token id, `tok_` + ULID',
  examples: ['tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H'],
});
const TokenName = Type.String({ examples: ['ci deploy'] });

// The request fields, each declared once: creation, the merge patch and rotation share them.
const NameField = Type.String({
  maxLength: NAME_MAX,
  description:
    `Label, at most ${NAME_MAX} characters (surrounding spaces are trimmed); ` +
    'no control, format (invisible, bidi), default-ignorable or line/paragraph separator characters; ' +
    'at least one visible character, and none that shows nothing at either end',
  examples: ['ci deploy'],
});
const scopesField = (description?: string) =>
  Type.Array(Type.String({ maxLength: 200 }), {
    minItems: 1,
    maxItems: 100,
    examples: [['apps:read', 'apps:write']],
    ...(description !== undefined ? { description } : {}),
  });
const expiresAtField = (description: string) =>
  Type.Union([Type.String({ maxLength: 64 }), Type.Null()], { description });

// The conditions of use, the same fields in creation and the merge patch.
const conditionFields = (absent: string) => ({
  allowed_cidrs: Type.Optional(
    Type.Union(
      [
        Type.Array(Type.String({ maxLength: 64 }), {
          minItems: 1,
          maxItems: ALLOWED_CIDRS_MAX,
          examples: [['203.0.113.0/24', '2001:db8::/32']],
        }),
        Type.Null(),
      ],
      {
        description:
          `The IPv4 and IPv6 networks (CIDR notation, at most ${ALLOWED_CIDRS_MAX}; a bare address is its /32 or ` +
          '/128) the token may be used from; null: anywhere. Stored canonical (lowercase, compressed); a ' +
          'malformed network, host bits set past the prefix or a duplicate is 422. A request from elsewhere is ' +
          'refused (403 TOKEN_ADDRESS_NOT_ALLOWED). From a calling token that has allowed_cidrs, each network ' +
          "must lie within one of the caller's (null is 422). " +
          absent,
      },
    ),
  ),
  not_before: Type.Optional(
    Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
      description:
        'RFC 3339: the token is refused (401 invalid_token) until then; null: valid at once. Before the ' +
        "token's expiry, and never earlier than the calling token's own not_before (422). " +
        absent,
    }),
  ),
  enabled: Type.Optional(
    Type.Union([Type.Boolean(), Type.Null()], {
      description: 'false: the token is refused everywhere (401) but kept; true (or null) makes it work again.',
    }),
  ),
});

export const CreateTokenBody = Type.Object(
  {
    name: NameField,
    scopes: scopesField(),
    expires_at: Type.Optional(
      expiresAtField(
        'RFC 3339 (a real calendar date and time; no leap second). ' +
          "Absent: the calling token's expiry (never, if it never expires). " +
          'null: never expires, refused (422) when the calling token expires. ' +
          "A new token never outlives its creator: a time after the calling token's expiry is 422.",
      ),
    ),
    ...conditionFields("Absent: the calling token's (none, if it has none)."),
  },
  // The example leaves expires_at out (an example date would go stale, then be refused).
  { additionalProperties: false, examples: [{ name: 'ci deploy', scopes: ['apps:read', 'apps:write'] }] },
);
export type CreateTokenBody = Static<typeof CreateTokenBody>;

/**
 * PATCH body, a JSON merge patch (RFC 7396): the fields present are set, absent ones kept.
 * Neither field can be removed (null is 422): a token always has a name and a scope.
 */
export const PatchTokenBody = Type.Object(
  {
    name: Type.Optional(NameField),
    scopes: Type.Optional(
      scopesField(
        'The whole new scope list (it replaces the old one); the calling token must hold every scope in it, ' +
          'as at creation',
      ),
    ),
    ...conditionFields('Absent: kept; null clears it.'),
  },
  { additionalProperties: false, examples: [{ name: 'ci deploy (read only)', scopes: ['apps:read'] }] },
);
export type PatchTokenBody = Static<typeof PatchTokenBody>;

/** POST .../rotate body. No body at all is read as `{}` (see routes.ts). */
export const RotateTokenBody = Type.Object(
  {
    grace_period_s: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: GRACE_MAX_S,
        description:
          `Seconds the secret current until now keeps working (0 to ${GRACE_MAX_S}; default 0: refused at once). ` +
          'At most two secrets are ever live: rotating again during a grace period ends it at once.',
        examples: [3600],
      }),
    ),
    expires_at: Type.Optional(
      expiresAtField(
        'A new expiry for the token, with the rules of creation (RFC 3339, future, within ' +
          "TOKEN_MAX_LIFETIME_DAYS, never after the calling token's expiry; null: never expires, refused when " +
          "the calling token expires). Absent: the token keeps its expiry, but never beyond the calling token's.",
      ),
    ),
  },
  { additionalProperties: false, examples: [{ grace_period_s: 3600 }] },
);
export type RotateTokenBody = Static<typeof RotateTokenBody>;

// The conditions as every token object shows them.
const ConditionViews = {
  allowed_cidrs: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description: 'The networks the token may be used from (canonical CIDRs); null: anywhere',
    examples: [['203.0.113.0/24']],
  }),
  not_before: Type.Union([Timestamp, Type.Null()], { description: 'Refused before this time; null: valid at once' }),
  enabled: Type.Boolean({ description: 'false: refused everywhere, kept' }),
};

/** The create (and rotate) response: the only place a secret is ever shown. No last_used_at. */
export const CreatedToken = Type.Object({
  id: TokenId,
  name: TokenName,
  token: Type.String({
    description: 'The secret. Shown in this response only (creation, or the new secret of a rotation).',
    examples: ['icat_4lTzT0rbd6mWl2Ka7dM1yQ5o8kRxJc3H0000aB'],
  }),
  scopes: Scopes,
  created_at: Timestamp,
  expires_at: NullableTimestamp,
  ...ConditionViews,
});
export type CreatedToken = Static<typeof CreatedToken>;

/** The rotate response: the created token's fields, and until when the secret current until now works. */
export const RotatedToken = Type.Object({
  ...CreatedToken.properties,
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()], {
    description:
      'Until when the secret current until now keeps working (the end of the grace period, RFC 3339); ' +
      'null when there is no grace period: it is refused from now on',
  }),
});
export type RotatedToken = Static<typeof RotatedToken>;

export const TokenView = Type.Object({
  id: TokenId,
  name: TokenName,
  scopes: Scopes,
  created_at: Timestamp,
  last_used_at: NullableTimestamp,
  last_used_ip: Type.Union([Type.String(), Type.Null()], {
    description:
      'The client address of the use last_used_at records (as the API or forward auth saw it: TRUST_PROXY ' +
      'decides whether a proxy header is read; introspection: its client_address); null before the first use, ' +
      'and when that address was not known (an introspection without client_address)',
    examples: ['203.0.113.7'],
  }),
  expires_at: NullableTimestamp,
  ...ConditionViews,
});
export type TokenView = Static<typeof TokenView>;

export const TokenList = Type.Array(TokenView);

export const LIST_PER_PAGE_MAX = 1000;
export const LIST_PER_PAGE_DEFAULT = 100;

/**
 * The page parameters of the lists kept oldest first (tokens, accounts; query.ts reads
 * them), as GET /api/v1/audit-events has them: `per_page` and the opaque `cursor`. A
 * list with filters of its own spreads them beside its filters.
 */
export const PageFields = {
  per_page: Type.Optional(
    numericText(
      Type.String({
        pattern: `^(?:[1-9][0-9]{0,2}|${LIST_PER_PAGE_MAX})$`,
        default: String(LIST_PER_PAGE_DEFAULT),
        description: `Items per page: a whole number from 1 to ${LIST_PER_PAGE_MAX}, in plain decimal digits`,
      }),
      { type: 'integer', minimum: 1, maximum: LIST_PER_PAGE_MAX, default: LIST_PER_PAGE_DEFAULT },
    ),
  ),
  cursor: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'Where the page starts: copy it from the `Link: <...>; rel="next"` header of the previous page',
    }),
  ),
};

/** A list query of nothing but its page: unknown parameters are refused. */
export const PageParams = Type.Object(PageFields, { additionalProperties: false });
export type PageParams = Static<typeof PageParams>;

/** The orders of a token list: by creation (the default), or by last use. */
// No `default` keyword: validation would write it into every query, and so into every next link.
export const TokenSort = Type.Union([Type.Literal('created_at'), Type.Literal('last_used_at')], {
  description:
    '`created_at` (the default): oldest first, by created_at then id. `last_used_at`: the most recently used ' +
    'first, never-used tokens last, ties by id (oldest first), across every page. A cursor belongs to its ' +
    'order: one from the other order is 400 INVALID_QUERY.',
});

/** The token lists' query: the order and the page; unknown parameters are refused. */
export const TokenListQuery = Type.Object(
  { sort: Type.Optional(TokenSort), ...PageFields },
  { additionalProperties: false },
);
export type TokenListQuery = Static<typeof TokenListQuery>;

/** The order of the token lists, as their answers describe it. */
export const TOKEN_LIST_ORDER = 'oldest first (created_at, then id), or by last use with `sort=last_used_at`';

/** A paged list's wire shape with the header that pages it, for the OpenAPI document. */
export function pagedList<T extends Parameters<typeof Type.Array>[0]>(
  items: T,
  what: string,
  order = 'oldest first (created_at, then id)',
) {
  return Type.Array(items, {
    description: `${what}, ${order}`,
    headers: { Link: NEXT_PAGE },
  });
}

/** GET /api-tokens/current: the token's view and the account it belongs to. */
export const CurrentTokenView = Type.Object({
  ...TokenView.properties,
  account_id: Type.String({
    description: 'The account the token belongs to (`acc_` + ULID)',
    examples: ['acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H'],
  }),
});
export type CurrentTokenView = Static<typeof CurrentTokenView>;

export const ScopeView = Type.Object({
  scope: Type.String(),
  resource: Type.String(),
  action: Type.Union([Type.Literal('read'), Type.Literal('write')]),
  description: Type.String(),
  operator_only: Type.Boolean({
    description: 'Only tokens of the operator account may hold it (elsewhere: 422)',
  }),
});
export type ScopeView = Static<typeof ScopeView>;

export const ScopeList = Type.Array(ScopeView);

export const IdParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

const UsageInstant = (description: string) =>
  Type.String({
    maxLength: 64,
    description: `${description}: an RFC 3339 timestamp naming a real date and time, e.g. 2026-11-21T19:00:00Z`,
  });

/** GET .../api-tokens/{id}/usage: the range of hours; unknown parameters are refused. */
export const UsageQuery = Type.Object(
  {
    since: Type.Optional(
      UsageInstant(
        `From the hour holding this time (default: ${USAGE_SPAN_DEFAULT_DAYS} days before until); at most ` +
          `${USAGE_SPAN_MAX_DAYS} days before until`,
      ),
    ),
    until: Type.Optional(UsageInstant('Hours starting before this time (default: now)')),
  },
  { additionalProperties: false },
);
export type UsageQuery = Static<typeof UsageQuery>;

const Count = Type.Integer({ minimum: 0 });

/** One hour of a token's usage. */
export const UsageBucketView = Type.Object(
  {
    hour: Type.String({
      format: 'date-time',
      description: "The hour's start, RFC 3339 UTC",
      examples: ['2026-11-27T17:00:00.000Z'],
    }),
    valid: {
      ...Count,
      description: 'Uses let through: verified, with the scopes the request needed, within the rate limit',
    },
    refused: { ...Count, description: 'Uses refused, every reason together' },
    refused_by_reason: Type.Object(
      Object.fromEntries(USAGE_REASONS.map((r) => [r, Type.Optional(Count)])) as Record<
        UsageReason,
        TOptional<typeof Count>
      >,
      {
        additionalProperties: false,
        description:
          'The refused uses by reason; only the reasons with a count are present. expired, not_yet_valid, ' +
          'disabled, address (outside allowed_cidrs), suspended (the account): the token was refused; scope: it ' +
          'lacked a scope the request needed (or a previous secret tried a change); rate_limited: over the rate limit',
      },
    ),
  },
  {
    examples: [
      { hour: '2026-11-27T17:00:00.000Z', valid: 12, refused: 3, refused_by_reason: { scope: 2, address: 1 } },
    ],
  },
);
export type UsageBucketView = Static<typeof UsageBucketView>;

export const UsageList = Type.Array(UsageBucketView, {
  description: 'Hourly buckets, oldest first; an hour without any use has none',
});
/** The token shapes by their names in the OpenAPI document's components.schemas. */
export const TOKEN_SCHEMAS = {
  ApiToken: TokenView,
  ApiTokenCreated: CreatedToken,
  ApiTokenRotated: RotatedToken,
  CurrentApiToken: CurrentTokenView,
  ApiTokenCreate: CreateTokenBody,
  ApiTokenPatch: PatchTokenBody,
  ApiTokenRotate: RotateTokenBody,
  Scope: ScopeView,
  ApiTokenUsageHour: UsageBucketView,
};
