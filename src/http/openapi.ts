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
// route can give (problem+json) are derived here from what the route takes, and so are the
// headers each answer may carry, every one a reference to its components.headers entry.
import { STATUS_CODES } from 'node:http';
import swagger, { type StaticDocumentSpec } from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, ERRORS, ProblemSchema, toProblem, type ErrorCode } from '../errors.js';
import { CHECKSUM_CHARS, RANDOM_CHARS } from '../tokens/format.js';
import { READ_ONLY_RESOURCES } from '../tokens/scopes.js';
import { bearerChallenge, changesSomething, type RouteAuth } from './auth.js';
import { documentedAs } from './documented-as.js';
import { noBodyAsEmptyObject } from './optional-body.js';
import { policyField, RATE_LIMIT_POLICIES, stateField, type RateLimitOptions } from './rate-limit.js';
import {
  ACCEPT_ENCODING,
  CORS,
  HEADER_ALWAYS,
  HEADER_COMPONENT,
  LOCATION,
  NO_STORE,
  REQUEST_ID,
  responseHeader,
  RETRY_AFTER,
  SECURITY,
  type HeaderDoc,
} from './response-headers.js';
import type { App } from './types.js';

const OPENAPI_PATH = '/api/v1/openapi.json';
// Carries "the body is optional" from a route's transform to the whole-document pass
// (an `x-` key: @fastify/swagger copies those onto the operation); never left in the document.
const BODY_OPTIONAL = 'x-infracat-body-optional';
// Carries a body's example likewise, where the body is a reference to a named schema.
const BODY_EXAMPLE = 'x-infracat-body-example';
const DOCS_PREFIX = '/docs';

// The `detail` of each problem example; a code not listed shows its title.
const EXAMPLE_DETAILS: Partial<Record<ErrorCode, string>> = {
  BAD_REQUEST: 'send exactly one Host header',
  MALFORMED_JSON: 'the body is not valid JSON',
  INVALID_QUERY: 'invalid query parameter per_page',
  TOKEN_IN_QUERY: 'credentials are not accepted in the query string (access_token); use the Authorization header',
  UNAUTHORIZED: 'this endpoint needs a token: Authorization: Bearer <token>',
  INVALID_TOKEN: 'the token is unknown, deleted or expired',
  INSUFFICIENT_SCOPE: 'the token lacks a required scope',
  NOT_FOUND: 'no resource at this path',
  PAYLOAD_TOO_LARGE: 'request bodies are limited to 16384 bytes',
  UNSUPPORTED_MEDIA_TYPE: 'request bodies must be application/json',
  VALIDATION_FAILED: 'the request body is invalid; see errors',
  RATE_LIMITED: 'too many requests; retry after the number of seconds in Retry-After',
  INTERNAL: 'an unexpected error occurred; quote the request_id when reporting it',
  STORAGE_UNAVAILABLE: 'storage is unavailable (unreachable or read-only); retry shortly',
  SERVICE_UNAVAILABLE: 'the server is shutting down',
};

/** The codes of `status` a problem description names, in its order (each in parentheses by convention). */
function codesIn(description: string, status: number): ErrorCode[] {
  const named = [...description.matchAll(/\b[A-Z][A-Z_]*[A-Z]\b/g)].map((m) => m[0]);
  const codes = [...new Set(named)].filter(
    (c): c is ErrorCode => c in ERRORS && ERRORS[c as ErrorCode].status === status,
  );
  if (codes.length > 0) return codes;
  const fallback = (Object.keys(ERRORS) as ErrorCode[]).find((c) => ERRORS[c].status === status);
  return fallback === undefined ? [] : [fallback];
}

/** A problem body of `code`, as toProblem() writes it (so the example cannot drift from the wire). */
function problemExample(code: ErrorCode, instance: string): unknown {
  const body = toProblem(new AppError(code, EXAMPLE_DETAILS[code] ?? ERRORS[code].title.toLowerCase()), instance);
  if (code === 'VALIDATION_FAILED') body.errors = [{ pointer: '/name', detail: 'is required' }];
  return body;
}

