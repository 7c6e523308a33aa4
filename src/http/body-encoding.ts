// Request bodies are text in UTF-8, read exactly or refused. Decoding whatever arrived
// as UTF-8 turned a latin-1 body, raw invalid bytes or a gzip body into text with U+FFFD
// in place of every unreadable byte, and stored it that way. So:
// - a charset other than UTF-8 in Content-Type, or any content coding: 415, naming it;
// - a transfer coding other than chunked (Node removes only chunked): 400, since the
//   bytes are not the body (RFC 9112 says 501; a 5xx would blame the server);
// - two Content-Type headers (Node keeps the first): 400;
// - bytes that are not UTF-8: 400 (`invalid` names the code: MALFORMED_JSON for JSON).
// One leading byte order mark is allowed and dropped (RFC 8259 section 8.1 lets a parser
// ignore it; editors on Windows write one); a second is part of the text.
// Used by every body parser: the JSON one (json-body.ts) and introspection's form one.
import type { FastifyRequest } from 'fastify';
import { AppError, type ErrorCode } from '../errors.js';
import { redactSecrets } from '../redact.js';
import { repeatedHeader } from './headers.js';

const UTF8 = new Set(['utf-8', 'utf8']);
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
// One `; name=value` parameter (RFC 9110 section 5.6.6), value a token or a quoted-string.
const PARAMETER = new RegExp(`\\s*;\\s*(?:(${TOKEN})=(${TOKEN}|"(?:[^"\\\\]|\\\\.)*")\\s*)?`, 'y');
const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The Content-Type's charset parameters (lower-cased), or null if the parameters cannot be read. */
function charsets(contentType: string): string[] | null {
  const semicolon = contentType.indexOf(';');
  if (semicolon < 0) return [];
  const found: string[] = [];
  PARAMETER.lastIndex = semicolon;
  while (PARAMETER.lastIndex < contentType.length) {
    const m = PARAMETER.exec(contentType);
    if (m === null) return null;
    if (m[1]?.toLowerCase() === 'charset') {
      const value = m[2]!;
      found.push((value.startsWith('"') ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value).toLowerCase());
    }
  }
  return found;
}

/** A header value for a detail: redacted before it is cut, so no piece of a secret survives. */
function quote(raw: string): string {
  const value = redactSecrets(raw);
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
}

/** Throws the problem when the headers say the body is not plain UTF-8 text. */
function checkBodyHeaders(request: FastifyRequest): void {
  const { headers } = request;
  if (repeatedHeader(request.raw.rawHeaders, 'content-type'))
    throw new AppError('BAD_REQUEST', 'send exactly one Content-Type header');
  const found = charsets(headers['content-type'] ?? '');
  if (found === null) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the Content-Type parameters cannot be read');
  const other = found.find((c) => !UTF8.has(c));
  if (other !== undefined)
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `request bodies must be UTF-8; charset=${quote(other)} is not supported`,
    );
  if (found.length > 1) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the Content-Type names more than one charset');
  const coding = headers['content-encoding'];
  if (coding !== undefined) {
    const unsupported = coding
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c !== '' && c.toLowerCase() !== 'identity');
    if (unsupported.length > 0) {
      throw new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        `request bodies must not be compressed; Content-Encoding ${quote(unsupported.join(', '))} is not supported`,
        {
          headers: { 'accept-encoding': 'identity' },
        },
      );
    }
  }
  const transfer = headers['transfer-encoding'];
  if (transfer !== undefined && transfer.split(',').some((c) => c.trim().toLowerCase() !== 'chunked')) {
    throw new AppError('BAD_REQUEST', `Transfer-Encoding ${quote(transfer)} is not supported; only chunked`);
  }
}

/** The body as text, after the header checks; throws the problem `invalid` for bytes that are not UTF-8. */
export function readTextBody(request: FastifyRequest, body: Buffer, invalid: ErrorCode): string {
  checkBodyHeaders(request);
  try {
    return strict.decode(body);
  } catch {
    throw new AppError(invalid, 'the body is not valid UTF-8');
  }
}
