// What the console tells a person when the API says no. Pure: the API client turns a
// response into an ApiError, this turns an ApiError into a sentence.
// Unit-tested in test/console/problems.test.ts; shown in the e2e tests.

export interface FieldError {
  pointer: string;
  detail: string;
}

/** An RFC 9457 problem as infracat sends it (see docs/errors.md). */
export interface Problem {
  status: number;
  title?: string;
  detail?: string;
  code?: string;
  request_id?: string;
  errors?: FieldError[];
  missing_scopes?: string[];
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
    /** Seconds from Retry-After, when the server sent one. */
    readonly retryAfterS: number | null = null,
  ) {
    super(problem.detail ?? problem.title ?? `HTTP ${status}`);
    this.name = 'ApiError';
  }
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

export function messageFor(err: ApiError): string {
  const p = err.problem;
  switch (err.status) {
    case 0:
      return 'Cannot reach infracat. Check the connection and try again.';
    case 401:
      if (p.code === 'UNAUTHORIZED') return 'Sign in with an API token to continue.';
      // The one refusal a person can do something about besides a new token: the code is
      // INVALID_TOKEN for every reason, the detail says which (src/http/auth.ts).
      if (p.detail === "the token's account is suspended") {
        return "The token's account is suspended: its tokens are refused until the platform operator resumes it.";
      }
      return 'The token was not accepted: it is malformed, unknown, expired or deleted. Sign in with a valid token.';
    case 403: {
      const missing = p.missing_scopes ?? [];
      const what =
        missing.length > 0 ? `the ${missing.join(', ')} scope${missing.length === 1 ? '' : 's'}` : 'a scope this needs';
      return `This token lacks ${what}. Sign in with a token that holds it, or ask whoever manages your tokens.`;
    }
    case 409:
      if (p.code === 'OPERATOR_ACCOUNT') {
        return `Refused: ${p.detail ?? 'the operator account cannot be suspended or deleted'}.`;
      }
      if (p.code === 'WEBHOOK_LIMIT_REACHED') {
        return `The limit on webhooks is reached: ${p.detail ?? 'delete one you no longer need, then try again'}.`;
      }
      return p.code === 'TOKEN_LIMIT_REACHED'
        ? `The limit on live tokens is reached (${p.detail ?? 'no more can be created'}). ` +
            'Delete a token you no longer need, then try again.'
        : `Conflict: ${p.detail ?? 'the request clashes with the current state'}.`;
    case 422:
      return 'Some fields need attention; see the messages next to them.';
    case 429:
      return err.retryAfterS !== null
        ? `Too many requests. Try again in ${plural(err.retryAfterS, 'second')}.`
        : 'Too many requests. Wait a moment, then try again.';
    default:
      if (p.code === 'WEBHOOKS_NOT_CONFIGURED') {
        return 'Webhooks are not configured on this server: its operator has to set WEBHOOK_ENCRYPTION_KEYS first.';
      }
      if (err.status >= 500) {
        const ref = p.request_id !== undefined ? ` (reference ${p.request_id})` : '';
        return `infracat could not complete the request: ${p.title ?? `HTTP ${err.status}`}${ref}. Try again shortly.`;
      }
      return p.detail ?? p.title ?? `The request failed (HTTP ${err.status}).`;
  }
}

/** Field errors keyed by the top-level field a pointer names ("/scopes/2" -> "scopes"). */
export function fieldErrors(err: ApiError): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of err.problem.errors ?? []) {
    const field = e.pointer.split('/')[1] ?? '';
    out.set(field, [...(out.get(field) ?? []), e.detail]);
  }
  return out;
}