/** A problem+json response, with an example of each code it names (Swagger UI shows them). */
function problem(status: number, description: string, url: string, headers: Record<string, unknown>) {
  const codes = codesIn(description, status);
  const media: Record<string, unknown> = { schema: { $ref: 'Problem#' } };
  if (codes.length === 1) media.example = problemExample(codes[0]!, url);
  else if (codes.length > 1)
    media.examples = Object.fromEntries(
      codes.map((c) => [c, { summary: ERRORS[c].title, value: problemExample(c, url) }]),
    );
  return { description, headers, content: { 'application/problem+json': media } };
}

/**
 * A declared answer's whole-body examples, on its media type (a body by reference keeps no
 * examples of its own): one as `example`, several as `examples`, each named by its `error`
 * (the RFC 6749 code of an OAuth error) where it has one.
 */
function mediaExamples(examples: readonly unknown[]): Record<string, unknown> {
  if (examples.length === 0) return {};
  if (examples.length === 1) return { example: examples[0] };
  const named = examples.map((value, i): [string, unknown] => {
    const error = (value as { error?: unknown }).error;
    return [typeof error === 'string' ? error : `example${i + 1}`, { value }];
  });
  if (new Set(named.map(([name]) => name)).size < named.length) throw new Error('two examples of one name');
  return { examples: Object.fromEntries(named) };
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
function rateLimitHeaders({ quotas, windowS }: RateLimitOptions): Record<string, HeaderDoc> {
  const on = (Object.keys(RATE_LIMIT_POLICIES) as (keyof typeof RATE_LIMIT_POLICIES)[]).filter((p) => quotas[p] > 0);
  if (on.length === 0) return {};
  const states = on.map((p) => `\`${stateField(p, quotas[p] - 1, windowS)}\``).join(' or ');
  const policies = on.map((p) => `\`${policyField(p, quotas[p], windowS)}\` (${RATE_LIMIT_POLICIES[p]})`).join('; ');
  return {
    RateLimit: responseHeader(
      'RateLimit',
      'Requests this client can still expect in the window across all instances (as the instance that ' +
        "answered last learnt the fleet's count; 0: that instance refuses the next one) and seconds until the " +
        `window ends (draft-ietf-httpapi-ratelimit-headers), one entry per policy counted: ${states}`,
    ),
    'RateLimit-Policy': responseHeader(
      'RateLimitPolicy',
      "Quota of requests per window of seconds, for all instances together; a token's request is counted " +
        `against its token and its account (the account's quota is its \`rate_limit\` when set): ${policies}`,
    ),
  };
}

/**
 * Whether the rate limiter counts the requests of a route that takes `auth`: an anonymous
 * route's only by the address's quota; a token's by its token's and its account's (an
 * account's own `rate_limit` applies whenever any quota is on).
 */
function rateLimitOn({ quotas }: RateLimitOptions, auth: RouteAuth | undefined): boolean {
  return auth === undefined ? quotas.anonymous > 0 : Object.values(quotas).some((q) => q > 0);
}

/** The 429 of a route: whose limit a request may meet there. */
function tooMany(auth: RouteAuth | undefined, counted: boolean): string {
  const failures = 'too many failed authentications from the client address (RATE_LIMITED)';
  if (!counted) return `${failures[0]!.toUpperCase()}${failures.slice(1)}`;
  if (auth === undefined) return "Over the rate limit of the client's address (RATE_LIMITED)";
  const token = "Over the token's rate limit (RATE_LIMITED) or its account's (ACCOUNT_RATE_LIMITED)";
  if (auth === 'optional') return `${token}; without a token, over the address's (RATE_LIMITED); or ${failures}`;
  return `${token}; or ${failures}`;
}

/** Statuses always decided before the rate limiter counts a request (authentication, the body's reading). */
const BEFORE_THE_LIMITER = new Set(['401', '413', '415']);

/** The note that a write scope would do too, where one exists (not for a read-only resource). */
function impliedBy(scopes: readonly string[]): string {
  return scopes.some((sc) => !READ_ONLY_RESOURCES.includes(sc.split(':')[0]!)) ? ' (`write` implies `read`)' : '';
}

/** The named schemas, by the JSON text of their shape: where a route's schema holds one, the document refers to it. */
type Names = Map<string, string>;

/** The JSON text a schema is known by: its shape, without the examples a use may add. */
function shapeKey(schema: object): string {
  const { examples: _examples, ...shape } = schema as Record<string, unknown>;
  return JSON.stringify(shape);
}

/** `schema` with every object schema that is a named one replaced by a reference to it (a copy: routes keep theirs). */
function referNamed(schema: unknown, names: Names): unknown {
  if (Array.isArray(schema)) return schema.map((s) => referNamed(s, names));
  if (typeof schema !== 'object' || schema === null) return schema;
  const name = (schema as { type?: unknown }).type === 'object' ? names.get(shapeKey(schema)) : undefined;
  if (name !== undefined) return { $ref: `${name}#` };
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, referNamed(v, names)]));
}

