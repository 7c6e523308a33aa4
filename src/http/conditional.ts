// Conditional requests (RFC 9110 section 13), shared by the catalog and the console assets.

/** RFC 9110 If-None-Match: weak comparison, `*` matches any current representation. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === bare);
}

/**
 * RFC 9110 If-Match with its strong comparison: `*` matches any current representation,
 * otherwise one of the listed entity-tags must be `etag` exactly (a weak `W/"..."` tag
 * never matches). Anything that is not exactly `*` or a list of entity-tags is `malformed`:
 * a precondition that cannot be read is not met (fail closed).
 */
export function matchIfMatch(header: string, etag: string): 'match' | 'no-match' | 'malformed' {
  if (header.trim() === '*') return 'match';
  const tags = header.split(',').map((t) => t.trim());
  if (tags.some((t) => !/^(?:W\/)?"[\x21\x23-\x7e]*"$/.test(t))) return 'malformed';
  return tags.includes(etag) ? 'match' : 'no-match';
}
