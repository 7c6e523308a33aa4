// How the rest of the platform uses infracat tokens without re-implementing them:
//
// - Forward auth, for nginx `auth_request`, Traefik `ForwardAuth` and Envoy `ext_authz`
//   (HTTP): `/api/v1/auth/check` answers 200 with the token's identity in headers, or
//   401/403 with WWW-Authenticate. Required scopes come from `scope` query parameters
//   (set in the gateway's config) or from the rule table, by the forwarded method and
//   URI. Envoy appends the original path: `/api/v1/auth/check/<original path>`, with
//   the original method; there the query is the client's, so `scope` is not read.
// - Introspection (RFC 7662): POST /api/v1/api-tokens/introspect.
//
// Every answer is no-store. A check that cannot reach storage fails closed (503).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { AppError } from '../errors.js';
import type { Auth } from '../http/auth.js';
import { readTextBody } from '../http/body-encoding.js';
import type { App } from '../http/types.js';
import type { TokenRecord } from '../storage/types.js';
import type { TokenService } from '../tokens/service.js';
import { parseScope } from '../tokens/scopes.js';
import { requiredScopes, type Rule } from './rules.js';

export interface GatewayRouteOptions {
  service: TokenService;
  auth: Auth;
  rules: readonly Rule[];
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

const CheckQuery = Type.Object({
  scope: Type.Optional(Type.Array(Type.String({ maxLength: 500 }), { maxItems: 20, description: 'Required scopes; repeat or space-separate' })),
});

const CheckAllowed = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
});

const IntrospectBody = Type.Object({
  token: Type.String({ maxLength: 512 }),
  token_type_hint: Type.Optional(Type.String({ maxLength: 64 })),
});

const IntrospectResponse = Type.Object({
  active: Type.Boolean(),
  scope: Type.Optional(Type.String()),
  token_id: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  iat: Type.Optional(Type.Integer()),
  exp: Type.Optional(Type.Integer()),
});

/** Header-safe token name: printable ASCII as is, anything else percent-encoded (UTF-8). */
export function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) && !value.includes('%') ? value : encodeURIComponent(value);
}