/** A query schema with its numeric-text parameters stated as the numbers they are (src/http/documented-as.ts). */
function numericQuery(query: object): object {
  const properties = (query as { properties?: Record<string, object> }).properties;
  if (properties === undefined) return query;
  const documented = Object.entries(properties).map(([name, p]): [string, object] => {
    const number = documentedAs(p);
    if (number === undefined) return [name, p];
    const { description } = p as { description?: string };
    return [name, { ...number, ...(description !== undefined ? { description } : {}) }];
  });
  return { ...query, properties: Object.fromEntries(documented) };
}

/** Adds the problem responses, headers, security and scope notes a route's declaration implies. */
function documentRoute(
  schema: RouteSchema,
  url: string,
  route: RouteConfig,
  facts: OpenApiOptions,
  names: Names,
): RouteSchema {
  const { auth, problems = {} } = route;
  const path = url.replace(/:(\w+)/g, '{$1}');
  // Counted by the limiter after authentication (a preHandler), or as the route's first hook.
  const limited = route.rateLimit !== false && rateLimitOn(facts.rateLimit, auth);
  const countedFirst = route.rateLimitFirst === true && rateLimitOn(facts.rateLimit, undefined);
  const counted = (status: string): boolean =>
    countedFirst || (limited && (status === '429' || !BEFORE_THE_LIMITER.has(status)));
  const common = everyAnswer(route, facts);
  /** Where the answer may carry the Bearer challenge: a credential in the query (400), an authentication's refusal. */
  const challenged = (status: string): boolean =>
    status === '400' || (auth !== undefined && (status === '401' || status === '403'));
  /** The headers an answer of `status` may carry: its own, those of what ran before, those of every answer. */
  const headersOf = (status: string, own: Record<string, unknown>): Record<string, unknown> => ({
    ...own,
    ...(status === '201' ? { Location: LOCATION } : {}),
    ...(counted(status) ? rateLimitHeaders(facts.rateLimit) : {}),
    ...(status === '429' || status === '503' ? { 'Retry-After': RETRY_AFTER } : {}),
    ...(status === '415' ? { 'Accept-Encoding': ACCEPT_ENCODING } : {}),
    ...(challenged(status) ? { 'WWW-Authenticate': BEARER_CHALLENGE } : {}),
    ...common,
  });
  const responses: Record<string, unknown> = {};
  // The declared responses (successes, and the errors of a route that answers its own): the body
  // by reference where its shape is named, with its examples, and the headers every such answer carries.
  for (const [status, value] of Object.entries(schema.response ?? {})) {
    const {
      headers: own = {},
      description,
      examples,
      ...body
    } = value as {
      headers?: Record<string, unknown>;
      description?: string;
      examples?: unknown[];
      type?: string;
    };
    const headers = headersOf(status, own);
    const label = description ?? SUCCESS_DESCRIPTIONS[status] ?? STATUS_CODES[Number(status)] ?? 'Response';
    const media = { schema: referNamed(body, names), ...mediaExamples(examples ?? []) };
    responses[status] =
      body.type === 'null'
        ? { type: 'null', description: label, headers }
        : { description: label, headers, content: { 'application/json': media } };
  }
  if (route.ownErrors === true) {
    // The route declares every answer itself, its errors included (not problems): none is derived.
    return {
      ...schema,
      ...(schema.body !== undefined ? { body: referNamed(schema.body, names) } : {}),
      response: responses,
      security: [],
    };
  }
  // Statuses the derivation below would add that the route declares it never answers.
  const never = new Set(
    Object.entries(problems)
      .filter(([, declared]) => declared === null)
      .map(([status]) => status),
  );
  const add = (status: number, description: string, own: Record<string, unknown> = {}): void => {
    const key = String(status);
    if (!(key in responses) && !never.has(key))
      responses[key] = problem(status, description, path, headersOf(key, own));
  };
  // Every request meets the request guard (src/http/request-guard.ts) first.
  const badRequest = [
    ...(schema.body !== undefined ? ['Malformed JSON body (MALFORMED_JSON) or a forbidden key (BAD_REQUEST)'] : []),
    schema.querystring !== undefined
      ? 'Unknown query parameter or bad value, named in `detail` (INVALID_QUERY)'
      : 'Too many query parameters (INVALID_QUERY)',
    'A credential in the query string (TOKEN_IN_QUERY); a request that cannot be read as sent, such as a ' +
      'missing or repeated Host header (BAD_REQUEST)',
  ];
  for (const [status, declared] of Object.entries(problems)) {
    if (declared === null) continue;
    const { description, headers } = typeof declared === 'string' ? { description: declared, headers: {} } : declared;
    if (status === '400') badRequest.unshift(description);
    else add(Number(status), description, headers);
  }
  add(400, badRequest.join('; '));
  if (schema.body !== undefined) {
    add(413, `Body over ${size(facts.bodyLimit)} (PAYLOAD_TOO_LARGE)`);
    const types = (schema.consumes as string[] | undefined) ?? ['application/json'];
    add(415, `Body is not ${types.join(' or ')} (UNSUPPORTED_MEDIA_TYPE)`);
    add(422, 'The body breaks the schema or a rule; `errors` has a JSON pointer per field (VALIDATION_FAILED)');
  }
  // A path parameter names something that may not exist (the check's path form is any path: never 404).
  if (url.includes(':')) add(404, 'No such resource (NOT_FOUND)');
  let security: unknown[] = [];
  let note = '';
  if (auth === 'optional') {
    security = [{}, { bearer: [] }];
    note = 'Anonymous access is allowed; a presented token must be valid (and counts as a use).';
    add(401, 'The presented token is malformed, unknown, deleted or expired (INVALID_TOKEN)');
  } else if (auth !== undefined) {
    security = [{ bearer: [] }];
    const scopes = auth === 'custom' ? [] : auth.scopes;
    note =
      auth === 'custom'
        ? 'Needs a valid bearer token; the scopes depend on the request (see below).'
        : scopes.length > 0
          ? `Needs a token with \`${scopes.join('`, `')}\`${impliedBy(scopes)}.`
          : 'Needs any valid token.';
    add(401, 'Missing token (UNAUTHORIZED) or a malformed, unknown, deleted or expired one (INVALID_TOKEN)');
    if (auth === 'custom' || scopes.length > 0)
      add(
        403,
        'The token lacks a required scope (INSUFFICIENT_SCOPE); `missing_scopes` names them' +
          (changesSomething(scopes)
            ? ". Or the token's previous secret, still in its grace period after a rotation, was " +
              'presented: it makes no changes (PREVIOUS_SECRET_READ_ONLY)'
            : ''),
      );
  }
  // The rate limit, and the limit on failed authentications (src/http/failure-limiter.ts).
  if (limited || countedFirst || auth !== undefined) add(429, tooMany(auth, limited || countedFirst));
  add(500, 'Unexpected error, such as a storage fault; quote the request_id (INTERNAL)');
  add(
    503,
    'Storage unreachable or read-only (STORAGE_UNAVAILABLE), or the server is shutting down (SERVICE_UNAVAILABLE)',
  );
  const description = [schema.description, note].filter((s) => s !== undefined && s !== '').join('\n\n');
  return {
    ...schema,
    ...(schema.body !== undefined ? { body: referNamed(schema.body, names) } : {}),
    ...(schema.querystring !== undefined ? { querystring: numericQuery(schema.querystring as object) } : {}),
    response: responses,
    security,
    ...(description !== '' ? { description } : {}),
  };
}

