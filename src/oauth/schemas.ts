// Wire shapes of the signed-token endpoints, each declared once: the published keys (RFC
// 7517), the authorization server's metadata (RFC 8414), the token exchange's request and
// answer (RFC 8693) and its errors (RFC 6749 section 5.2). The answers' shapes carry no
// description of their own: each route's answer says what it is, and the document refers
// to the named shape.
import { Type, type Static } from 'typebox';

export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const TOKEN_TYPE_ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
export const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';

/** Most `audience` parameters of one exchange. */
export const AUDIENCE_MAX = 5;
const AUDIENCE_CHARS = 500;

const Base64Url = (description: string) => Type.String({ pattern: '^[A-Za-z0-9_-]+$', description });

export const PublicJwk = Type.Object(
  {
    kty: Type.Literal('EC'),
    crv: Type.Literal('P-256'),
    x: Base64Url('The x coordinate (base64url)'),
    y: Base64Url('The y coordinate (base64url)'),
    kid: Type.String({ description: "RFC 7638 thumbprint of the key (SHA-256, base64url): a signed token's `kid`" }),
    alg: Type.Literal('ES256'),
    use: Type.Literal('sig'),
  },
  { description: 'A public key that signs access tokens (RFC 7517, EC P-256)' },
);

export const Jwks = Type.Object({
  keys: Type.Array(PublicJwk, {
    description: 'Every published key: the one signing now first, then those whose tokens may still be live',
  }),
});
export type JwksBody = Static<typeof Jwks>;

export const ServerMetadata = Type.Object({
  issuer: Type.String({
    description: "JWT_ISSUER: every signed token's `iss`",
    examples: ['https://tokens.example.com'],
  }),
  token_endpoint: Type.String({ description: 'Where tokens are exchanged (RFC 8693)' }),
  jwks_uri: Type.String({ description: 'The public keys of the signatures' }),
  grant_types_supported: Type.Array(Type.String(), { examples: [[GRANT_TOKEN_EXCHANGE]] }),
  token_endpoint_auth_methods_supported: Type.Array(Type.String(), {
    description: '`none`: the subject token is the credential; no client authentication',
  }),
  response_types_supported: Type.Array(Type.String(), {
    description: 'Empty: infracat has no authorization endpoint',
  }),
  scopes_supported: Type.Array(Type.String(), { description: 'The scope registry' }),
  service_documentation: Type.String({ description: 'The interactive API reference' }),
});
export type ServerMetadataBody = Static<typeof ServerMetadata>;

const urn = (value: string, description: string) =>
  Type.String({ maxLength: 200, description: `${description}: \`${value}\``, examples: [value] });

// Form-encoded. Unknown parameters are ignored (RFC 6749 section 3.2); each known one is
// given at most once (a repeated one arrives as a list and is refused), but `audience`,
// which RFC 8693 lets repeat.
export const ExchangeRequest = Type.Object(
  {
    grant_type: urn(GRANT_TOKEN_EXCHANGE, 'The grant'),
    subject_token: Type.String({
      maxLength: 512,
      description: 'An infracat token secret (its current one, or its previous one in a grace period)',
    }),
    subject_token_type: urn(TOKEN_TYPE_ACCESS_TOKEN, 'The type of the subject token'),
    scope: Type.Optional(
      Type.String({
        maxLength: 2000,
        description:
          'Space-separated scopes of the signed token, each held by the subject token (`write` implies ' +
          "`read`); absent: all of the subject token's",
        examples: ['apps:read'],
      }),
    ),
    audience: Type.Optional(
      Type.Union(
        [
          Type.String({ minLength: 1, maxLength: AUDIENCE_CHARS, pattern: '^[\\x21-\\x7e]+$' }),
          Type.Array(Type.String({ minLength: 1, maxLength: AUDIENCE_CHARS, pattern: '^[\\x21-\\x7e]+$' }), {
            minItems: 1,
            maxItems: AUDIENCE_MAX,
          }),
        ],
        {
          description:
            "The signed token's `aud`: the service(s) it is for (visible ASCII, at most " +
            `${AUDIENCE_MAX}, repeat the parameter for several); absent: the issuer`,
          examples: ['https://apps.example.com'],
        },
      ),
    ),
    requested_token_type: Type.Optional(
      Type.String({
        maxLength: 200,
        description:
          `Absent, \`${TOKEN_TYPE_JWT}\` or \`${TOKEN_TYPE_ACCESS_TOKEN}\`: ` + 'a signed access token either way',
      }),
    ),
  },
  {
    additionalProperties: true,
    description:
      'RFC 8693 token exchange, form-encoded: an infracat token for a signed access token (RFC 9068 JWT). ' +
      '`resource`, `actor_token` and `actor_token_type` are refused (no resource indicators, no delegation).',
    examples: [
      {
        grant_type: GRANT_TOKEN_EXCHANGE,
        subject_token: 'icat_4lTzT0rbd6mWl2Ka7dM1yQ5o8kRxJc3H0000aB',
        subject_token_type: TOKEN_TYPE_ACCESS_TOKEN,
        scope: 'apps:read',
      },
    ],
  },
);
export type ExchangeRequestBody = Static<typeof ExchangeRequest>;

export const ExchangeResponse = Type.Object({
  access_token: Type.String({ description: 'The signed access token (RFC 9068 JWT, ES256)' }),
  issued_token_type: Type.Literal(TOKEN_TYPE_JWT),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds until it expires (its `exp`)', examples: [300] }),
  scope: Type.String({ description: 'Its scopes, space-separated', examples: ['apps:read'] }),
});
export type ExchangeResponseBody = Static<typeof ExchangeResponse>;

export const OAUTH_ERRORS = [
  'invalid_request',
  'invalid_client',
  'invalid_scope',
  'invalid_target',
  'unsupported_grant_type',
  'temporarily_unavailable',
  'server_error',
] as const;
export type OAuthErrorCode = (typeof OAUTH_ERRORS)[number];

export const OAuthErrorSchema = Type.Object({
  error: Type.Union(
    OAUTH_ERRORS.map((e) => Type.Literal(e)),
    { description: 'RFC 6749 section 5.2 and RFC 8693 section 2.2.2' },
  ),
  error_description: Type.String({ description: 'What is wrong, for a person' }),
});
export type OAuthErrorBody = Static<typeof OAuthErrorSchema>;

/** The shapes by their names in the OpenAPI document's components.schemas. */
export const OAUTH_SCHEMAS = {
  JsonWebKey: PublicJwk,
  JsonWebKeySet: Jwks,
  AuthorizationServerMetadata: ServerMetadata,
  TokenExchangeRequest: ExchangeRequest,
  TokenExchange: ExchangeResponse,
  OAuthError: OAuthErrorSchema,
};
