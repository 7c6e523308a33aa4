// Bearer authentication (RFC 6750) and scope checks. Routes declare what they need in
// their config, and installRouteAuth() turns that into an onRequest hook (the same
// declaration feeds the OpenAPI document):
//   config: { auth: { scopes: ['api-tokens:write'] } }   a token with that scope
//   config: { auth: { scopes: [] } }                     any valid token
//   config: { auth: 'optional' }                         anonymous allowed; a bad token is not
//   config: { auth: 'custom' }                           the handler calls authenticate()
// A successful authentication counts as a use (last_used_at, batched): the one
// verification (TokenService.verify) counts it.
//
// A token's previous secret, in the grace period after a rotation, is read-only here: a
// route that needs a `:write` scope (every route that changes tokens, accounts or the
// catalog) refuses it with 403 PREVIOUS_SECRET_READ_ONLY, whatever the token's scopes. The
// grace period keeps deployed readers working while the new secret rolls out; it must not
// let whoever holds the old (perhaps leaked) secret rotate the owner out, mint tokens or
// change the token. Elsewhere (reads, forward auth, introspection) it keeps the token's
// scopes until the grace period ends.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest, onRequestHookHandler, RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import type { App } from './types.js';
import { AppError } from '../errors.js';
import type { TokenWithAccount } from '../storage/types.js';
import type { SecretKind, TokenService, VerifyFailure, VerifyResult } from '../tokens/service.js';
import { knownAddress, type ClientAddress } from '../tokens/conditions.js';
import { missingScopes, OPERATOR_ONLY_SCOPES, parseScope } from '../tokens/scopes.js';
import { isOperatorAccount } from '../accounts/ids.js';
import { addressKey } from './client-key.js';
import { FailureLimiter } from './failure-limiter.js';
import { repeatedHeader } from './headers.js';

export type RouteAuth = { scopes: string[] } | 'optional' | 'custom';

declare module 'fastify' {
  interface FastifyInstance {
    /** The one authentication of every route and of forward auth. */
    tokenAuth: Auth;
  }
  interface FastifyRequest {
    /** The authenticated token (with its account's status and rate limit), or null for an anonymous request. */
    token: TokenWithAccount | null;
    /** Which of the token's secrets authenticated the request; null for an anonymous request. */
    tokenSecret: SecretKind | null;
  }
  interface FastifyContextConfig {
    /** What the route needs from the caller (see src/http/auth.ts). Absent: nothing. */
    auth?: RouteAuth;
  }
}

const REALM = 'infracat';

type VerifyFailureResult = { ok: false; reason: 'scheme' };
const SCHEME_FAILURE: VerifyFailureResult = { ok: false, reason: 'scheme' };

const FAILURE_TEXT: Record<VerifyFailure | 'scheme', string> = {
  format: 'the token is malformed',
  checksum: 'the token is malformed (checksum mismatch)',
  unknown: 'the token is not valid (unknown or deleted)',
  expired: 'the token has expired',
  suspended: "the token's account is suspended",
  disabled: 'the token is disabled (enabled: false)',
  not_yet_valid: 'the token is not valid yet (its not_before is in the future)',
  address: 'the token may not be used from this address',
  scheme: 'use the Authorization header with the Bearer scheme',
};

/**
 * Query parameters that would carry a credential in a URL, which RFC 6750 discourages;
 * in any case (`Access_Token=` is the same mistake). Names arrive percent-decoded.
 */
const QUERY_CREDENTIALS = new Set(['access_token', 'token', 'api_key', 'apikey']);

export interface Auth {
  /**
   * Authenticates the request (sets request.token; the verification counts the use) and
   * checks scopes. `required` null: anonymous allowed; [] any valid token. `changes`: the
   * route changes something, which only a token's current secret may do (the hook passes
   * changesSomething(); forward auth changes nothing here). Throws the 400/401/403/429
   * problem. `address`: the client address the token's allowed_cidrs are judged by (default
   * request.ip, which TRUST_PROXY governs; forward auth passes the gateway's report). Done
   * synchronously (undefined, or the problem thrown) when there is no secret to verify
   * (anonymous, an Authorization that carries none), else a promise of the verification's
   * end, rejected with the problem.
   */
  authenticate(
    request: FastifyRequest,
    required: readonly string[] | null,
    changes?: boolean,
    address?: ClientAddress,
  ): void | Promise<void>;
  /**
   * Authenticates a secret the request carries elsewhere than in Authorization (the token
   * exchange's `subject_token`), as authenticate() with any valid token required: the same
   * verification, failure limiter and refusals. Sets request.token.
   */
  authenticateSecret(request: FastifyRequest, secret: string, address?: ClientAddress): Promise<void>;
  /** The onRequest hook of a route that needs `required` (null: anonymous allowed). */
  hook(required: readonly string[] | null): onRequestHookHandler;
}