/**
 * A response's headers, each named one (a header declared with responseHeader(), which
 * @fastify/swagger writes as `{ description, schema: { type, x-infracat-header, ... } }`) as a
 * reference to components.headers, which `named` collects. Two different headers under one
 * name are a mistake in the declarations: the document is not made.
 */
function referHeaders(headers: Record<string, unknown>, named: Map<string, unknown>): Record<string, unknown> {
  const referred = Object.entries(headers).map(([name, header]): [string, unknown] => {
    const { description, schema = {} } = header as { description?: string; schema?: Record<string, unknown> };
    const { [HEADER_COMPONENT]: component, [HEADER_ALWAYS]: always, ...plain } = schema;
    if (typeof component !== 'string') return [name, header];
    const described = {
      ...(description !== undefined ? { description } : {}),
      ...(always === true ? { required: true } : {}),
      schema: plain,
    };
    const known = named.get(component);
    if (known === undefined) named.set(component, described);
    else if (JSON.stringify(known) !== JSON.stringify(described))
      throw new Error(`two different response headers are named ${component}`);
    return [name, { $ref: `#/components/headers/${component}` }];
  });
  return Object.fromEntries(referred);
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Route-specific problem responses to document, by status (the common ones are derived). */
    problems?: Record<number, ProblemDoc>;
    /**
     * The route runs the rate limiter itself as its first hook (with `rateLimit: false`), so
     * every answer is counted and carries the RateLimit fields.
     */
    rateLimitFirst?: boolean;
    /**
     * true: the route answers its errors in a form of its own (the OAuth token endpoint's
     * RFC 6749 errors), each declared in its response schema; no problem response is derived.
     */
    ownErrors?: boolean;
  }
}

