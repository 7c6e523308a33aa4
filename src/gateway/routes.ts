// How the rest of the platform uses infracat tokens without re-implementing them:
//
// - Forward auth, for nginx `auth_request`, Traefik `ForwardAuth` and Envoy `ext_authz`
//   (HTTP): `/api/v1/auth/check` answers 200 with the token's identity in headers, or
//   401/403 with WWW-Authenticate. Required scopes come from `scope` query parameters
//   (set in the gateway's config; then nothing the client sent but its token is read) or
//   from the rule table, by the original method and path, which are read only from what
//   the configured gateway sets (src/gateway/forwarded.ts): nginx's X-Original-*,
//   Traefik's X-Forwarded-Method/-Uri, or Envoy's `/api/v1/auth/check/<original path>`
//   with the original method (there the query is the client's, so `scope` is not read).
//   Anything ambiguous is a 400, never a guess.
// - Introspection (RFC 7662): POST /api/v1/api-tokens/introspect. A token of the operator
//   account may introspect any token; any other only its own account's ("active": false
//   for the rest, exactly as for an unknown token).
//
// Every answer is no-store. A check that cannot reach storage fails closed (503).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { isOperatorAccount } from '../accounts/ids.js';
import { AppError } from '../errors.js';
import { bearerChallenge, type Auth } from '../http/auth.js';
import { acceptForms } from '../http/form-body.js';
import { ROUTED_METHODS } from '../http/methods.js';
import { noStoreAnswers } from '../http/no-store.js';
import { responseHeader } from '../http/response-headers.js';
import type { App } from '../http/types.js';
import type { PhantomTokens } from '../oauth/phantom.js';
import { signedTokenEnd } from '../oauth/signer.js';
import type { TokenRecord } from '../storage/types.js';
import type { SecretKind, TokenService } from '../tokens/service.js';
import { parseScope } from '../tokens/scopes.js';
import { ipFamily, knownAddress, unknownAddress, type ClientAddress } from '../tokens/conditions.js';
import { AUTO_SCOPE_FORM, readClientAddress } from './client-address.js';
import { discardBody } from './discard-body.js';
import { readForwardedHeaders, readPathForm, type Gateway, type Target } from './forwarded.js';
import { matchRule, type Rule } from './rules.js';

export interface GatewayRouteOptions {
  service: TokenService;
  auth: Auth;
  rules: readonly Rule[];
  /** Whose forwarded request to read (AUTH_CHECK_GATEWAY). */
  gateway: Gateway;
  /** The signed access tokens an allowed check carries in X-Token-Jwt (AUTH_CHECK_JWT); null: none. */
  phantom: PhantomTokens | null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** @fastify/cors reads it: false turns CORS, and its preflight answer, off for the route. */
    cors?: false;
  }
}

// No CORS on the check: the CORS plugin answers a preflight (OPTIONS with Origin and
// Access-Control-Request-Method) with 204 before any authentication, and a gateway that
// forwards an OPTIONS request to the check would take that 2xx for an approval.
// No rate limit: the gateway calls it once per request it forwards (limit at the gateway).
// Every answer is no-store, errors included (the check's own onRequest hook sets it).
const CHECK_CONFIG = { auth: 'custom', cors: false, rateLimit: false, noStore: true } as const;

const CHECK_PATH = '/api/v1/auth/check';

const CHECK_MAX_SCOPES = 20;

const CheckQuery = Type.Object({
  scope: Type.Optional(
    Type.Array(Type.String({ maxLength: 500 }), {
      maxItems: CHECK_MAX_SCOPES,
      description: 'Required scopes; repeat or space-separate',
    }),
  ),
});

const CheckAllowed = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  account_id: Type.String(),
});
type CheckAnswer = Static<typeof CheckAllowed>;

// The allowed answer carries the token's identity in headers too, for the gateway to pass on.
const IDENTITY_HEADERS = {
  'X-Token-Id': responseHeader('TokenId', "The token's id"),
  'X-Token-Name': responseHeader(
    'TokenName',
    "The token's name: printable ASCII as it is, anything else percent-encoded (UTF-8)",
  ),
  'X-Token-Scopes': responseHeader('TokenScopes', "The token's scopes, space-separated"),
  'X-Account-Id': responseHeader('AccountId', 'The account the token belongs to'),
};
const JWT_HEADER = {
  'X-Token-Jwt': responseHeader(
    'TokenJwt',
    'A signed access token for the token (RFC 9068 JWT, ES256; AUTH_CHECK_JWT): the same one for every check ' +
      'of the token until shortly before it expires. See docs/signed-tokens.md.',
  ),
};

