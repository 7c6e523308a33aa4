// Signed access tokens over HTTP:
//
// - GET /.well-known/jwks.json: the public keys (RFC 7517), and GET
//   /.well-known/oauth-authorization-server: the metadata (RFC 8414). Bytes made once at
//   start, answered from memory with a strong ETag (304 on a match) and `public,
//   max-age=300`; not rate limited, like /docs: verifiers behind one address fetch them.
// - POST /api/v1/oauth/token: RFC 8693 token exchange, form-encoded. The subject token is
//   verified by the one verification of every path (TokenService.verify, through the same
//   authentication as a route's, failed-authentication limiter included): deleted,
//   expired, disabled, not yet valid, a suspended account or a client address outside
//   allowed_cidrs are refused, and a success counts as a use. Then the token's rate limits
//   apply, as on every token route. Every answer is no-store, and every error of this
//   route, whatever raised it (the request guard, the body parser, validation, storage),
//   is answered in RFC 6749 section 5.2's form, not as a problem.
//
// On PostgreSQL without JWT_SIGNING_KEY_FILES the documents answer 404 SIGNED_TOKENS_OFF
// and the exchange `unsupported_grant_type`, each naming the setting.
import { createHash } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { Auth } from '../http/auth.js';
import { matchesIfNoneMatch } from '../http/conditional.js';
import { acceptForms } from '../http/form-body.js';
import { NoQuery } from '../http/no-query.js';
import { noStoreAnswers } from '../http/no-store.js';
import { responseHeader } from '../http/response-headers.js';
import { classifyError, type ProblemOptions } from '../http/problem.js';
import { SECURITY_HEADERS } from '../http/security.js';
import type { App } from '../http/types.js';
import { redactSecrets } from '../redact.js';
import type { TokenService } from '../tokens/service.js';
import { checkGrantType, grantedScopes, OAuthRefusal, readExchange, type ExchangeAsk } from './exchange.js';
import { signedTokenEnd } from './signer.js';
import { JWKS_PATH, METADATA_PATH, TOKEN_PATH, type SignedTokens } from './index.js';
import {
  ExchangeRequest,
  ExchangeResponse,
  Jwks,
  OAuthErrorSchema,
  ServerMetadata,
  GRANT_TOKEN_EXCHANGE,
  TOKEN_TYPE_JWT,
  type ExchangeRequestBody,
  type ExchangeResponseBody,
  type OAuthErrorCode,
} from './schemas.js';

export interface OAuthRouteOptions {
  /** null: signed access tokens are off (PostgreSQL without JWT_SIGNING_KEY_FILES). */
  signed: SignedTokens | null;
  service: TokenService;
  auth: Auth;
  /** How errors are classified, logged and counted (the app's problem handler's options). */
  problems: ProblemOptions;
}

const OFF =
  'signed access tokens are off: on PostgreSQL they need JWT_SIGNING_KEY_FILES (PEM files of EC P-256 ' +
  'private keys, the same on every instance); see docs/signed-tokens.md';

// The refusals the document shows as they are sent.
const CLIENT_AUTHENTICATION =
  'this endpoint takes no client authentication: leave out Authorization and send the infracat token as ' +
  'subject_token';
const FORM_ONLY = 'the body must be application/x-www-form-urlencoded';

const DOCUMENT_CACHE = 'public, max-age=300';
const DOCUMENT_HEADERS = {
  ETag: responseHeader('DocumentETag', 'Strong validator of these bytes: send it in If-None-Match'),
  'Cache-Control': responseHeader('DocumentCacheControl', `\`${DOCUMENT_CACHE}\``),
};

/** error_description's characters (RFC 6749 section 5.2): printable ASCII but `"` and `\`. */
function description(text: string): string {
  const plain = redactSecrets(text)
    .replaceAll('"', "'")
    .replaceAll('\\', '/')
    .replace(/[^\x20-\x7e]/g, '?');
  return plain.length > 500 ? `${plain.slice(0, 499)}.` : plain;
}

