import { redactSecrets } from './redact.js';

// The one catalog of error codes. Every error the service answers is one of these,
// rendered as RFC 9457 problem details by src/http/problem.ts. Clients branch on
// `code`; `title` is fixed per code, `detail` explains this occurrence.

export const ERRORS = {
  BAD_REQUEST: { status: 400, title: 'Bad request' },
  MALFORMED_JSON: { status: 400, title: 'Malformed JSON body' },
  INVALID_QUERY: { status: 400, title: 'Invalid query parameter' },
  TOKEN_IN_QUERY: { status: 400, title: 'Credentials in the query string' },
  UNAUTHORIZED: { status: 401, title: 'Authentication required' },
  INVALID_TOKEN: { status: 401, title: 'Invalid token' },
  INSUFFICIENT_SCOPE: { status: 403, title: 'Insufficient scope' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  CONFLICT: { status: 409, title: 'Conflict' },
  TOKEN_LIMIT_REACHED: { status: 409, title: 'Token limit reached' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  VALIDATION_FAILED: { status: 422, title: 'Validation failed' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large' },
  INTERNAL: { status: 500, title: 'Internal server error' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** One invalid field of a request, located by an RFC 6901 JSON pointer. */
export interface FieldError {
  pointer: string;
  detail: string;
}

export interface ProblemExtras {
  /** Field-level errors (validation). */
  errors?: FieldError[];
  /** Extra response headers this problem needs (Allow, Retry-After, WWW-Authenticate). */
  headers?: Record<string, string>;
  /** Extension members merged into the body (e.g. `scopes`). */
  members?: Record<string, unknown>;
}

/** An error that becomes a problem response. Anything else thrown becomes a 500. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly extras: ProblemExtras;

  constructor(code: ErrorCode, detail: string, extras: ProblemExtras = {}) {
    super(detail);
    this.name = 'AppError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.extras = extras;
  }
}

/** `NOT_FOUND` -> `urn:problem-type:infracat:not-found`: stable, documented in docs/errors.md. */
export function problemType(code: ErrorCode): string {
  return `urn:problem-type:infracat:${code.toLowerCase().replaceAll('_', '-')}`;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  instance?: string;
  request_id?: string;
  errors?: FieldError[];
  [member: string]: unknown;
}

export function toProblem(err: AppError, instance?: string, requestId?: string): Problem {
  const { title, status } = ERRORS[err.code];
  const body: Problem = {
    ...err.extras.members,
    type: problemType(err.code),
    title,
    status,
    // Details may quote the client's input; a token pasted into the wrong field must
    // not come back (or reach a proxy's logs) in plaintext.
    detail: redactSecrets(err.message),
    code: err.code,
  };
  if (instance !== undefined) body.instance = instance;
  if (requestId !== undefined) body.request_id = requestId;
  if (err.extras.errors !== undefined) body.errors = err.extras.errors.map((e) => ({ pointer: e.pointer, detail: redactSecrets(e.detail) }));
  return body;
}
