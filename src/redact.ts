// Scrubbing credentials out of text that leaves the process: log lines and problem
// details. Shared by src/logging.ts and src/errors.ts.

// Anything that looks like an infracat secret (`<prefix>_<30+ base62>`), a bearer
// credential, or a credential-named query parameter.
const TOKEN_LIKE = /\b([a-z][a-z0-9]{0,15})_[A-Za-z0-9]{30,}/g;
const BEARER = /\b(bearer|basic)\s+[^\s,;"]+/gi;
const SECRET_PARAM = /([?&](?:access_token|token|api_key|apikey|key|secret|password|auth)=)[^&#]*/gi;

// Every access-log line passes its URL through here, and most URLs hold none of the
// characters a pattern needs ('_', whitespace, '='): a cheap look first skips the regex
// scans (they were ~2% of the server's CPU under load, BENCHMARKS.md).
const WHITESPACE = /\s/;

export function redactSecrets(text: string): string {
  let out = text;
  if (out.includes('_')) out = out.replace(TOKEN_LIKE, '$1_[REDACTED]');
  if (WHITESPACE.test(out)) out = out.replace(BEARER, '$1 [REDACTED]');
  if (out.includes('=')) out = out.replace(SECRET_PARAM, '$1[REDACTED]');
  return out;
}
