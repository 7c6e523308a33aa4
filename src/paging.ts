// What every paged list shares (the token and account lists, the audit trail): its cursor,
// opaque to clients (base64url, so nobody builds on its form) and read back only when it
// is exactly one this service made, and the Link header naming the next page.
import type { FieldError } from './errors.js';

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The cursor of a list position written as text (the position's own form is the list's). */
export function encodeCursor(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

/**
 * The text of a cursor this service made, one whose text has the list's `form`; null for
 * anything else. Each text has exactly one cursor: stray bits or padding are not ours.
 */
export function decodeCursor(cursor: string, form: RegExp): string | null {
  if (!BASE64URL.test(cursor)) return null;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  return form.test(text) && encodeCursor(text) === cursor ? text : null;
}

/** The problem of a cursor that decodeCursor() refused. */
export const CURSOR_ERROR: FieldError = {
  pointer: 'querystring:/cursor',
  detail: 'is not a cursor of this service: copy it from the Link header of the previous page',
};

/**
 * The `Link` header naming the page after this one of the list at `path`: the filters as
 * the client wrote them (read again exactly as on this page), the page size and the
 * cursor. Percent-encoded throughout, so nothing a client sent can break out of the header.
 */
export function nextPageLink(
  path: string,
  filters: Readonly<Record<string, string | undefined>>,
  perPage: number,
  cursor: string,
): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value !== undefined) params.append(name, value);
  params.append('per_page', String(perPage));
  params.append('cursor', cursor);
  return `<${path}?${params.toString()}>; rel="next"`;
}
