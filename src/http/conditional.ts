// Conditional requests (RFC 9110 section 13), shared by the catalog and the console assets.

/** RFC 9110 If-None-Match: weak comparison, `*` matches any current representation. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === bare);
}
