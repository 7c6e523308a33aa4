// The OpenAPI 3.1 document, generated from the route schemas (no hand-written copy to
// drift), served at /api/v1/openapi.json, and the interactive reference at /docs
// (Swagger UI's assets come from the npm package: no CDN, works offline).
//
// The /docs plugin is loaded on the first request for it, in an instance of its own that
// the /docs routes forward to: @fastify/swagger-ui with @fastify/static, glob and a YAML
// parser was ~110 ms of a ~440 ms cold start (BENCHMARKS.md), for a page most
// processes never serve.
//
// Routes state only their success shapes and config.auth; the error responses every
// route can give (problem+json) are derived here from what the route takes.
import { STATUS_CODES } from 'node:http';
import swagger, { type StaticDocumentSpec } from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError, ERRORS } from '../errors.js';
import type { RouteAuth } from './auth.js';
import type { App } from './types.js';

export const OPENAPI_PATH = '/api/v1/openapi.json';
export const DOCS_PREFIX = '/docs';

const FieldError = Type.Object({
  pointer: Type.String({ description: 'RFC 6901 JSON pointer to the field (query parameters: `querystring:/name`)' }),
  detail: Type.String(),
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ examples: ['urn:problem-type:infracat:validation-failed'] }),
    title: Type.String({ examples: ['Validation failed'] }),
    status: Type.Integer({ examples: [422] }),
    detail: Type.String({ examples: ['the token request is invalid; see errors'] }),
    code: Type.Union(Object.keys(ERRORS).map((c) => Type.Literal(c)), { description: 'Stable error code; see docs/errors.md' }),
    instance: Type.Optional(Type.String({ examples: ['/api/v1/api-tokens'] })),
    request_id: Type.Optional(Type.String({ description: 'Also in the X-Request-Id header and the server log' })),
    errors: Type.Optional(Type.Array(FieldError, { description: 'Field errors, at most 20' })),
    errors_omitted: Type.Optional(Type.Integer({ description: 'How many more field errors there were, left out of `errors`' })),
  },
  { additionalProperties: true, description: 'RFC 9457 problem details' },
);

const header = (description: string, type: 'string' | 'integer' = 'string') => ({ description, schema: { type } });

const RATE_HEADERS = {
  RateLimit: header('Remaining quota and seconds to reset: `"default";r=42;t=17` (draft-ietf-httpapi-ratelimit-headers)'),
  'RateLimit-Policy': header('Quota policy: `"default";q=600;w=60`'),
};

function problem(description: string, headers: Record<string, unknown> = {}) {
  return { description, headers, content: { 'application/problem+json': { schema: { $ref: 'Problem#' } } } };
}

interface RouteSchema {
  body?: unknown;
  querystring?: unknown;
  params?: unknown;
  response?: Record<string, unknown>;
  description?: string;
  security?: unknown;
  hide?: boolean;
  [key: string]: unknown;
}

const SUCCESS_DESCRIPTIONS: Record<string, string> = {
  200: 'OK',
  201: 'Created; `Location` names the new resource',
  204: 'No Content: done',
  304: 'Not Modified: the copy named by If-None-Match is current',
};

/** Adds the problem responses, security and scope notes a route's declaration implies. */
export function documentRoute(schema: RouteSchema, url: string, auth: RouteAuth | undefined, problems: Record<number, string> = {}): RouteSchema {
  const responses: Record<string, unknown> = { ...(schema.response ?? {}) };
  const add = (status: number, value: unknown): void => {
    if (!(String(status) in responses)) responses[String(status)] = value;
  };
  // Swagger UI labels a response without a description "Default Response".
  for (const [status, value] of Object.entries(responses)) {
    if (typeof value === 'object' && value !== null && !('description' in value)) {
      responses[status] = { ...value, description: SUCCESS_DESCRIPTIONS[status] ?? STATUS_CODES[Number(status)] ?? 'Response' };
    }
  }
  for (const [status, description] of Object.entries(problems)) add(Number(status), problem(description));
  if (schema.body !== undefined) {
    add(400, problem('Malformed JSON body (MALFORMED_JSON) or a forbidden key (BAD_REQUEST)'));
    add(413, problem('Body over 16 KiB (PAYLOAD_TOO_LARGE)'));
    add(415, problem('Body is not application/json (UNSUPPORTED_MEDIA_TYPE)'));
    add(422, problem('The body breaks the schema or a rule; `errors` has a JSON pointer per field (VALIDATION_FAILED)'));
  }
  if (schema.querystring !== undefined) add(400, problem('Unknown query parameter or bad value, named in `detail` (INVALID_QUERY)'));
  if (url.includes(':') || url.includes('*')) add(404, problem('No such resource (NOT_FOUND)'));
  const challenge = header('`Bearer realm="infracat"`, with `error="invalid_token"` or `error="insufficient_scope", scope="..."`');
  let security: unknown[] = [];
  let note = '';
  if (auth === 'optional') {
    security = [{}, { bearer: [] }];
    note = 'Anonymous access is allowed; a presented token must be valid (and counts as a use).';
    add(401, problem('The presented token is malformed, unknown, deleted or expired (INVALID_TOKEN)', { 'WWW-Authenticate': challenge }));
  } else if (auth !== undefined) {
    security = [{ bearer: [] }];
    const scopes = auth === 'custom' ? [] : auth.scopes;
    note = auth === 'custom' ? 'Needs a valid bearer token; the scopes depend on the request (see below).' : scopes.length > 0 ? `Needs a token with \`${scopes.join('`, `')}\` (\`write\` implies \`read\`).` : 'Needs any valid token.';
    add(401, problem('Missing token (UNAUTHORIZED) or a malformed, unknown, deleted or expired one (INVALID_TOKEN)', { 'WWW-Authenticate': challenge }));
    if (auth === 'custom' || scopes.length > 0) add(403, problem('The token lacks a required scope (INSUFFICIENT_SCOPE); `missing_scopes` names them', { 'WWW-Authenticate': challenge }));
  }
  add(429, problem('Over the rate limit, or too many failed authentications (RATE_LIMITED)', { 'Retry-After': header('Seconds to wait', 'integer'), ...RATE_HEADERS }));
  add(500, problem('Unexpected error; quote the request_id (INTERNAL)'));
  add(503, problem('Storage unreachable or read-only (STORAGE_UNAVAILABLE), or the server is shutting down (SERVICE_UNAVAILABLE)', { 'Retry-After': header('Seconds to wait', 'integer') }));
  const description = [schema.description, note].filter((s) => s !== undefined && s !== '').join('\n\n');
  return { ...schema, response: responses, security, ...(description !== '' ? { description } : {}) };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Route-specific problem responses to document, by status (the common ones are derived). */
    problems?: Record<number, string>;
  }
}