/**
 * A route-specific problem response: its description, or that and the headers it carries;
 * null for a status the common derivation adds that the route never answers (nothing it
 * does can fail that way).
 */
export type ProblemDoc = string | { description: string; headers: Record<string, unknown> } | null;

interface RouteConfig {
  auth?: RouteAuth;
  ownErrors?: boolean;
  problems?: Record<number, ProblemDoc>;
  rateLimit?: boolean;
  rateLimitFirst?: boolean;
  noStore?: boolean;
  cors?: unknown;
}

/** The challenge of a refused authentication, or of a credential in the query string. */
const BEARER_CHALLENGE = responseHeader(
  'BearerChallenge',
  `\`${bearerChallenge()}\`, with \`error="invalid_request"\` (a credential in the query string), ` +
    '`error="invalid_token"` or `error="insufficient_scope", scope="..."`',
);

/** The headers every answer of a route may carry, whatever its status. */
function everyAnswer(route: RouteConfig, facts: OpenApiOptions): Record<string, unknown> {
  const { corsOrigins } = facts;
  // Any origin (`*`) needs no Vary: every answer is the same whatever the request's Origin.
  const { Vary, ...always } = CORS;
  const cors =
    corsOrigins.length === 0 || route.cors === false ? {} : corsOrigins.includes('*') ? always : { Vary, ...always };
  return {
    ...(route.noStore === true ? { 'Cache-Control': NO_STORE } : {}),
    ...cors,
    ...SECURITY,
    'X-Request-Id': REQUEST_ID,
  };
}

/** What the document states that the code and settings decide, so that it says what the server does. */
export interface OpenApiOptions {
  version: string;
  /** Largest request body, in bytes (a route may set its own). */
  bodyLimit: number;
  /** TOKEN_PREFIX. */
  tokenPrefix: string;
  rateLimit: RateLimitOptions;
  /** CORS_ORIGINS: with any, the answers of the routes that take CORS carry its headers. */
  corsOrigins: readonly string[];
  /**
   * The named shapes: each resource and request body by its name in components.schemas,
   * declared once as a TypeBox schema in its module's schemas.ts.
   */
  schemas: Record<string, object>;
}

