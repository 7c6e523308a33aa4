// The `Link: <...>; rel="next"` header of a paged list (RFC 8288, as GitHub's API pages),
// read without the DOM. Unit-tested in test/console/logic.test.ts.
//
// The console sends the signed-in token with every API call, so a link is followed only
// when it resolves to the very collection that was asked for, on this origin: a header
// that is malformed, or points anywhere else, means "no further page" (fail closed).

/** The targets of the links whose rel (a space-separated list) includes `rel`, in order. */
export function linkTargets(header: string, rel: string): string[] | null {
  const found: string[] = [];
  let i = 0;
  const skipSpace = (): void => {
    while (i < header.length && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  const token = (): string => {
    const start = i;
    while (i < header.length && /[!#$%&'*+\-.^_`|~0-9A-Za-z]/.test(header[i]!)) i++;
    return header.slice(start, i);
  };
  for (;;) {
    skipSpace();
    if (i >= header.length) return found;
    if (header[i] !== '<') return null;
    const end = header.indexOf('>', i);
    if (end < 0) return null;
    const target = header.slice(i + 1, end);
    i = end + 1;
    const rels: string[] = [];
    for (;;) {
      skipSpace();
      if (header[i] !== ';') break;
      i++;
      skipSpace();
      const name = token().toLowerCase();
      if (name === '') return null;
      skipSpace();
      let value = '';
      if (header[i] === '=') {
        i++;
        skipSpace();
        if (header[i] === '"') {
          // A quoted string: a backslash escapes the next character.
          i++;
          for (;;) {
            if (i >= header.length) return null;
            const c = header[i++]!;
            if (c === '"') break;
            if (c === '\\') {
              if (i >= header.length) return null;
              value += header[i++];
            } else value += c;
          }
        } else {
          value = token();
          if (value === '') return null;
        }
      }
      if (name === 'rel') rels.push(...value.toLowerCase().split(/\s+/));
    }
    skipSpace();
    if (i < header.length && header[i] !== ',') return null;
    i++;
    if (rels.includes(rel.toLowerCase())) found.push(target);
  }
}

/**
 * The next page of the collection fetched from `requestUrl` (an absolute URL), as a URL
 * on the same origin and path; null when there is none, or the header cannot be trusted
 * to name one (malformed, several "next" links, another origin or path).
 */
export function nextPageUrl(header: string | null, requestUrl: string): URL | null {
  if (header === null) return null;
  const targets = linkTargets(header, 'next');
  if (targets === null || targets.length !== 1) return null;
  let base: URL;
  let next: URL;
  try {
    base = new URL(requestUrl);
    // RFC 8288: a relative reference resolves against the request's URL.
    next = new URL(targets[0]!, base);
  } catch {
    return null;
  }
  if (next.origin !== base.origin || next.pathname !== base.pathname) return null;
  if (next.username !== '' || next.password !== '') return null;
  next.hash = '';
  return next;
}
