// Wire shapes of the account endpoints, each declared once (as src/tokens/schemas.ts):
// the TypeScript types are their Statics, Fastify validates and serialises by them, and
// the OpenAPI document shows them. The account object carries exactly id, name,
// external_id (null when unset), status, rate_limit (null: the default) and created_at.
import { Type, type Static } from 'typebox';
import { NAME_MAX } from '../tokens/limits.js';
import { PageFields, Timestamp } from '../tokens/schemas.js';
import { EXTERNAL_ID_MAX } from './rules.js';

export const AccountId = Type.String({
  description: 'Account id, `acc_` + ULID',
  examples: ['acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H'],
});

/** The largest rate limit an account may be given (RATE_LIMIT_ACCOUNT's bound). */
export const ACCOUNT_RATE_LIMIT_MAX = 10_000_000;

const RATE_LIMIT_DESCRIPTION =
  "Requests per rate-limit window (RATE_LIMIT_WINDOW_S) for all the account's tokens together, across " +
  'every instance; over it, 429 ACCOUNT_RATE_LIMITED. 0: no account limit (each token keeps its own). ' +
  'null: the default, RATE_LIMIT_ACCOUNT';

export const AccountRateLimit = Type.Union(
  [Type.Integer({ minimum: 0, maximum: ACCOUNT_RATE_LIMIT_MAX }), Type.Null()],
  { description: RATE_LIMIT_DESCRIPTION, examples: [6000] },
);

export const AccountStatus = Type.Union([Type.Literal('active'), Type.Literal('suspended')], {
  description: "`suspended`: the account's tokens are refused everywhere until it is `active` again",
});

const NAME_DESCRIPTION =
  `Label, at most ${NAME_MAX} characters (surrounding spaces are trimmed); the rules of a token name: ` +
  'no control, format (invisible, bidi), default-ignorable or line/paragraph separator characters; ' +
  'at least one visible character, and none that shows nothing at either end';

const EXTERNAL_ID_DESCRIPTION =
  `The platform's own id of this customer: 1 to ${EXTERNAL_ID_MAX} printable characters ` +
  '(letters, marks, digits, punctuation, symbols and inner spaces; no control, format, invisible or ' +
  'other whitespace characters, no space at either end), compared exactly; unique across accounts';

export const Account = Type.Object({
  id: AccountId,
  name: Type.String({ examples: ['Acme Corp'] }),
  external_id: Type.Union([Type.String(), Type.Null()], {
    description: EXTERNAL_ID_DESCRIPTION,
    examples: ['cus_8412'],
  }),
  status: AccountStatus,
  rate_limit: AccountRateLimit,
  created_at: Timestamp,
});
export type Account = Static<typeof Account>;

export const AccountList = Type.Array(Account);

export const CreateAccountBody = Type.Object(
  {
    name: Type.String({ maxLength: NAME_MAX, description: NAME_DESCRIPTION, examples: ['Acme Corp'] }),
    external_id: Type.Optional(
      Type.Union([Type.String({ maxLength: EXTERNAL_ID_MAX }), Type.Null()], {
        description: `${EXTERNAL_ID_DESCRIPTION}. Absent or null: none.`,
      }),
    ),
  },
  { additionalProperties: false, examples: [{ name: 'Acme Corp', external_id: 'cus_8412' }] },
);
export type CreateAccountBody = Static<typeof CreateAccountBody>;

/**
 * PATCH body, a JSON merge patch (RFC 7396): the fields present are set, absent ones
 * kept. Only rate_limit may be removed (null: back to the default): a name is required,
 * a status always set.
 */
export const PatchAccountBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: NAME_MAX, description: NAME_DESCRIPTION })),
    status: Type.Optional(AccountStatus),
    rate_limit: Type.Optional(AccountRateLimit),
  },
  { additionalProperties: false, examples: [{ status: 'suspended' }] },
);
export type PatchAccountBody = Static<typeof PatchAccountBody>;

export const AccountQuery = Type.Object(
  {
    status: Type.Optional(AccountStatus),
    external_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: EXTERNAL_ID_MAX, description: 'Exactly this external_id' }),
    ),
    ...PageFields,
  },
  { additionalProperties: false },
);
export type AccountQuery = Static<typeof AccountQuery>;

export const AccountIdParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

export const AccountTokenParams = Type.Object({
  id: Type.String({ maxLength: 200 }),
  token_id: Type.String({ maxLength: 200 }),
});

/** The account shapes by their names in the OpenAPI document's components.schemas. */
export const ACCOUNT_SCHEMAS = { Account, AccountCreate: CreateAccountBody, AccountPatch: PatchAccountBody };
