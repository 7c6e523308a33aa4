// Scrubbing credentials out of text that leaves the process: log lines and problem
// details. Shared by src/logging.ts and src/errors.ts.

// Anything that looks like an infracat secret (`<prefix>_<30+ base62>`), a bearer
// credential, or a credential-named query parameter.
const TOKEN_LIKE = /\b([a-z][a-z0-9]{0,15})_[A-Za-z0-9]{30,}/g;
const BEARER = /\b(bearer|basic)\s+[^\s,;"]+/gi;
const SECRET_PARAM = /([?&](?:access_token|token|api_key|apikey|key|secret|password|auth)=)[^&#]*/gi;

export function redactSecrets(text: string): string {
  return text
    .replace(TOKEN_LIKE, '$1_[REDACTED]')
    .replace(BEARER, '$1 [REDACTED]')
    .replace(SECRET_PARAM, '$1[REDACTED]');
}
