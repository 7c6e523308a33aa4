// The OpenAPI 3.1 document, generated from the route schemas (no hand-written copy to
// drift), served at /api/v1/openapi.json, and the interactive reference at /docs
// (Swagger UI's assets come from the npm package: no CDN, works offline).
//
// The /docs plugin is loaded on the first request for it, in an instance of its own that
// the /docs routes forward to: @fastify/swagger-ui with @fastify/static, glob and a YAML
// parser cost ~110 ms of a ~440 ms cold start, x1.28 CPU to the first answer and +4.5 MB
// idle (BENCHMARKS.md), for a page most processes never serve.
//
// Routes state only their success shapes and config.auth; the error responses every
// route can give (problem+json) are derived here from what the route takes.
import { STATUS_CODES } from 'node:http';
import swagger, { type StaticDocumentSpec } from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, ProblemSchema } from '../errors.js';
import { CHECKSUM_CHARS, RANDOM_CHARS } from '../tokens/format.js';
import { READ_ONLY_RESOURCES } from '../tokens/scopes.js';
import { bearerChallenge, changesSomething, type RouteAuth } from './auth.js';
import { noBodyAsEmptyObject } from './optional-body.js';
import { policyField, RATE_LIMIT_POLICIES, stateField, type RateLimitOptions } from './rate-limit.js';
import type { App } from './types.js';

const OPENAPI_PATH = '/api/v1/openapi.json';
// Carries "the body is optional" from a route's transform to the whole-document pass
// (an `x-` key: @fastify/swagger copies those onto the operation); never left in the document.
const BODY_OPTIONAL = 'x-infracat-body-optional';
const DOCS_PREFIX = '/docs';

const header = (description: string, type: 'string' | 'integer' = 'string') => ({ description, schema: { type } });

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

/** `16 MiB`, `16 KiB`, or the bytes when neither is whole. */
function size(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / 1024 / 1024} MiB`;
  return bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}

/** The RateLimit fields, stated with the policies, quotas and window the server sends. */
function rateLimitHeaders({ quotas, windowS }: RateLimitOptions): Record<string, unknown> {
  const on = (Object.keys(RATE_LIMIT_POLICIES) as (keyof typeof RATE_LIMIT_POLICIES)[]).filter((p) => quotas[p] > 0);
  if (on.length === 0) return {};
  const states = on.map((p) => `\`${stateField(p, quotas[p] - 1, windowS)}\``).join(' or ');
  const policies = on.map((p) => `\`${policyField(p, quotas[p], windowS)}\` (${RATE_LIMIT_POLICIES[p]})`).join('; ');
  return {
    RateLimit: header(
      'Requests this client can still expect in the window across all instances (the remaining share of the ' +
        'instance that answered times the live instances, at most the quota; 0: that instance refuses the next ' +
        `one) and seconds until the window ends (draft-ietf-httpapi-ratelimit-headers): ${states}`,
    ),
    'RateLimit-Policy': header(
      `Quota of requests per window of seconds, for all instances together (each enforces its share): ${policies}`,
    ),
  };
}

/** The note that a write scope would do too, where one exists (not for a read-only resource). */
function impliedBy(scopes: readonly string[]): string {
  return scopes.some((sc) => !READ_ONLY_RESOURCES.includes(sc.split(':')[0]!)) ? ' (`write` implies `read`)' : '';
}

