import { Type, type Static, type TLiteral } from 'typebox';
import { redactDeep, redactSecrets } from './redact.js';

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
  INVALID_SIGNATURE: { status: 401, title: 'Invalid signature' },
  INSUFFICIENT_SCOPE: { status: 403, title: 'Insufficient scope' },
  PREVIOUS_SECRET_READ_ONLY: { status: 403, title: "A token's previous secret cannot make changes" },
  TOKEN_ADDRESS_NOT_ALLOWED: { status: 403, title: 'The token may not be used from this address' },
  CONDITIONS_NOT_HELD: { status: 403, title: 'The token is usable more widely than the calling token' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  SIGNED_TOKENS_OFF: { status: 404, title: 'Signed access tokens are off' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  CONFLICT: { status: 409, title: 'Conflict' },
  TOKEN_LIMIT_REACHED: { status: 409, title: 'Token limit reached' },
  WEBHOOK_LIMIT_REACHED: { status: 409, title: 'Webhook limit reached' },
  GONE: { status: 410, title: 'Gone' },
  OPERATOR_ACCOUNT: { status: 409, title: 'The operator account cannot be suspended or deleted' },
  PRECONDITION_FAILED: { status: 412, title: 'Precondition failed' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  EXPECTATION_FAILED: { status: 417, title: 'Expectation failed' },
  VALIDATION_FAILED: { status: 422, title: 'Validation failed' },
  WEBHOOK_TARGET_REFUSED: { status: 422, title: 'The webhook URL is not an allowed target' },
  PRECONDITION_REQUIRED: { status: 428, title: 'Precondition required' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  ACCOUNT_RATE_LIMITED: { status: 429, title: "Too many requests for the token's account" },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large' },
  INTERNAL: { status: 500, title: 'Internal server error' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable' },
  STORAGE_UNAVAILABLE: { status: 503, title: 'Storage unavailable' },
  WEBHOOKS_NOT_CONFIGURED: { status: 503, title: 'Webhooks are not configured' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** One invalid field of a request, located by an RFC 6901 JSON pointer. */
export const FieldErrorSchema = Type.Object({
  pointer: Type.String({ description: 'RFC 6901 JSON pointer to the field (query parameters: `querystring:/name`)' }),
  detail: Type.String(),
});
export type FieldError = Static<typeof FieldErrorSchema>;

export interface ProblemExtras {
  /** Field-level errors (validation). */
  errors?: FieldError[];
  /** Validation stopped before the end of the input: `errors` may not be all there is. */
  errorsTruncated?: boolean;
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

// A problem stays small whatever the request held: 3,000 unknown query parameters
// (14 KB) made a 238 KB answer. The first field errors say what is wrong; the count
// says how much more there is.
export const MAX_FIELD_ERRORS = 20;
export const MAX_DETAIL_CHARS = 500;

/**
 * The body of every error answer, declared once: the Problem type, the OpenAPI
 * components.schemas.Problem (src/http/openapi.ts) and toProblem() below, which builds
 * every problem the service sends, all come from it. Extension members (`missing_scopes`,
 * `valid_scopes`, ...) are allowed beside the listed ones.
 */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ examples: ['urn:problem-type:infracat:validation-failed'] }),
    title: Type.String({ examples: ['Validation failed'] }),
    status: Type.Integer({ examples: [422] }),
    detail: Type.String({ examples: ['the token request is invalid; see errors'] }),
    // A tuple type, so that Static reads the union (it reads a plain array's as never).
    code: Type.Union((Object.keys(ERRORS) as ErrorCode[]).map((c) => Type.Literal(c)) as [TLiteral<ErrorCode>], {
      description: 'Stable error code; see docs/errors.md',
    }),
    instance: Type.Optional(
      Type.String({
        maxLength: MAX_DETAIL_CHARS,
        description: `The request's path, at most ${MAX_DETAIL_CHARS} characters`,
        examples: ['/api/v1/api-tokens'],
      }),
    ),
    request_id: Type.Optional(Type.String({ description: 'Also in the X-Request-Id header and the server log' })),
    errors: Type.Optional(Type.Array(FieldErrorSchema, { description: `Field errors, at most ${MAX_FIELD_ERRORS}` })),
    errors_omitted: Type.Optional(
      Type.Integer({ description: 'How many more field errors there were, left out of `errors`' }),
    ),
    errors_truncated: Type.Optional(
      Type.Boolean({
        description:
          'Present (true) when validation stopped early (after the first problems, or at a list over its cap): ' +
          'more problems were cut, not counted; fix these and send it again',
      }),
    ),
  },
  { additionalProperties: true, description: 'RFC 9457 problem details' },
);
/** The schema's fields, and the extension members it allows (Static leaves those out). */
export type Problem = Static<typeof ProblemSchema> & { [member: string]: unknown };

/** At most MAX_DETAIL_CHARS characters, an ellipsis marking a cut (never inside a surrogate pair). */
function clip(text: string): string {
  if (text.length <= MAX_DETAIL_CHARS) return text;
  let end = MAX_DETAIL_CHARS - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}\u2026`;
}

// Everything in a problem may quote the client's input (the path, a body key in a
// pointer, a value in a detail), and a token pasted into the wrong place must not
// come back (or reach a proxy's logs) in plaintext, in any encoding: every string in
// it is redacted. Redaction comes before clipping, so a cut cannot split a secret into
// parts too short to recognise.
export function toProblem(err: AppError, instance?: string, requestId?: string): Problem {
  const { title, status } = ERRORS[err.code];
  const body: Problem = {
    ...(err.extras.members === undefined ? {} : redactDeep(err.extras.members)),
    type: problemType(err.code),
    title,
    status,
    detail: clip(redactSecrets(err.message)),
    code: err.code,
  };
  if (instance !== undefined) body.instance = clip(redactSecrets(instance));
  // Already restricted to a short plain form that cannot look like a secret (src/logging.ts).
  if (requestId !== undefined) body.request_id = requestId;
  const errors = err.extras.errors;
  if (errors !== undefined) {
    body.errors = errors
      .slice(0, MAX_FIELD_ERRORS)
      .map((e) => ({ pointer: redactSecrets(e.pointer), detail: clip(redactSecrets(e.detail)) }));
    if (errors.length > MAX_FIELD_ERRORS) body.errors_omitted = errors.length - MAX_FIELD_ERRORS;
    if (err.extras.errorsTruncated === true) body.errors_truncated = true;
  }
  return body;
}