const JWT_NOTE = ' With AUTH_CHECK_JWT=true, also X-Token-Jwt: a signed access token for the upstream.';

const CHECK_DESCRIPTION =
  'Required scopes: the `scope` parameters, else the rule table applied to ' +
  'X-Original-Method/X-Original-URI (nginx) or X-Forwarded-Method/X-Forwarded-Uri (Traefik). ' +
  'Allowed: 200 with X-Token-Id, X-Token-Name, X-Token-Scopes, X-Account-Id. Any method is answered ' +
  'alike, and a body of any type is read (within the body limit) and ignored. ' +
  'Envoy uses /api/v1/auth/check/{original path}. See docs/forward-auth.md.';

const PATH_FORM_DESCRIPTION =
  "Envoy's ext_authz (HTTP) form: the original path (and query) follows `/api/v1/auth/check`, exactly as the " +
  'client sent it, and the method is the original one; the rule table decides the scopes (the query is the ' +
  "client's, so `scope` is not read). Allowed: 200 with X-Token-Id, X-Token-Name, X-Token-Scopes, " +
  'X-Account-Id. See docs/forward-auth.md.';

/** `POST` -> `Post`: an operationId's suffix. */
const operationSuffix = (method: string): string => method[0]! + method.slice(1).toLowerCase();

const IntrospectBody = Type.Object(
  {
    token: Type.String({ maxLength: 512 }),
    token_type_hint: Type.Optional(Type.String({ maxLength: 64 })),
    client_address: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          'The IP address the token was presented from (RFC 7662 section 2.1 allows such context). A token with ' +
          'allowed_cidrs is active only when this is given and lies within them.',
        examples: ['203.0.113.7'],
      }),
    ),
  },
  { examples: [{ token: 'icat_4lTzT0rbd6mWl2Ka7dM1yQ5o8kRxJc3H0000aB' }] },
);

const IntrospectResponse = Type.Object({
  active: Type.Boolean(),
  scope: Type.Optional(Type.String()),
  token_id: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  iat: Type.Optional(Type.Integer()),
  exp: Type.Optional(Type.Integer()),
  nbf: Type.Optional(
    Type.Integer({ description: "The token's not_before, when it has one (seconds since the epoch)" }),
  ),
  allowed_cidrs: Type.Optional(
    Type.Array(Type.String(), { description: 'The networks the token may be used from, when it is limited' }),
  ),
  account_id: Type.Optional(Type.String({ description: 'The account the token belongs to' })),
});

/** The gateway shapes by their names in the OpenAPI document's components.schemas. */
export const GATEWAY_SCHEMAS = {
  ForwardAuthAllowed: CheckAllowed,
  IntrospectionRequest: IntrospectBody,
  Introspection: IntrospectResponse,
};

/** Header-safe token name: printable ASCII as is, anything else percent-encoded (UTF-8). */
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) && !value.includes('%') ? value : encodeURIComponent(value);
}

