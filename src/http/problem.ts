// Every error leaves the service as RFC 9457 problem+json with a code from
// src/errors.ts: thrown AppErrors, Fastify's own errors (bad JSON, wrong media type,
// body too large, schema validation), unknown routes (404), known paths with the wrong
// method (405 + Allow), unavailable storage (503 + Retry-After) and anything else
// (500, details only in the log).
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest, preHandlerHookHandler, RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import type { App } from './types.js';
import { AppError, ERRORS, toProblem, type ErrorCode, type FieldError } from '../errors.js';
import { StorageUnavailableError } from '../storage/types.js';
import { ROUTED_METHODS } from './methods.js';
import { SECURITY_HEADERS } from './security.js';

const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';
export const RETRY_AFTER_SECONDS = 5;
// OPTIONS is not looked for: with CORS on, a catch-all OPTIONS route answers preflights
// for every path, and it made unknown paths answer 405 "allowed: OPTIONS" instead of 404.
const ALLOW_CANDIDATES = ROUTED_METHODS.filter((m) => m !== 'OPTIONS');
/** Query parameters named in an INVALID_QUERY detail; the rest are counted. */
const NAMED_PARAMETERS = 5;

function sendProblem(request: FastifyRequest, reply: FastifyReply, err: AppError): FastifyReply {
  for (const [name, value] of Object.entries(err.extras.headers ?? {})) reply.header(name, value);
  // Also set by the app's first onRequest hook, but a problem may be answered before it ran
  // (a URL the router cannot read).
  reply.header('x-request-id', request.id);
  if (!reply.hasHeader('x-content-type-options')) reply.headers(SECURITY_HEADERS);
  // The instance is the path as it arrived (toProblem redacts it, percent-encoded or not).
  return reply
    .code(err.status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(toProblem(err, request.url.split('?')[0], request.id));
}

interface AjvIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

/**
 * Ajv issues -> one entry per offending field, located by an RFC 6901 JSON pointer.
 * A failed union (anyOf) reports one "must be X or Y" instead of one line per branch.
 */
function fieldErrors(issues: readonly AjvIssue[]): FieldError[] {
  const byPointer = new Map<string, { details: string[]; types: string[]; union: boolean; constraints: string[] }>();
  for (const issue of issues) {
    let pointer = issue.instancePath ?? '';
    let detail = issue.message ?? 'is invalid';
    const p = issue.params ?? {};
    if (issue.keyword === 'required' && typeof p.missingProperty === 'string') {
      pointer += `/${escapePointer(p.missingProperty)}`;
      detail = 'is required';
    } else if (issue.keyword === 'additionalProperties' && typeof p.additionalProperty === 'string') {
      pointer += `/${escapePointer(p.additionalProperty)}`;
      detail = 'is not a known field';
    }
    const group = byPointer.get(pointer) ?? { details: [], types: [], union: false, constraints: [] };
    byPointer.set(pointer, group);
    if (issue.keyword === 'anyOf' || issue.keyword === 'oneOf') group.union = true;
    else if (issue.keyword === 'type' && typeof p.type === 'string') group.types.push(p.type);
    else if (!group.constraints.includes(detail)) group.constraints.push(detail);
    if (!group.details.includes(detail)) group.details.push(detail);
  }
  const out: FieldError[] = [];
  for (const [pointer, g] of byPointer) {
    // A union whose branch of the value's type failed a constraint (too many items, too
    // long): that constraint is what is wrong, not the other branches' types.
    if (g.union && g.constraints.length > 0) for (const detail of g.constraints) out.push({ pointer, detail });
    else if (g.union)
      out.push({
        pointer,
        detail:
          g.types.length > 0 ? `must be ${[...new Set(g.types)].join(' or ')}` : 'does not match any allowed form',
      });
    else for (const detail of g.details) out.push({ pointer, detail });
  }
  return out;
}

function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

const BY_FASTIFY_CODE: Record<string, { code: ErrorCode; detail: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', detail: 'request bodies must be application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'BAD_REQUEST', detail: 'Content-Length does not match the body' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'MALFORMED_JSON', detail: 'the body is empty but Content-Type says JSON' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'MALFORMED_JSON', detail: 'the body is not valid JSON' },
};

const BY_STATUS: Partial<Record<number, ErrorCode>> = {
  401: 'UNAUTHORIZED',
  403: 'INSUFFICIENT_SCOPE',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
};