export interface OpenApiOptions {
  version: string;
}

export function registerOpenApi(app: App, options: OpenApiOptions): void {
  // One shared schema, so every error response refers to components.schemas.Problem.
  app.addSchema({ $id: 'Problem', title: 'Problem', ...ProblemSchema });
  void app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'infracat API',
        version: options.version,
        description:
          'API tokens and the catalogs of OS images, instance plans and regions of the platform. ' +
          'All bodies are JSON; errors are RFC 9457 problem details (`application/problem+json`) with a stable `code`.',
      },
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'icat_<30 base62 characters><6-character base62 CRC32>',
            description: 'An infracat API token in `Authorization: Bearer <token>`. Never in the query string.',
          },
        },
      },
      tags: [
        { name: 'tokens', description: 'Create, list and delete API tokens' },
        { name: 'catalogs', description: 'OS images, instance plans and regions' },
        { name: 'gateway', description: 'Forward auth and introspection for other services' },
        { name: 'operations', description: 'Health' },
      ],
    },
    // Shared schemas keep their $id as their name: components.schemas.Problem.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url, route }) => {
      const hidden = url === OPENAPI_PATH || url.startsWith(DOCS_PREFIX) || url === '/metrics' || url.startsWith('/api/v1/auth/check/');
      if (hidden) return { schema: { ...schema, hide: true }, url };
      return { schema: documentRoute((schema ?? {}) as RouteSchema, url, route.config?.auth, route.config?.problems) as typeof schema, url };
    },
  });

  void app.register(async (scope) => {
    scope.get(OPENAPI_PATH, { schema: { hide: true } }, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return app.swagger();
    });
  });

  registerDocs(app);
}

/** GET /docs and /docs/*, answered by Swagger UI's plugin, loaded on first use. */
function registerDocs(app: App): void {
  let docs: Promise<FastifyInstance> | undefined;
  const forward = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    docs ??= loadDocs(app).catch((err: unknown) => {
      docs = undefined; // try again on the next request
      throw err;
    });
    // GET for HEAD too: Fastify's HEAD route then sends the GET answer's headers.
    const res = await (await docs).inject({ method: 'GET', url: request.url, headers: request.headers });
    // Our problem+json 404, as when the plugin's routes were the app's own.
    if (res.statusCode === 404) throw new AppError('NOT_FOUND', `no resource at ${request.url.split('?')[0] ?? '/'}`);
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined && !HOP_HEADERS.has(name)) void reply.header(name, value);
    }
    // No body (redirect, 304): send none, rather than an empty application/octet-stream.
    return reply.code(res.statusCode).send(res.rawPayload.length > 0 ? res.rawPayload : undefined);
  };
  void app.register(async (scope) => {
    for (const url of [DOCS_PREFIX, `${DOCS_PREFIX}/*`]) scope.get(url, { schema: { hide: true } }, forward);
  });
  app.addHook('onClose', async () => {
    if (docs !== undefined) await (await docs.catch(() => undefined))?.close();
  });
}

// Set by the server for the outer answer, not copied from the inner one.
const HOP_HEADERS = new Set(['connection', 'content-length', 'date', 'keep-alive', 'transfer-encoding']);

async function loadDocs(app: App): Promise<FastifyInstance> {
  const { default: swaggerUi } = await import('@fastify/swagger-ui');
  const docs = Fastify({ logger: false });
  // swagger-ui serves /docs/json and /docs/yaml from a `swagger` decorator, and requires
  // the @fastify/swagger plugin: the app's finished document, in static mode (whose
  // types predate OpenAPI 3.1; the plugin serves any document object).
  const document = app.swagger() as unknown as StaticDocumentSpec['document'];
  await docs.register(swagger, { mode: 'static', specification: { document } });
  await docs.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: true,
    // Swagger UI's default policy allows https: fonts/styles and the online validator's
    // images; nothing here loads from elsewhere, so allow only this origin.
    transformStaticCSP: () =>
      "default-src 'self'; base-uri 'self'; connect-src 'self'; font-src 'self' data:; form-action 'self'; frame-ancestors 'none'; img-src 'self' data:; object-src 'none'; script-src 'self'; style-src 'self'",
    // BaseLayout: no top bar, whose logo SVG carries an inline <style> (a CSP violation under
    // style-src 'self') and whose URL box would let the page explore other documents.
    uiConfig: { layout: 'BaseLayout', validatorUrl: null, deepLinking: true, persistAuthorization: false, tryItOutEnabled: true },
  });
  await docs.ready();
  return docs;
}