export function gatewayRoutes(app: App, { service, auth, rules, gateway, phantom }: GatewayRouteOptions): void {
  const isKnownScope = (s: string) => parseScope(s) !== null && service.registry.has(s);
  const Allowed = {
    ...CheckAllowed,
    headers: phantom === null ? IDENTITY_HEADERS : { ...IDENTITY_HEADERS, ...JWT_HEADER },
  };
  const jwtNote = phantom === null ? '' : JWT_NOTE;

  /**
   * An allowed check's answer: the token's identity, in headers for the gateway and in the
   * body, and with AUTH_CHECK_JWT its signed access token (synchronously when one is kept).
   */
  function allow(reply: FastifyReply, token: TokenRecord, secret: SecretKind): CheckAnswer | Promise<CheckAnswer> {
    reply
      .header('x-token-id', token.id)
      .header('x-token-name', headerSafe(token.name))
      .header('x-token-scopes', token.scopes.join(' '))
      .header('x-account-id', token.accountId);
    const body = { id: token.id, name: token.name, scopes: token.scopes, account_id: token.accountId };
    if (phantom === null) return body;
    const jwt = phantom.jwtFor(token, signedTokenEnd(token, secret));
    if (typeof jwt === 'string') {
      reply.header('x-token-jwt', jwt);
      return body;
    }
    return jwt.then((signed) => {
      reply.header('x-token-jwt', signed);
      return body;
    });
  }

  /** Scopes named by `scope` parameters (each may hold several, space-separated). */
  function scopesFromQuery(values: string[]): readonly string[] {
    const lists = values.map((v) => v.split(/[\s,]+/).filter((s) => s !== ''));
    // An empty parameter must not mean "any valid token": that is a config mistake.
    if (lists.some((l) => l.length === 0)) {
      throw new AppError(
        'INVALID_QUERY',
        'invalid query parameter scope: each scope parameter must name at least one scope',
        {
          members: { valid_scopes: service.registry.names() },
        },
      );
    }
    const scopes = lists.flat();
    const bad = scopes.filter((s) => !isKnownScope(s));
    if (bad.length > 0) {
      throw new AppError('INVALID_QUERY', `invalid query parameter scope: unknown scope ${bad.join(', ')}`, {
        members: { valid_scopes: service.registry.names() },
      });
    }
    return scopes;
  }

  /** Checks the token against what the rule table requires for the forwarded request. */
  async function decide(request: FastifyRequest, reply: FastifyReply, target: Target) {
    if (!target.ok) throw new AppError('BAD_REQUEST', target.reason);
    const required = matchRule(rules, target.method, target.path);
    const address = readClientAddress(target.via, request.raw.rawHeaders);
    if (required === null) {
      // Fail closed: still tell a caller with a bad token that the token is the problem.
      await auth.authenticate(request, [], false, address);
      throw new AppError('INSUFFICIENT_SCOPE', `no rule grants access to ${target.method} ${target.path}`, {
        headers: { 'www-authenticate': bearerChallenge({ error: 'insufficient_scope' }) },
      });
    }
    await auth.authenticate(request, required, false, address);
    return allow(reply, request.token!, request.tokenSecret!);
  }

  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const bodyLimit = plugin.initialConfig.bodyLimit ?? 1024 * 1024;
    // Gateways may forward the client's body (nginx does unless told not to); it is
    // irrelevant to the decision, so a body of any type is read, counted against the
    // body limit (413 past it) and dropped.
    api.removeAllContentTypeParsers();
    api.addContentTypeParser('*', (request, payload, done) => {
      discardBody(payload, request.headers['content-length'], bodyLimit).then(
        () => done(null, undefined),
        (err: Error) => done(err, undefined),
      );
    });
    // One hook for every check: the answer is no-store (errors included); and Fastify never
    // reads a GET or HEAD body (Traefik's forwardBody sends one with GET): it is read here
    // under the same limit, or Node would drain it after the answer. A callback hook:
    // almost every check has no body, and then nothing waits.
    api.addHook('onRequest', (request, reply, done) => {
      reply.header('cache-control', 'no-store');
      const length = request.headers['content-length'];
      const bodiless = request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
      if ((request.method !== 'GET' && request.method !== 'HEAD') || bodiless) return done();
      discardBody(request.raw, length, bodyLimit).then(
        () => done(),
        (err: Error) => {
          reply.header('connection', 'close');
          done(err);
        },
      );
    });

    const check = (request: FastifyRequest<{ Querystring: Static<typeof CheckQuery> }>, reply: FastifyReply) => {
      const fromQuery = request.query.scope;
      if (fromQuery === undefined) return decide(request, reply, readForwardedHeaders(gateway, request.raw.rawHeaders));
      // Gateway config: the check URL is fixed there, so neither the rule table nor any
      // forwarded header is consulted.
      const scopes = scopesFromQuery(fromQuery);
      const address =
        gateway === 'auto' ? unknownAddress(AUTO_SCOPE_FORM) : readClientAddress(gateway, request.raw.rawHeaders);
      const pending = auth.authenticate(request, scopes, false, address);
      if (pending === undefined) return allow(reply, request.token!, request.tokenSecret!);
      return pending.then(() => allow(reply, request.token!, request.tokenSecret!));
    };

    // One route per method, so that each is documented with an operationId of its own
    // (HEAD is GET's, answered by Fastify's HEAD route of each GET). nginx mirrors the client's method in some set-ups.
    for (const method of ROUTED_METHODS) {
      if (method === 'HEAD') continue;
      api.route({
        method,
        url: CHECK_PATH,
        config: CHECK_CONFIG,
        schema: {
          tags: ['gateway'],
          operationId: `forwardAuthCheck${method === 'GET' ? '' : operationSuffix(method)}`,
          summary:
            method === 'GET'
              ? 'Forward auth for nginx auth_request, Traefik ForwardAuth and Envoy ext_authz'
              : `Forward auth, as GET, for a gateway that sends the client's method (${method})`,
          description: CHECK_DESCRIPTION + jwtNote,
          querystring: CheckQuery,
          response: { 200: Allowed },
        },
        handler: check,
      });
    }

    for (const method of ROUTED_METHODS) {
      if (method === 'HEAD') continue;
      api.route({
        method,
        url: `${CHECK_PATH}/*`,
        config: CHECK_CONFIG,
        schema: {
          tags: ['gateway'],
          operationId: `forwardAuthCheckPath${operationSuffix(method)}`,
          summary: `Forward auth for Envoy ext_authz (HTTP): the original path after the check's (${method})`,
          description: PATH_FORM_DESCRIPTION + jwtNote,
          response: { 200: Allowed },
        },
        handler: async (request, reply) => {
          // Envoy ext_authz (HTTP): the original target follows the prefix, exactly as sent
          // (the raw URL, not the router's decoded parameter, so nothing is decoded twice);
          // the original method is ours.
          const url = request.raw.url ?? '';
          const target: Target = url.startsWith(`${CHECK_PATH}/`)
            ? readPathForm(gateway, request.raw.rawHeaders, request.method, url.slice(CHECK_PATH.length))
            : { ok: false, reason: `the path form must start with ${CHECK_PATH}/ exactly as written` };
          return decide(request, reply, target);
        },
      });
    }
  });

  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    // RFC 7662 clients send application/x-www-form-urlencoded; JSON is accepted too.
    // Either is read as UTF-8 exactly or refused (src/http/body-encoding.ts).
    acceptForms(plugin);
    noStoreAnswers(api);

    api.post(
      '/api/v1/api-tokens/introspect',
      {
        config: { auth: { scopes: ['api-tokens:read'] } },
        schema: {
          tags: ['gateway'],
          operationId: 'introspectApiToken',
          summary: 'RFC 7662 token introspection',
          description:
            'Form-encoded (`token=...`) or JSON body. ' +
            'Anything but an active token gives exactly `{"active": false}`. ' +
            "A token of the operator account may introspect any token; any other only its own account's " +
            '(`{"active": false}` for the others). A suspended account\'s tokens are not active, nor are ' +
            'disabled tokens, tokens before their not_before, and tokens with allowed_cidrs unless ' +
            '`client_address` is given and lies within them.',
          body: IntrospectBody,
          consumes: ['application/x-www-form-urlencoded', 'application/json'],
          response: { 200: IntrospectResponse },
        },
      },
      async (request) => {
        const { client_address: reported } = request.body;
        if (reported !== undefined && ipFamily(reported) === null) {
          throw new AppError('VALIDATION_FAILED', 'the introspection request is invalid; see errors', {
            errors: [
              { pointer: '/client_address', detail: 'must be one IPv4 or IPv6 address (no port, zone or brackets)' },
            ],
          });
        }
        const address: ClientAddress =
          reported === undefined ? unknownAddress('the introspection names no client_address') : knownAddress(reported);
        // The use is recorded below, once the caller may see the token.
        const result = await service.verify(request.body.token, { recordUse: false, address });
        if (!result.ok) return { active: false };
        const t = result.token;
        const caller = request.token!;
        // Another account's token is answered exactly as an unknown one, and not counted as a use.
        if (!isOperatorAccount(caller.accountId) && t.accountId !== caller.accountId) return { active: false };
        // The holder presented it to a resource server: that is a use, from the address it reports.
        service.recordUse(t, reported ?? null);
        return {
          active: true,
          scope: t.scopes.join(' '),
          token_id: t.id,
          name: t.name,
          iat: Math.floor(t.createdAt / 1000),
          ...(t.expiresAt !== null ? { exp: Math.floor(t.expiresAt / 1000) } : {}),
          ...(t.notBefore !== null ? { nbf: Math.floor(t.notBefore / 1000) } : {}),
          ...(t.allowedCidrs !== null ? { allowed_cidrs: t.allowedCidrs } : {}),
          account_id: t.accountId,
        };
      },
    );
  });
}