/** Adds the problem responses, security and scope notes a route's declaration implies. */
function documentRoute(schema: RouteSchema, url: string, route: RouteConfig, facts: OpenApiOptions): RouteSchema {
  const { auth, problems = {} } = route;
  const responses: Record<string, unknown> = { ...(schema.response ?? {}) };
  const add = (status: number, value: unknown): void => {
    if (!(String(status) in responses)) responses[String(status)] = value;
  };
  // Swagger UI labels a response without a description "Default Response".
  for (const [status, value] of Object.entries(responses)) {
    if (typeof value === 'object' && value !== null && !('description' in value)) {
      responses[status] = {
        ...value,
        description: SUCCESS_DESCRIPTIONS[status] ?? STATUS_CODES[Number(status)] ?? 'Response',
      };
    }
  }
  for (const [status, description] of Object.entries(problems)) add(Number(status), problem(description));
  if (schema.body !== undefined) {
    add(400, problem('Malformed JSON body (MALFORMED_JSON) or a forbidden key (BAD_REQUEST)'));
    add(413, problem(`Body over ${size(facts.bodyLimit)} (PAYLOAD_TOO_LARGE)`));
    add(415, problem('Body is not application/json (UNSUPPORTED_MEDIA_TYPE)'));
    add(
      422,
      problem('The body breaks the schema or a rule; `errors` has a JSON pointer per field (VALIDATION_FAILED)'),
    );
  }
  if (schema.querystring !== undefined)
    add(400, problem('Unknown query parameter or bad value, named in `detail` (INVALID_QUERY)'));
  if (url.includes(':') || url.includes('*')) add(404, problem('No such resource (NOT_FOUND)'));
  const errors = '`error="invalid_token"` or `error="insufficient_scope", scope="..."`';
  const challenge = header(`\`${bearerChallenge()}\`, with ${errors}`);
  let security: unknown[] = [];
  let note = '';
  if (auth === 'optional') {
    security = [{}, { bearer: [] }];
    note = 'Anonymous access is allowed; a presented token must be valid (and counts as a use).';
    add(
      401,
      problem('The presented token is malformed, unknown, deleted or expired (INVALID_TOKEN)', {
        'WWW-Authenticate': challenge,
      }),
    );
  } else if (auth !== undefined) {
    security = [{ bearer: [] }];
    const scopes = auth === 'custom' ? [] : auth.scopes;
    note =
      auth === 'custom'
        ? 'Needs a valid bearer token; the scopes depend on the request (see below).'
        : scopes.length > 0
          ? `Needs a token with \`${scopes.join('`, `')}\`${impliedBy(scopes)}.`
          : 'Needs any valid token.';
    add(
      401,
      problem('Missing token (UNAUTHORIZED) or a malformed, unknown, deleted or expired one (INVALID_TOKEN)', {
        'WWW-Authenticate': challenge,
      }),
    );
    if (auth === 'custom' || scopes.length > 0)
      add(
        403,
        problem(
          'The token lacks a required scope (INSUFFICIENT_SCOPE); `missing_scopes` names them' +
            (changesSomething(scopes)
              ? ". Or the token's previous secret, still in its grace period after a rotation, was " +
                'presented: it makes no changes (PREVIOUS_SECRET_READ_ONLY)'
              : ''),
          { 'WWW-Authenticate': challenge },
        ),
      );
  }
  add(
    429,
    problem('Over the rate limit, or too many failed authentications (RATE_LIMITED)', {
      'Retry-After': header('Seconds to wait', 'integer'),
      ...rateLimitHeaders(facts.rateLimit),
    }),
  );
  add(500, problem('Unexpected error; quote the request_id (INTERNAL)'));
  add(
    503,
    problem(
      'Storage unreachable or read-only (STORAGE_UNAVAILABLE), or the server is shutting down (SERVICE_UNAVAILABLE)',
      { 'Retry-After': header('Seconds to wait', 'integer') },
    ),
  );
  const description = [schema.description, note].filter((s) => s !== undefined && s !== '').join('\n\n');
  return { ...schema, response: responses, security, ...(description !== '' ? { description } : {}) };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Route-specific problem responses to document, by status (the common ones are derived). */
    problems?: Record<number, string>;
  }
}

interface RouteConfig {
  auth?: RouteAuth;
  problems?: Record<number, string>;
}