/** The secret of an `Authorization: Bearer <secret>` value (RFC 6750 section 2.1), or null. */
function bearerSecret(header: string): string | null {
  const match = /^Bearer +([^\s]+) *$/i.exec(header);
  return match === null ? null : match[1]!;
}

/** The refusal of a credential passed in the query string (checked on every request), or null. */
export function queryCredentialProblem(query: unknown): AppError | null {
  if (query === undefined || query === null) return null;
  const found = Object.keys(query).find((k) => QUERY_CREDENTIALS.has(k.toLowerCase()));
  if (found === undefined) return null;
  return new AppError(
    'TOKEN_IN_QUERY',
    `credentials are not accepted in the query string (${found}); use the Authorization header`,
    { headers: { 'www-authenticate': bearerChallenge({ error: 'invalid_request' }) } },
  );
}

export interface AuthOptions {
  service: TokenService;
  limiter: FailureLimiter;
  now?: () => number;
}

/**
 * The `WWW-Authenticate` challenge (RFC 6750 section 3) of every 401, and of the 400s and
 * 403s about a token: the one place that spells it.
 */
export function bearerChallenge(params: { error?: string; error_description?: string; scope?: string } = {}): string {
  const extra = Object.entries(params)
    .map(([k, v]) => `, ${k}="${v}"`)
    .join('');
  return `Bearer realm="${REALM}"${extra}`;
}

export function createAuth(options: AuthOptions): Auth {
  const { service, limiter } = options;
  const now = options.now ?? Date.now;

  /**
   * The secret the request presents, or null for an anonymous request where anonymous is
   * allowed (request.token is then null). Throws the 400/401 of a request that cannot be
   * authenticated as sent; a wrong scheme comes back as a failed verification.
   */
  function presented(request: FastifyRequest, required: readonly string[] | null): string | VerifyFailureResult | null {
    request.token = null;
    request.tokenSecret = null;
    const header = request.headers.authorization;
    // Node keeps the first of several Authorization headers and drops the rest: which
    // one did the client (or a proxy) mean? Refused, as RFC 6750 section 3.1 says.
    if (header !== undefined && repeatedHeader(request.raw.rawHeaders, 'authorization')) {
      throw new AppError('BAD_REQUEST', 'send exactly one Authorization header', {
        headers: { 'www-authenticate': bearerChallenge({ error: 'invalid_request' }) },
      });
    }
    if (header === undefined || header === '') {
      if (required === null) return null;
      throw new AppError('UNAUTHORIZED', 'this endpoint needs a token: Authorization: Bearer <token>', {
        headers: { 'www-authenticate': bearerChallenge() },
      });
    }
    return bearerSecret(header) ?? SCHEME_FAILURE;
  }

  /**
   * Sets request.token, or throws the 401/403/429 the result calls for.
   * `changes`: the route changes something (it needs a `:write` scope), which only a
   * token's current secret may do.
   */
  function accept(
    request: FastifyRequest,
    result: VerifyResult | VerifyFailureResult,
    required: readonly string[] | null,
    changes: boolean,
    address: ClientAddress,
  ): void {
    // A right secret from the wrong place: refused as forbidden, before any quota is spent
    // (the rate limit counts later) and not counted as a guess by the failure limiter.
    if (!result.ok && result.reason === 'address') {
      throw new AppError(
        'TOKEN_ADDRESS_NOT_ALLOWED',
        address.known
          ? `the token may not be used from ${address.address}: it is outside the token's allowed_cidrs`
          : `the token is limited to allowed_cidrs and the client address cannot be read: ${address.reason}`,
      );
    }
    if (!result.ok) {
      // Past the limit a failure is a 429 (back off); a valid token is still answered.
      const wait = limiter.fail(addressKey(request.ip), now());
      if (wait > 0) {
        throw new AppError('RATE_LIMITED', 'too many failed authentications from this address; wait before retrying', {
          headers: { 'retry-after': String(wait) },
        });
      }
      const description = FAILURE_TEXT[result.reason];
      throw new AppError(result.reason === 'scheme' ? 'UNAUTHORIZED' : 'INVALID_TOKEN', description, {
        headers: {
          'www-authenticate':
            result.reason === 'scheme'
              ? bearerChallenge()
              : bearerChallenge({ error: 'invalid_token', error_description: description }),
        },
      });
    }
    request.token = result.token;
    request.tokenSecret = result.secret;
    if (required !== null && required.length > 0) {
      // Before the scopes: no token of another account can hold an operator-only scope, so
      // naming it as missing would send the caller after something it can never get.
      if (!isOperatorAccount(result.token.accountId) && required.some((s) => OPERATOR_ONLY_SCOPES.includes(s))) {
        const detail = "only tokens of the operator account may make this request; this token's account is not it";
        service.recordRefusal(result.token, 'scope');
        throw new AppError('INSUFFICIENT_SCOPE', detail, {
          headers: { 'www-authenticate': bearerChallenge({ error: 'insufficient_scope', error_description: detail }) },
          members: { required_scopes: required },
        });
      }
      const missing = missingScopes(result.token.scopes, required);
      if (missing.length > 0) {
        service.recordRefusal(result.token, 'scope');
        throw new AppError('INSUFFICIENT_SCOPE', `this request needs the scope ${missing.join(', ')}`, {
          headers: { 'www-authenticate': bearerChallenge({ error: 'insufficient_scope', scope: required.join(' ') }) },
          members: { required_scopes: required, missing_scopes: missing },
        });
      }
    }
    if (changes && result.secret === 'previous') {
      // An insufficient_scope refusal (the secret lacks the right to change), counted as one.
      service.recordRefusal(result.token, 'scope');
      const detail =
        "this is the token's previous secret, which keeps working only for reads during the grace period " +
        'after a rotation; make changes with the current secret';
      throw new AppError('PREVIOUS_SECRET_READ_ONLY', detail, {
        headers: { 'www-authenticate': bearerChallenge({ error: 'insufficient_scope', error_description: detail }) },
      });
    }
  }

  function authenticate(
    request: FastifyRequest,
    required: readonly string[] | null,
    changes = false,
    address: ClientAddress = knownAddress(request.ip),
  ): void | Promise<void> {
    const secret = presented(request, required);
    if (secret === null) return;
    if (typeof secret !== 'string') return accept(request, secret, required, changes, address);
    return verified(request, secret, required, changes, address);
  }

  function verified(
    request: FastifyRequest,
    secret: string,
    required: readonly string[] | null,
    changes: boolean,
    address: ClientAddress,
  ): Promise<void> {
    return service
      .verify(secret, {
        // Only a lookup in storage meets the gate (made then, for this client's address).
        gate: (hash, read) => limiter.gate(addressKey(request.ip), now)(hash, read),
        address,
      })
      .then((result) => accept(request, result, required, changes, address));
  }

  return {
    authenticate,
    authenticateSecret: (request, secret, address = knownAddress(request.ip)) => {
      request.token = null;
      request.tokenSecret = null;
      return verified(request, secret, [], false, address);
    },
    // A callback hook: an anonymous request has nothing to wait for.
    hook: (required) => {
      const changes = changesSomething(required);
      return (request, _reply, done) => {
        let pending: void | Promise<void>;
        try {
          pending = authenticate(request, required, changes);
        } catch (err) {
          return done(err as Error);
        }
        if (pending === undefined) return done();
        pending.then(() => done(), done);
      };
    },
  };
}

