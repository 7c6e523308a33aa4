// The path a forwarded request names, read the one way every upstream reads it, or
// refused. The gateway passes the client's raw request target; the upstream service will
// decode it once and route on it. Anything two reasonable parsers could read differently
// is refused instead of guessed, because a guess that differs from the upstream's is an
// authorisation bypass:
//
// - `%` must start an escape of two hex digits, and the escapes must decode to valid
//   UTF-8 (overlong `%C0%AE` is not a dot: it is refused);
// - no escape may decode to `/` (segment structure), `\` (a slash to some servers), `%`
//   (double encoding: `%252e` would be a dot to a server that decodes twice) or a control
//   character (`%00` ends a string in C); raw backslashes, controls, spaces, non-ASCII
//   bytes and `#` are refused too;
// - dot segments (`.`, `..`, encoded in any case, or `..;x` which servlet containers read
//   as `..`) are refused rather than resolved: an upstream that does not resolve them
//   would route `/admin/../apps/1` to /admin while a resolving check approved /apps/1;
// - a target starting with `//` is refused: URL parsers read `//apps/x` as host `apps`;
// - a segment whose NFKC form holds `/`, `\`, `%` or is a dot segment (fullwidth `．．`)
//   is refused, for upstreams that normalise Unicode.
//
// What is left decodes to a path that no further decoding or resolution changes; empty
// segments are dropped (`/apps//1/` is `/apps/1`).

export type PathResult = { ok: true; path: string } | { ok: false; reason: string };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function refuse(reason: string): PathResult {
  return { ok: false, reason };
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/** A segment that some server resolves as `.` or `..` (servlet containers drop `;params` first). */
function isDotSegment(segment: string): boolean {
  const name = segment.split(';', 1)[0];
  return name === '.' || name === '..';
}

/**
 * The path of an origin-form request target (`/path?query`), percent-decoded once, with
 * empty segments dropped; or the reason it cannot be read unambiguously.
 */
export function normalisePath(target: string): PathResult {
  if (!target.startsWith('/')) return refuse('must be an origin-form path starting with /');
  if (target.startsWith('//')) return refuse('starts with // (an authority to URL parsers, not a path)');
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f)
      return refuse('contains a space, a control character or a raw non-ASCII byte (percent-encode it)');
    if (c === 0x5c) return refuse('contains a backslash');
    if (c === 0x23) return refuse('contains # (a fragment has no place in a request)');
  }
  const end = target.indexOf('?');
  const raw = end === -1 ? target : target.slice(0, end);

  const bytes = new Uint8Array(raw.length);
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c !== 0x25) {
      bytes[n++] = c;
      continue;
    }
    const hi = hexValue(raw.charCodeAt(i + 1));
    const lo = hexValue(raw.charCodeAt(i + 2));
    if (hi < 0 || lo < 0) return refuse('has a % not followed by two hex digits');
    const b = hi * 16 + lo;
    if (b === 0x2f) return refuse('encodes a slash (%2F), which changes the segments');
    if (b === 0x5c) return refuse('encodes a backslash (%5C)');
    if (b === 0x25) return refuse('encodes a percent sign (%25): double encoding is refused');
    if (b < 0x20 || b === 0x7f) return refuse('encodes a control character');
    bytes[n++] = b;
    i += 2;
  }
  let decoded: string;
  try {
    decoded = utf8.decode(bytes.subarray(0, n));
  } catch {
    return refuse('has percent-escapes that are not valid UTF-8');
  }

  const out: string[] = [];
  for (const segment of decoded.split('/')) {
    if (segment === '') continue;
    if (isDotSegment(segment)) return refuse('has a dot segment (. or ..)');
    if (/[^\x20-\x7e]/.test(segment)) {
      if (/[\x80-\x9f]/.test(segment)) return refuse('encodes a control character');
      const compat = segment.normalize('NFKC');
      if (/[/\\%]/.test(compat) || isDotSegment(compat))
        return refuse('has characters that Unicode normalisation turns into /, \\, % or a dot segment');
    }
    out.push(segment);
  }
  return { ok: true, path: `/${out.join('/')}` };
}
