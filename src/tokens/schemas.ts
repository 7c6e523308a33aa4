// Wire shapes of the token endpoints. Response schemas list every field that may leave
// the service: Fastify's serialiser drops anything else, so a secret or hash on a
// record can never reach a list body by accident.
import { Type, type Static } from 'typebox';

const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 UTC timestamp' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const Scopes = Type.Array(Type.String(), { description: '`<resource>:<action>` scopes' });

export const TokenId = Type.String({ description: 'Token id, `tok_` + ULID', examples: ['tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H'] });

export const CreateTokenBody = Type.Object(
  {
    name: Type.String({ maxLength: 1000, description: 'Label, 1-100 characters after trimming spaces; no control, format (invisible, bidi) or line/paragraph separator characters; at least one visible character, and none that shows nothing at either end' }),
    scopes: Type.Array(Type.String({ maxLength: 200 }), { minItems: 1, maxItems: 100 }),
    expires_at: Type.Optional(
      Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
        description:
          'RFC 3339 (a real calendar date and time; no leap second). Absent: the calling token\'s expiry (never, if it never expires). null: never expires, refused (422) when the calling token expires. A new token never outlives its creator: a time after the calling token\'s expiry is 422.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateTokenBody = Static<typeof CreateTokenBody>;

export const CreatedToken = Type.Object({
  id: TokenId,
  name: Type.String(),
  token: Type.String({ description: 'The secret. Shown in this response only.' }),
  scopes: Scopes,
  created_at: Timestamp,
  expires_at: NullableTimestamp,
});

export const TokenView = Type.Object({
  id: TokenId,
  name: Type.String(),
  scopes: Scopes,
  created_at: Timestamp,
  last_used_at: NullableTimestamp,
  expires_at: NullableTimestamp,
});
export type TokenView = Static<typeof TokenView>;

export const TokenList = Type.Array(TokenView);

export const ScopeList = Type.Array(
  Type.Object({
    scope: Type.String(),
    resource: Type.String(),
    action: Type.Union([Type.Literal('read'), Type.Literal('write')]),
    description: Type.String(),
  }),
);

export const IdParams = Type.Object({ id: Type.String({ maxLength: 200 }) });