/** Field errors of a validation failure as one sentence: `subject_token is required; ...`. */
function fieldsDescription(errors: readonly { pointer: string; detail: string }[]): string {
  const parts = errors.slice(0, 5).map((e) => `${e.pointer.replace(/^\//, '') || 'the body'} ${e.detail}`);
  return parts.join('; ');
}

function retryAfter(err: AppError): Record<string, string> {
  const value = err.extras.headers?.['retry-after'];
  return value === undefined ? {} : { 'retry-after': value };
}

export function oauthRoutes(app: App, { signed, service, auth, problems }: OAuthRouteOptions): void {
  const documents = [
    {
      url: JWKS_PATH,
      operationId: 'getJwks',
      summary: 'The public keys of signed access tokens (JWKS)',
      description:
        'RFC 7517 JSON Web Key Set: every key that signs access tokens (ES256), the one signing now first. ' +
        "A signed token's `kid` names its key (the key's RFC 7638 thumbprint). See docs/signed-tokens.md.",
      schema: Jwks,
      answer: 'The JSON Web Key Set (RFC 7517 section 5)',
      body: signed?.jwks,
    },
    {
      url: METADATA_PATH,
      operationId: 'getAuthorizationServerMetadata',
      summary: "The authorization server's metadata (RFC 8414)",
      description:
        'Where tokens are exchanged and the keys are published, the grant (token exchange) and the scopes. ' +
        'Every URL starts with the issuer (JWT_ISSUER).',
      schema: ServerMetadata,
      answer: "The authorization server's metadata (RFC 8414 section 3.2)",
      body: signed?.metadata,
    },
  ];

  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    for (const d of documents) {
      // Pre-serialised bytes: the response schema documents their shape, and Fastify passes
      // Buffers through without serialising them again.
      const bytes = d.body === undefined ? null : Buffer.from(JSON.stringify(d.body));
      const etag = bytes === null ? '' : `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`;
      api.get(
        d.url,
        {
          config: {
            rateLimit: false,
            // Answered from memory: nothing can fail it with a 500. The 404 is documented where
            // it happens: a server that signs never answers it.
            problems:
              bytes === null
                ? {
                    404: 'Signed access tokens are off: PostgreSQL without JWT_SIGNING_KEY_FILES (SIGNED_TOKENS_OFF)',
                    500: null,
                  }
                : { 500: null },
          },
          schema: {
            tags: ['oauth'],
            operationId: d.operationId,
            summary: d.summary,
            description: d.description,
            querystring: NoQuery,
            response: {
              200: { ...d.schema, description: d.answer, headers: DOCUMENT_HEADERS },
              304: {
                type: 'null',
                description: 'Not modified: the If-None-Match ETag is current',
                headers: DOCUMENT_HEADERS,
              },
            },
          },
        },
        (request, typed) => {
          if (bytes === null) throw new AppError('SIGNED_TOKENS_OFF', OFF);
          // The bytes are the schema's shape, serialised once: the typed reply knows only objects.
          const reply = typed as unknown as FastifyReply;
          reply.header('etag', etag).header('cache-control', DOCUMENT_CACHE);
          if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) void reply.code(304).send();
          else void reply.type('application/json; charset=utf-8').send(bytes);
        },
      );
    }
  });

  /** Any error of the token endpoint, as the RFC 6749 error to answer. */
  function refusalOf(error: FastifyError | Error, request: FastifyRequest): OAuthRefusal {
    if (error instanceof OAuthRefusal) return error;
    // The only media type here is the form's (the app's answer would name JSON).
    if ((error as FastifyError).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return new OAuthRefusal('invalid_request', FORM_ONLY, 415);
    const err = classifyError(error, request, problems);
    switch (err.code) {
      // RFC 8693 section 2.2.2: a subject token that is not valid, for whatever reason.
      case 'INVALID_TOKEN':
      case 'TOKEN_ADDRESS_NOT_ALLOWED':
        return new OAuthRefusal('invalid_request', `subject_token: ${err.message}`);
      case 'VALIDATION_FAILED':
        return new OAuthRefusal('invalid_request', fieldsDescription(err.extras.errors ?? []) || err.message);
      case 'RATE_LIMITED':
      case 'ACCOUNT_RATE_LIMITED':
        return new OAuthRefusal('temporarily_unavailable', err.message, 429, retryAfter(err));
      default:
    }
    if (err.status === 503) return new OAuthRefusal('temporarily_unavailable', err.message, 503, retryAfter(err));
    if (err.status >= 500) return new OAuthRefusal('server_error', err.message, 500);
    // The body's own faults keep their statuses; anything else is RFC 6749's 400. A Bearer
    // challenge of the app's would point at an Authorization header this endpoint refuses.
    const status = err.status === 413 || err.status === 415 ? err.status : 400;
    const { 'www-authenticate': _challenge, ...headers } = err.extras.headers ?? {};
    return new OAuthRefusal('invalid_request', err.message, status, headers);
  }

  function sendRefusal(request: FastifyRequest, reply: FastifyReply, refusal: OAuthRefusal): FastifyReply {
    for (const [name, value] of Object.entries(refusal.headers)) reply.header(name, value);
    // As sendProblem (src/http/problem.ts): an error may come before the hook that sets these ran.
    reply.header('x-request-id', request.id);
    if (!reply.hasHeader('x-content-type-options')) reply.headers(SECURITY_HEADERS);
    return reply
      .code(refusal.status)
      .header('cache-control', 'no-store')
      .type('application/json; charset=utf-8')
      .send({ error: refusal.error, error_description: description(refusal.message) });
  }

  // What the exchange asks for, from its checks (preHandler) to its signature (handler).
  const asked = new WeakMap<FastifyRequest, ExchangeAsk & { scopes: string[] }>();

  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    api.removeAllContentTypeParsers();
    acceptForms(plugin);
    api.setErrorHandler((error: FastifyError, request, reply) =>
      sendRefusal(request, reply, refusalOf(error, request)),
    );
    noStoreAnswers(api);
    // The subject token is the credential (token_endpoint_auth_methods_supported: none).
    // A client that authenticates anyway is told so (RFC 6749 section 5.2), by the scheme it used.
    api.addHook('onRequest', (request, _reply, done) => {
      const header = request.headers.authorization;
      if (header === undefined) return done();
      const scheme = /^([A-Za-z][A-Za-z0-9._~+-]{0,19})(?: |$)/.exec(header)?.[1] ?? 'Bearer';
      done(
        new OAuthRefusal('invalid_client', CLIENT_AUTHENTICATION, 401, {
          'www-authenticate': `${scheme} realm="infracat"`,
        }),
      );
    });

    // Each error status described, with an example body of each error it answers.
    const refusal = (text: string, ...examples: [OAuthErrorCode, string][]) => ({
      ...OAuthErrorSchema,
      description: text,
      examples: examples.map(([error, detail]) => ({ error, error_description: description(detail) })),
    });
    api.post(
      TOKEN_PATH,
      {
        config: { ownErrors: true },
        schema: {
          tags: ['oauth'],
          operationId: 'exchangeToken',
          summary: 'Exchange an infracat token for a signed access token (RFC 8693)',
          description:
            'Form-encoded (`application/x-www-form-urlencoded`), without client authentication. The answer is a ' +
            'signed access token (RFC 9068 JWT, ES256, `typ: at+jwt`) for the subject token, of the scopes asked ' +
            "for (each held by it; absent: all of its scopes), valid JWT_TTL_S seconds and never past the token's " +
            'own expiry. Verify it with the keys at /.well-known/jwks.json. It stays valid until it expires, even ' +
            'once its token is deleted. Errors are RFC 6749 section 5.2 JSON (`error`, `error_description`), ' +
            'never problems. Rate limited as every request of the subject token. See docs/signed-tokens.md.',
          querystring: NoQuery,
          body: ExchangeRequest,
          consumes: ['application/x-www-form-urlencoded'],
          response: {
            200: {
              ...ExchangeResponse,
              description: 'The signed access token (RFC 8693 section 2.2.1)',
            },
            400: refusal(
              '`invalid_request`: a parameter is missing, repeated or malformed, the subject token is malformed, ' +
                'unknown, deleted, expired, disabled, not valid yet, of a suspended account or used from outside ' +
                'its allowed_cidrs (RFC 8693 section 2.2.2); `invalid_scope`: a scope unknown or not held by the ' +
                'subject token; `invalid_target`: `resource` (not supported); `unsupported_grant_type`: another ' +
                'grant, or signed access tokens are off (PostgreSQL without JWT_SIGNING_KEY_FILES)',
              ['invalid_request', 'subject_token is required'],
              ['invalid_scope', 'the subject token does not hold apps:write'],
              ['invalid_target', 'resource indicators are not supported: name the service in audience'],
              ['unsupported_grant_type', `the only grant_type is ${GRANT_TOKEN_EXCHANGE}`],
            ),
            401: {
              ...refusal('`invalid_client`: the request carries Authorization (no client authentication here)', [
                'invalid_client',
                CLIENT_AUTHENTICATION,
              ]),
              headers: {
                'WWW-Authenticate': responseHeader(
                  'ClientChallenge',
                  'The scheme the client used, e.g. `Basic realm="infracat"`',
                ),
              },
            },
            413: refusal('`invalid_request`: a body over 16 KiB', [
              'invalid_request',
              'request bodies are limited to 16384 bytes',
            ]),
            415: refusal('`invalid_request`: a body that is not form-encoded UTF-8', ['invalid_request', FORM_ONLY]),
            429: {
              ...refusal(
                '`temporarily_unavailable`: over the rate limit of the subject token or its account, or too many ' +
                  'failed authentications from the address',
                ['temporarily_unavailable', 'rate limit of 600 requests per 60 s reached; retry after 22 s'],
              ),
            },
            500: refusal('`server_error`: an unexpected error; the server log has it under the X-Request-Id', [
              'server_error',
              'an unexpected error occurred; quote the request_id when reporting it',
            ]),
            503: {
              ...refusal(
                '`temporarily_unavailable`: storage unreachable or read-only, or the server is shutting down',
                ['temporarily_unavailable', 'storage is unavailable (unreachable or read-only); retry shortly'],
              ),
            },
          },
        },
        // Before the schema: a client of another grant is told that first.
        preValidation: (request, _reply, done) => {
          if (signed === null) return done(new OAuthRefusal('unsupported_grant_type', OFF));
          try {
            checkGrantType((request.body as { grant_type?: unknown } | undefined)?.grant_type);
          } catch (err) {
            return done(err as Error);
          }
          done();
        },
        // Then the subject token is verified, and the scopes checked, before the rate limiter
        // (attached after this hook) counts the request against the token.
        preHandler: async (request) => {
          const body = request.body as ExchangeRequestBody & Record<string, unknown>;
          const ask = readExchange(body, service.registry);
          await auth.authenticateSecret(request, body.subject_token);
          const token = request.token!;
          let scopes: string[];
          try {
            scopes = grantedScopes(token.scopes, ask.scopes);
          } catch (err) {
            service.recordRefusal(token, 'scope');
            throw err;
          }
          asked.set(request, { ...ask, scopes });
        },
      },
      async (request): Promise<ExchangeResponseBody> => {
        const token = request.token!;
        const { scopes, audience } = asked.get(request)!;
        const made = await signed!.signer.sign(
          {
            tokenId: token.id,
            accountId: token.accountId,
            scopes,
            ...(audience !== undefined ? { audience } : {}),
            notAfter: signedTokenEnd(token, request.tokenSecret!),
          },
          'exchange',
        );
        return {
          access_token: made.jwt,
          issued_token_type: TOKEN_TYPE_JWT,
          token_type: 'Bearer',
          expires_in: (made.expiresAt - made.issuedAt) / 1000,
          scope: scopes.join(' '),
        };
      },
    );
  });
}