export function registerOpenApi(app: App, options: OpenApiOptions): void {
  // Shared schemas, so every error response refers to components.schemas.Problem and each
  // resource and request body to its own (@fastify/swagger lists them under their $id).
  app.addSchema({ $id: 'Problem', title: 'Problem', ...ProblemSchema });
  const names: Names = new Map();
  for (const [name, schema] of Object.entries(options.schemas)) names.set(shapeKey(schema), name);
  for (const [name, schema] of Object.entries(options.schemas)) {
    // Its fields refer to the other named shapes (never to itself).
    const fields = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, referNamed(v, names)]));
    app.addSchema({ $id: name, title: name, ...fields });
  }
  void app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      // Relative: the document describes the server that serves it, wherever it is reached.
      servers: [{ url: '/', description: 'The server that serves this document' }],
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
        { name: 'webhooks', description: "Events of the account POSTed to the account's URLs, signed" },
        { name: 'catalogs', description: 'OS images, instance plans and regions' },
        { name: 'gateway', description: 'Forward auth and introspection for other services' },
        { name: 'oauth', description: 'Signed access tokens: token exchange, the public keys and the metadata' },
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
      const documented = documentRoute((schema ?? {}) as RouteSchema, url, route.config ?? {}, facts, names);
      // A body by reference loses its examples (@fastify/swagger takes a body's from its
      // schema): the whole-document pass puts them on the media type.
      const examples = (schema?.body as { examples?: unknown[] } | undefined)?.examples;
      if ((documented.body as { $ref?: string } | undefined)?.$ref !== undefined && examples !== undefined)
        documented[BODY_EXAMPLE] = examples[0];
      // A route that reads no body as `{}` says so (@fastify/swagger marks every body required):
      // the route's own hook decides, so the document cannot drift from it.
      if ([route.preValidation].flat().includes(noBodyAsEmptyObject)) documented[BODY_OPTIONAL] = true;
      // A wildcard is the rest of the path (`{*}` would be no parameter name a client can use).
      if (url.endsWith('/*')) {
        documented.params = {
          type: 'object',
          properties: { path: { type: 'string', description: 'The rest of the path, as the client sent it' } },
          required: ['path'],
        };
        return { schema: documented as typeof schema, url: `${url.slice(0, -1)}:path` };
      }
      return { schema: documented as typeof schema, url };
    },
    transformObject: (documents) => {
      const doc = 'openapiObject' in documents ? documents.openapiObject : documents.swaggerObject;
      // The response headers by component name, each described once (src/http/response-headers.ts).
      const headers = new Map<string, unknown>();
      for (const item of Object.values(doc.paths ?? {}) as Record<string, Record<string, unknown>>[]) {
        for (const operation of Object.values(item)) {
          const body = operation.requestBody as
            { required: boolean; content: Record<string, Record<string, unknown>> } | undefined;
          if (BODY_EXAMPLE in operation) {
            for (const media of Object.values(body?.content ?? {})) media.example = operation[BODY_EXAMPLE];
            delete operation[BODY_EXAMPLE];
          }
          const responses = operation.responses as Record<string, { headers?: Record<string, unknown> }>;
          for (const response of Object.values(responses)) {
            if (response.headers !== undefined) response.headers = referHeaders(response.headers, headers);
          }
          if (operation[BODY_OPTIONAL] !== true) continue;
          delete operation[BODY_OPTIONAL];
          body!.required = false;
        }
      }
      const components = (doc as { components?: Record<string, unknown> }).components ?? {};
      components.headers = Object.fromEntries([...headers].sort(([a], [b]) => a.localeCompare(b)));
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
    if (request.url.split('?')[0] === INITIALIZER)
      return reply.type('application/javascript; charset=utf-8').header('cache-control', 'no-cache').send(START_SCRIPT);
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
    const body = res.rawPayload;
    return reply.code(res.statusCode).send(body.length > 0 ? body : undefined);
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

// Swagger UI's start script, which the plugin's page loads from this path: infracat's own,
// so the page loads the document clients are told about (/api/v1/openapi.json, not the
// plugin's copy at /docs/json) with these settings. BaseLayout: no top bar, whose logo SVG
// carries an inline <style> (a CSP violation under style-src 'self') and whose URL box
// would let the page explore other documents.
const INITIALIZER = `${DOCS_PREFIX}/static/swagger-initializer.js`;
const START_SCRIPT = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(OPENAPI_PATH)},
    dom_id: '#swagger-ui',
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    deepLinking: true,
    persistAuthorization: false,
    tryItOutEnabled: true,
  });
};
`;

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
