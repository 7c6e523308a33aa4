// Scrubbing credentials out of text that leaves the process: log lines and problem
// details. Shared by src/logging.ts and src/errors.ts.
//
// What counts as a credential (the secret part of each is replaced by [REDACTED]):
// - anything shaped like an infracat secret, `<prefix>_<30+ base62>`: the run after the
//   `_`, whatever precedes it (`x_icat_...` and `ICAT_...` carry the same random part);
// - a webhook signing secret, `whsec_<base64>`;
// - a Bearer or Basic credential (RFC 6750 / 7617 token68), but not a placeholder or the
//   prose the service's own texts put after a scheme name (`Bearer <token>`, `the Bearer
//   scheme`): neither is a credential, and mangling them made the 401 detail read
//   `Authorization: Bearer [REDACTED]`;
// - the value of a credential-named query parameter (`?access_token=`, `&key=`, ...);
// - the password of userinfo in a URL (`//user:pass@host`).
// ... in plain text or in any percent-encoding of it: `icat%5F...`, `%69cat_...`, every
// character escaped, lower-case hex, escapes of escapes (`%255F`). A URL is logged as it
// arrived, and a reader (or a tool) decodes it; so detection decodes leniently and
// replaces the matching span of the original text.
//
// Text without a '%' has nothing to decode: it is scanned as it is.

interface Rule {
  /** Flag g; group 1 is the secret part of a match and ends where the match does. */
  pattern: RegExp;
  /** Matches that look like a credential but are not one. */
  exempt?: (secret: string) => boolean;
}

// A credential is a token68 run (RFC 7235), '=' allowed anywhere so nothing is left over.
const CREDENTIAL = '[A-Za-z0-9\\-._~+/=]+';
// Words the service's own messages put after a scheme name ('the Bearer scheme').
const PROSE_AFTER_SCHEME = new Set(['scheme', 'token', 'tokens', 'realm']);

/** The shape of an infracat secret (and GitHub's): `<prefix>_` then 30+ base62 characters. */
export const SECRET_SHAPE = /_([A-Za-z0-9]{30,})/g;

const RULES: readonly Rule[] = [
  { pattern: SECRET_SHAPE },
  // A webhook signing secret (src/webhooks/secrets.ts): base64 after `whsec_`, which holds
  // `+` and `/`, so runs of the pattern above may be too short to catch it.
  { pattern: /whsec_([A-Za-z0-9+/=]{20,})/g },
  {
    // '+' separates too: it is a space in a query string.
    pattern: new RegExp(`(?<![A-Za-z0-9])(?:bearer|basic)[\\s+]+(${CREDENTIAL})`, 'gi'),
    exempt: (secret) => PROSE_AFTER_SCHEME.has(secret.toLowerCase()),
  },
  { pattern: /[?&](?:access_token|token|api_key|apikey|key|secret|password|auth)=([^&#]+)/gi },
  { pattern: /\/\/[^/?#@\s:]*:([^/?#@\s]+)(?=@)/g },
];

const PLACEHOLDER = '[REDACTED]';

/** Start and end offsets, flattened: [s0, e0, s1, e1, ...]. */
type Spans = number[];

/** Spans (in `view`) of the secrets in `view`. */
function secretSpans(view: string): Spans {
  const spans: Spans = [];
  for (const rule of RULES) {
    const { pattern } = rule;
    pattern.lastIndex = 0;
    for (let m = pattern.exec(view); m !== null; m = pattern.exec(view)) {
      const secret = m[1]!;
      if (rule.exempt?.(secret) === true) continue;
      const end = m.index + m[0].length;
      spans.push(end - secret.length, end);
    }
  }
  return spans;
}

const UTF16 = new TextDecoder('utf-16le');
const hexValue = (c: number): number =>
  c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1;

/**
 * The text with every percent-escape decoded, escapes of escapes included, in one pass:
 * a stack of decoded characters, each remembering where in the original text it began
 * and ended; whenever the top three read `%XX`, they become one character. Bytes above
 * 0x7f stay single characters: no credential pattern uses them, so UTF-8 needn't be read.
 */
function percentDecoded(text: string): { view: string; from: Int32Array; to: Int32Array } {
  const n = text.length;
  const chars = new Uint16Array(n);
  const from = new Int32Array(n);
  const to = new Int32Array(n);
  let top = 0;
  for (let i = 0; i < n; i++) {
    chars[top] = text.charCodeAt(i);
    from[top] = i;
    to[top] = i + 1;
    top++;
    while (top >= 3 && chars[top - 3] === 37) {
      const hi = hexValue(chars[top - 2]!);
      const lo = hexValue(chars[top - 1]!);
      if (hi < 0 || lo < 0) break;
      top -= 2;
      chars[top - 1] = hi * 16 + lo;
      to[top - 1] = to[top + 1]!;
    }
  }
  // One code unit per entry, so offsets in the view stay offsets in the stack (a lone
  // surrogate becomes U+FFFD, one unit as well).
  return { view: UTF16.decode(chars.subarray(0, top)), from, to };
}

/** `text` with each span (possibly overlapping, any order) replaced by the placeholder. */
function replaceSpans(text: string, spans: Spans): string {
  const order: number[] = [];
  for (let i = 0; i < spans.length; i += 2) order.push(i);
  order.sort((a, b) => spans[a]! - spans[b]!);
  let out = '';
  let at = 0;
  for (const i of order) {
    const start = spans[i]!;
    const end = spans[i + 1]!;
    if (end <= at) continue;
    if (start >= at) out += text.slice(at, start) + PLACEHOLDER;
    at = end;
  }
  return out + text.slice(at);
}

export function redactSecrets(text: string): string {
  if (!text.includes('%')) {
    const spans = secretSpans(text);
    return spans.length === 0 ? text : replaceSpans(text, spans);
  }
  const { view, from, to } = percentDecoded(text);
  const spans = secretSpans(view);
  if (spans.length === 0) return text;
  for (let i = 0; i < spans.length; i += 2) {
    spans[i] = from[spans[i]!]!;
    spans[i + 1] = to[spans[i + 1]! - 1]!;
  }
  return replaceSpans(text, spans);
}

/** Whether the text holds anything redactSecrets would replace. */
export function holdsSecret(text: string): boolean {
  return redactSecrets(text) !== text;
}

/**
 * Strings (keys included) anywhere in a JSON-like value, redacted, as a plain copy (own
 * enumerable fields, what a JSON line shows); for serialised errors and problem members.
 * Bounded in depth and size (an error may hold a socket or a request): what is not read
 * is not shown.
 */
export function redactDeep<T>(value: T): T {
  let budget = 2000;
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return redactSecrets(v);
    if (v === null || typeof v !== 'object') return v;
    if (ArrayBuffer.isView(v) || v instanceof Date) return v; // not text
    if (depth > 8 || --budget < 0) return '[OMITTED]';
    if (Array.isArray(v)) return v.map((item) => walk(item, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(v)) out[redactSecrets(k)] = walk(item, depth + 1);
    return out;
  };
  return walk(value, 0) as T;
}
