// Request and response headers: what Node does not tell, and what every JSON answer says.
// Node keeps only the first of some repeated request headers (Host, Authorization,
// Content-Type, ...) and drops the rest without a word, where a proxy in front may have
// acted on another one. Where that matters, the raw list tells.

/** The Content-Type of every JSON answer (docs/contract.md, "Basics"). */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** Whether the header `lowerName` occurs more than once; stops at the second. */
export function repeatedHeader(rawHeaders: readonly string[], lowerName: string): boolean {
  let seen = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === lowerName.length && name.toLowerCase() === lowerName) {
      if (seen) return true;
      seen = true;
    }
  }
  return false;
}