function firstHeader(request: FastifyRequest, ...names: string[]): string | undefined {
  for (const name of names) {
    const v = request.headers[name];
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

export function gatewayRoutes(app: App, { service, auth, rules }: GatewayRouteOptions): void {
  function allow(reply: FastifyReply, token: TokenRecord) {
    reply
      .header('x-token-id', token.id)
      .header('x-token-name', headerSafe(token.name))
      .header('x-token-scopes', token.scopes.join(' '));
    return { id: token.id, name: token.name, scopes: token.scopes };
  }

  // A gateway sends the same few `scope` values on every check: remember the parsed,
  // validated list per distinct value (bounded), instead of splitting and checking each time.
  const parsedScopes = new Map<string, readonly string[]>();
  function scopesFromQuery(values: string[]): readonly string[] {
    const key = values.join('\n');
    const known = parsedScopes.get(key);
    if (known !== undefined) return known;
    const scopes = parseScopesFromQuery(values);
    if (parsedScopes.size >= 256) parsedScopes.clear();
    parsedScopes.set(key, scopes);
    return scopes;
  }

  /** Scopes named by `scope` parameters (each may hold several, space-separated). */
  function parseScopesFromQuery(values: string[]): readonly string[] {
    const scopes = values.flatMap((v) => v.split(/[\s,]+/)).filter((s) => s !== '');
    const bad = scopes.filter((s) => parseScope(s) === null || !service.registry.has(s));
    if (bad.length > 0) {
      throw new AppError('INVALID_QUERY', `invalid query parameter scope: unknown scope ${bad.join(', ')}`, {
        members: { valid_scopes: service.registry.names() },
      });
    }
    return scopes;
  }

  void app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    // Gateways may forward the client's body (nginx does unless told not to); it is
    // irrelevant to the decision, so any body of any type is accepted and ignored.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => {
      payload.resume();
      payload.on('end', () => done(null, undefined));
      payload.on('error', (err) => done(err, undefined));
    });
    scope.addHook('onRequest', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
    });

    const check = async (request: FastifyRequest<{ Querystring: Static<typeof CheckQuery> }>, reply: FastifyReply) => {
      let required: readonly string[] | null;
      const fromQuery = request.query.scope;
      if (fromQuery !== undefined && fromQuery.length > 0) required = scopesFromQuery(fromQuery);
      else {
        const uri = firstHeader(request, 'x-original-uri', 'x-forwarded-uri');
        if (uri === undefined) {
          throw new AppError('BAD_REQUEST', 'say what to check: scope query parameters, or X-Original-URI / X-Forwarded-Uri (and -Method) headers');
        }
        const method = firstHeader(request, 'x-original-method', 'x-forwarded-method') ?? 'GET';
        required = requiredScopes(rules, method, uri);
        if (required === null) {
          // Fail closed: still tell a caller with a bad token that the token is the problem.
          await auth.authenticate(request, []);
          throw new AppError('INSUFFICIENT_SCOPE', `no rule grants access to ${method.toUpperCase()} ${uri.split('?')[0] ?? ''}`, {
            headers: { 'www-authenticate': 'Bearer realm="infracat", error="insufficient_scope"' },
          });
        }
      }
      await auth.authenticate(request, required);
      return allow(reply, request.token!);
    };

    scope.route({
      method: 'GET',
      url: '/api/v1/auth/check',
      config: { auth: 'custom' },
      schema: {
        tags: ['gateway'],
        operationId: 'forwardAuthCheck',
        summary: 'Forward auth for nginx auth_request, Traefik ForwardAuth and Envoy ext_authz',
        description:
          'Required scopes: the `scope` parameters, else the rule table applied to X-Original-Method/X-Original-URI (nginx) or X-Forwarded-Method/X-Forwarded-Uri (Traefik). Allowed: 200 with X-Token-Id, X-Token-Name, X-Token-Scopes. Envoy uses /api/v1/auth/check/{original path}. See docs/forward-auth.md.',
        querystring: CheckQuery,
        response: { 200: CheckAllowed },
      },
      handler: check,
    });
    // The same check for the other methods gateways may use (nginx mirrors the client's
    // method in some set-ups); documented once, under GET.
    scope.route({
      method: METHODS.filter((m) => m !== 'GET' && m !== 'HEAD'),
      url: '/api/v1/auth/check',
      config: { auth: 'custom' },
      schema: { hide: true, querystring: CheckQuery },
      handler: check,
    });

    scope.route({
      method: [...METHODS],
      url: '/api/v1/auth/check/*',
      config: { auth: 'custom' },
      schema: { response: { 200: CheckAllowed } },
      handler: async (request, reply) => {
        // Envoy ext_authz (HTTP): the original path follows the prefix; the original method is ours.
        const suffix = (request.params as { '*': string })['*'];
        const uri = `/${suffix}`;
        const required = requiredScopes(rules, request.method, uri);
        if (required === null) {
          await auth.authenticate(request, []);
          throw new AppError('INSUFFICIENT_SCOPE', `no rule grants access to ${request.method} ${uri}`, {
            headers: { 'www-authenticate': 'Bearer realm="infracat", error="insufficient_scope"' },
          });
        }
        await auth.authenticate(request, required);
        return allow(reply, request.token!);
      },
    });
  });

  void app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    // RFC 7662 clients send application/x-www-form-urlencoded; JSON is accepted too.
    // Either is read as UTF-8 exactly or refused (src/http/body-encoding.ts).
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
      done(null, Object.fromEntries(new URLSearchParams(readTextBody(request, body, 'BAD_REQUEST'))));
    });
    scope.addHook('onRequest', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
    });

    scope.post(
      '/api/v1/api-tokens/introspect',
      {
        config: { auth: { scopes: ['api-tokens:read'] } },
        schema: {
          tags: ['gateway'],
          operationId: 'introspectApiToken',
          summary: 'RFC 7662 token introspection',
          description: 'Form-encoded (`token=...`) or JSON body. Anything but an active token gives exactly `{"active": false}`.',
          body: IntrospectBody,
          response: { 200: IntrospectResponse },
        },
      },
      async (request) => {
        const result = await service.verify(request.body.token);
        if (!result.ok) return { active: false };
        const t = result.token;
        // The holder presented it to a resource server: that is a use.
        service.recordUse(t);
        return {
          active: true,
          scope: t.scopes.join(' '),
          token_id: t.id,
          name: t.name,
          iat: Math.floor(t.createdAt / 1000),
          ...(t.expiresAt !== null ? { exp: Math.floor(t.expiresAt / 1000) } : {}),
        };
      },
    );
  });
}