/** Turns whatever was thrown into the AppError to answer with. */
function classify(error: FastifyError | Error, bodyLimit: number): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof StorageUnavailableError) {
    // Unreachable, locked, read-only or out of space: nothing a retry elsewhere can't fix.
    return new AppError('STORAGE_UNAVAILABLE', 'storage is unavailable (unreachable or read-only); retry shortly', {
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    });
  }
  const fe = error as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (Array.isArray(fe.validation)) {
    const where = fe.validationContext ?? 'body';
    if (where === 'body') {
      return new AppError('VALIDATION_FAILED', 'the request body is invalid; see errors', {
        errors: fieldErrors(fe.validation),
      });
    }
    const errors = fieldErrors(fe.validation);
    const names = [...new Set(errors.map((e) => e.pointer.replace(/^\//, '')).filter((n) => n !== ''))];
    const named =
      names.length > NAMED_PARAMETERS
        ? `${names.slice(0, NAMED_PARAMETERS).join(', ')} and ${names.length - NAMED_PARAMETERS} more`
        : names.join(', ');
    return new AppError(
      where === 'querystring' ? 'INVALID_QUERY' : 'BAD_REQUEST',
      `invalid ${where === 'querystring' ? 'query parameter' : where}${named !== '' ? ` ${named}` : ''}`,
      {
        errors: errors.map((e) => ({
          pointer: `${where}:${e.pointer}`,
          detail:
            e.detail === 'is not a known field'
              ? `is not a known ${where === 'querystring' ? 'query parameter' : 'field'}`
              : e.detail,
        })),
      },
    );
  }
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new AppError('PAYLOAD_TOO_LARGE', `request bodies are limited to ${bodyLimit} bytes`);
  }
  const known = typeof fe.code === 'string' ? BY_FASTIFY_CODE[fe.code] : undefined;
  if (known !== undefined) return new AppError(known.code, known.detail);
  const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
  if (status === 400 && error instanceof SyntaxError)
    return new AppError('MALFORMED_JSON', 'the body is not valid JSON');
  if (status >= 400 && status < 500) {
    // Fastify's own 4xx messages describe the request, not the server: safe to show.
    return new AppError(BY_STATUS[status] ?? 'BAD_REQUEST', error.message || ERRORS.BAD_REQUEST.title);
  }
  return new AppError('INTERNAL', 'an unexpected error occurred; quote the request_id when reporting it');
}

export interface ProblemOptions {
  bodyLimit: number;
  /** Told about every request that failed because storage was unavailable (metrics). */
  onStorageError?: () => void;
}

/**
 * What to answer for whatever was thrown, logged and counted as every error is: a 5xx with
 * its cause (never in the answer), unavailable storage as a warning and in the metrics.
 * The error handler of every route; a route that answers errors in another form (the OAuth
 * token endpoint) renders the same AppError its own way.
 */
export function classifyError(error: FastifyError | Error, request: FastifyRequest, options: ProblemOptions): AppError {
  // A route may take larger bodies than the app (the catalog document): name its own limit.
  const problem = classify(error, request.routeOptions.bodyLimit ?? options.bodyLimit);
  if (problem.status >= 500 && problem.status !== 503) {
    request.log.error({ err: error }, 'unhandled error');
  } else if (error instanceof StorageUnavailableError) {
    options.onStorageError?.();
    request.log.warn({ err: error }, 'storage unavailable');
  }
  return problem;
}

/** Installs the error handler on the root instance. */
export function installProblemHandlers(app: App, options: ProblemOptions): void {
  app.setErrorHandler((error: FastifyError, request, reply) =>
    sendProblem(request, reply, classifyError(error, request, options)),
  );
}

/**
 * The answer to a path no route has (404), or a method it does not take (405 + Allow).
 * `preHandler`: what must still run first (the rate limiter: unknown paths count too).
 */
export function installNotFoundHandler(app: App, preHandler?: preHandlerHookHandler): void {
  app.setNotFoundHandler(preHandler === undefined ? {} : { preHandler }, (request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = ALLOW_CANDIDATES.filter(
      (m) => m !== request.method && app.findRoute({ method: m, url: path }) !== null,
    );
    if (allowed.length > 0) {
      return sendProblem(
        request,
        reply,
        new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed here; allowed: ${allowed.join(', ')}`, {
          headers: { allow: allowed.join(', ') },
        }),
      );
    }
    return sendProblem(request, reply, new AppError('NOT_FOUND', `no resource at ${path}`));
  });
}

/**
 * Errors Fastify meets while routing (a malformed URL, an over-long path parameter):
 * answered as problems like everything else. Passed as Fastify's `frameworkErrors`.
 */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const detail = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment is too long' : 'the URL is not valid';
  void sendProblem(request, reply, new AppError('BAD_REQUEST', detail));
}

/**
 * Requests Node's HTTP parser rejects before Fastify sees them (unknown methods, broken
 * request lines, header overflow, time-outs): a problem body on a closing connection.
 * Passed as Fastify's `clientErrorHandler`.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return;
  const error =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('REQUEST_TIMEOUT', 'the request did not arrive in time')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new AppError('HEADERS_TOO_LARGE', 'the request headers are too large')
        : new AppError('BAD_REQUEST', 'the request is not valid HTTP/1.1');
  const body = JSON.stringify(toProblem(error));
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n` +
      `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** The error handler of every route, as a plugin. */
export const problems = fp<ProblemOptions, RawServerDefault, TypeBoxTypeProvider>(
  (app, options, done) => {
    installProblemHandlers(app, options);
    done();
  },
  { name: 'infracat-problems' },
);

/** The 404/405 answers, behind the rate limiter when there is one. */
export const notFound = fp<Record<never, never>, RawServerDefault, TypeBoxTypeProvider>(
  (app, _options, done) => {
    installNotFoundHandler(app, app.rateLimiter?.hook);
    done();
  },
  { name: 'infracat-not-found', dependencies: ['infracat-problems', 'infracat-rate-limit'] },
);