/**
 * Whether a route that needs `required` changes something: it needs a `:write` scope. Every
 * route of infracat's own API that changes state does, and only those do (introspection is
 * a POST that needs `api-tokens:read`: a read), so a new write route is covered by its scope.
 */
export function changesSomething(required: readonly string[] | null): boolean {
  return required !== null && required.some((scope) => parseScope(scope)?.action === 'write');
}

/** Attaches each route's declared authentication (config.auth) as an onRequest hook. */
export function installRouteAuth(app: App, auth: Auth): void {
  app.addHook('onRoute', (route) => {
    const need = route.config?.auth;
    if (need === undefined || need === 'custom') return;
    const hook = auth.hook(need === 'optional' ? null : need.scopes);
    const existing =
      route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    route.onRequest = [...existing, hook];
  });
}

export interface RouteAuthOptions {
  /** AUTH_FAILURE_LIMIT failed authentications per address and AUTH_FAILURE_WINDOW_S. */
  failureLimit: number;
  failureWindowS: number;
  /** The clock of token rules; Date.now when absent. */
  now: (() => number) | undefined;
}

/** Authentication of the token service's tokens, on every route that declares config.auth. */
export const routeAuth = fp<RouteAuthOptions, RawServerDefault, TypeBoxTypeProvider>(
  (app, { failureLimit, failureWindowS, now }, done) => {
    const auth = createAuth({
      service: app.infracat.tokens.service,
      limiter: new FailureLimiter(failureLimit, failureWindowS * 1000),
      ...(now !== undefined ? { now } : {}),
    });
    app.decorate('tokenAuth', auth);
    app.decorateRequest('token', null);
    app.decorateRequest('tokenSecret', null);
    installRouteAuth(app, auth);
    done();
  },
  { name: 'infracat-auth', dependencies: ['infracat-services'] },
);