/** What the document states that the code and settings decide, so that it says what the server does. */
export interface OpenApiOptions {
  version: string;
  /** Largest request body, in bytes (a route may set its own). */
  bodyLimit: number;
  /** TOKEN_PREFIX. */
  tokenPrefix: string;
  rateLimit: RateLimitOptions;
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
            // TOKEN_PREFIX and the lengths src/tokens/format.ts checks.
            bearerFormat:
              `${options.tokenPrefix}_<${RANDOM_CHARS} base62 characters>` +
              `<${CHECKSUM_CHARS}-character base62 CRC32>`,
            description: 'An infracat API token in `Authorization: Bearer <token>`. Never in the query string.',
          },
        },
      },
      tags: [
        { name: 'tokens', description: 'Create, list and delete API tokens' },
        { name: 'accounts', description: 'Accounts (tenants) and their tokens: the operator plane' },
        { name: 'audit', description: 'The audit trail: every change to tokens, accounts and the catalog' },
        { name: 'catalogs', description: 'OS images, instance plans and regions' },
        { name: 'gateway', description: 'Forward auth and introspection for other services' },
        { name: 'secret-scanning', description: 'Leaked secrets reported by GitHub secret scanning, revoked' },
        { name: 'operations', description: 'Health' },
      ],
    },
    // Shared schemas keep their $id as their name: components.schemas.Problem.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    // A route leaves the document with `schema: { hide: true }` (@fastify/swagger's own
    // flag, the one mechanism), checked after this transform.
    transform: ({ schema, url, route }) => {
      if (schema?.hide === true) return { schema, url };
      // A route may take larger bodies than the app (the catalog document): its own limit is stated.
      const facts = { ...options, bodyLimit: route.bodyLimit ?? options.bodyLimit };
      const documented = documentRoute((schema ?? {}) as RouteSchema, url, route.config ?? {}, facts);
      // A route that reads no body as `{}` says so (@fastify/swagger marks every body required):
      // the route's own hook decides, so the document cannot drift from it.
      if ([route.preValidation].flat().includes(noBodyAsEmptyObject)) documented[BODY_OPTIONAL] = true;
      return { schema: documented as typeof schema, url };
    },
    transformObject: (documents) => {
      const doc = 'openapiObject' in documents ? documents.openapiObject : documents.swaggerObject;
      for (const item of Object.values(doc.paths ?? {}) as Record<string, Record<string, unknown>>[]) {
        for (const operation of Object.values(item)) {
          if (operation[BODY_OPTIONAL] !== true) continue;
          delete operation[BODY_OPTIONAL];
          (operation.requestBody as { required: boolean }).required = false;
        }
      }
      return doc;
    },
  });

  void app.register(async (plugin) => {
    plugin.get(OPENAPI_PATH, { schema: { hide: true } }, async (_request, reply) => {
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
  void app.register(async (plugin) => {
    for (const url of [DOCS_PREFIX, `${DOCS_PREFIX}/*`]) {
      plugin.get(url, { schema: { hide: true }, config: { rateLimit: false } }, forward);
    }
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
      "default-src 'self'; base-uri 'self'; connect-src 'self'; font-src 'self' data:; form-action 'self'; " +
      "frame-ancestors 'none'; img-src 'self' data:; object-src 'none'; script-src 'self'; style-src 'self'",
    // BaseLayout: no top bar, whose logo SVG carries an inline <style> (a CSP violation under
    // style-src 'self') and whose URL box would let the page explore other documents.
    uiConfig: {
      layout: 'BaseLayout',
      validatorUrl: null,
      deepLinking: true,
      persistAuthorization: false,
      tryItOutEnabled: true,
    },
  });
  await docs.ready();
  return docs;
}

/** The document and /docs, as a plugin: registered before the routes, which it collects. */
export const openApi = fp<OpenApiOptions, RawServerDefault, TypeBoxTypeProvider>(
  (app, options, done) => {
    registerOpenApi(app, options);
    done();
  },
  { name: 'infracat-openapi' },
);
