// The page query of the lists kept oldest first (GET /api/v1/api-tokens,
// /api/v1/accounts and /api/v1/accounts/{id}/api-tokens), as a client writes it and as
// the domain reads it: the page size, and the cursor as the list position it stands for
// (the last row's created_at and id), and back again for the next page's link. The token
// lists may also be ordered by last use (`sort=last_used_at`): their cursor then stands for
// the last row's last_used_at and id, in a form of its own, so a cursor of one order is
// never read as one of the other. The schema (schemas.ts PageParams, TokenListQuery) has
// already checked each parameter's form; what it cannot say (a well-formed cursor) is
// checked here, and anything that cannot be read exactly is refused. The audit trail's
// query (src/audit/query.ts) works the same way.
import type { FieldError } from '../errors.js';
import {
  CURSOR_ERROR,
  decodeCursor as decodeCursorText,
  encodeCursor as encodeCursorText,
  nextPageLink as linkTo,
} from '../paging.js';
import type { LastUsePosition, ListPosition } from '../storage/types.js';
import { LIST_PER_PAGE_DEFAULT, type PageParams, type TokenListQuery } from './schemas.js';

/** What a listed id may be: tokens and accounts infracat issued, and older or imported ones. */
const ID = '[A-Za-z0-9_-]{1,100}';
const POSITION = new RegExp(`^(-?(?:0|[1-9][0-9]{0,15}))\\.(${ID})$`);
/** A position by last use: `last_used.` then the time of the last use (or `never`) and the id. */
const LAST_USE_POSITION = new RegExp(`^last_used\\.(never|0|[1-9][0-9]{0,15})\\.(${ID})$`);

/** The domain's reading of a page query. */
export interface ListPage {
  /** Only rows after this position (the decoded cursor); from the start when absent. */
  after?: ListPosition | undefined;
  perPage: number;
}

/** The domain's reading of a token list ordered by last use. */
export interface LastUsePage {
  /** Only rows after this position (the decoded cursor); from the start when absent. */
  after?: LastUsePosition | undefined;
  perPage: number;
}

/** The domain's reading of a token list query: its order, and the page in that order. */
export type TokenListPage = ({ sort: 'created_at' } & ListPage) | ({ sort: 'last_used_at' } & LastUsePage);

/** One page of a list: its rows, and the position of the last one when another page follows. */
export interface Page<T, P = ListPosition> {
  items: T[];
  next: P | null;
}

/**
 * The page of `rows`, read with one more than a page (`perPage + 1`): whether another
 * page follows, without a count; `position` names the place of the page's last row.
 */
export function pageBy<T, P>(rows: T[], perPage: number, position: (last: T) => P): Page<T, P> {
  const items = rows.slice(0, perPage);
  const last = items.at(-1);
  return { items, next: rows.length > perPage && last !== undefined ? position(last) : null };
}

/** The page of `rows` in creation order (pageBy). */
export function pageOf<T extends { createdAt: number; id: string }>(rows: T[], perPage: number): Page<T> {
  return pageBy(rows, perPage, (last) => ({ createdAt: last.createdAt, id: last.id }));
}

/** The cursor of the page after `position`: only a position; the filters travel beside it. */
export function encodeCursor(position: ListPosition): string {
  return encodeCursorText(`${position.createdAt}.${position.id}`);
}

/** The position a cursor stands for, or null when it is not one this service made. */
export function decodeCursor(cursor: string): ListPosition | null {
  const m = POSITION.exec(decodeCursorText(cursor, POSITION) ?? '');
  if (m === null) return null;
  const position = { createdAt: Number(m[1]), id: m[2]! };
  // Exactly one cursor of each position: -0 or a number past exact integers is not ours.
  return Number.isSafeInteger(position.createdAt) && encodeCursor(position) === cursor ? position : null;
}

/** The cursor of the page after `position` in the order by last use. */
export function encodeLastUseCursor(position: LastUsePosition): string {
  return encodeCursorText(`last_used.${position.lastUsedAt ?? 'never'}.${position.id}`);
}

/** The position by last use a cursor stands for, or null when it is not one this service made for that order. */
export function decodeLastUseCursor(cursor: string): LastUsePosition | null {
  const m = LAST_USE_POSITION.exec(decodeCursorText(cursor, LAST_USE_POSITION) ?? '');
  if (m === null) return null;
  const position = { lastUsedAt: m[1] === 'never' ? null : Number(m[1]), id: m[2]! };
  // Exactly one cursor of each position: a number past exact integers is not ours.
  return (position.lastUsedAt === null || Number.isSafeInteger(position.lastUsedAt)) &&
    encodeLastUseCursor(position) === cursor
    ? position
    : null;
}

/** The page size a query asks for (the schema's pattern: 1-1000 in plain digits, so Number() reads it exactly). */
function perPageOf(query: PageParams): number {
  return query.per_page === undefined ? LIST_PER_PAGE_DEFAULT : Number(query.per_page);
}

/** The page query, or the problem with each parameter that cannot be read (pointers as `querystring:/name`). */
export function readPage(query: PageParams): { page: ListPage } | { errors: FieldError[] } {
  let after: ListPosition | undefined;
  if (query.cursor !== undefined) {
    const position = decodeCursor(query.cursor);
    if (position === null) return { errors: [CURSOR_ERROR] };
    after = position;
  }
  return { page: { after, perPage: perPageOf(query) } };
}

/**
 * A token list query: its order (`sort`, creation by default) and the page, whose cursor must
 * be one of that order; or the problems, as readPage's.
 */
export function readTokenPage(query: TokenListQuery): { page: TokenListPage } | { errors: FieldError[] } {
  if (query.sort !== 'last_used_at') {
    const read = readPage(query);
    return 'errors' in read ? read : { page: { sort: 'created_at', ...read.page } };
  }
  let after: LastUsePosition | undefined;
  if (query.cursor !== undefined) {
    const position = decodeLastUseCursor(query.cursor);
    if (position === null) return { errors: [CURSOR_ERROR] };
    after = position;
  }
  return { page: { sort: 'last_used_at', after, perPage: perPageOf(query) } };
}

/** The `Link` header naming the page after `next` of the list at `path`. */
export function nextPageLink(
  path: string,
  filters: Readonly<Record<string, string | undefined>>,
  perPage: number,
  next: ListPosition,
): string {
  return linkTo(path, filters, perPage, encodeCursor(next));
}

/** The `Link` header naming the page after `next` of the token list at `path` ordered by last use. */
export function nextLastUsePageLink(
  path: string,
  filters: Readonly<Record<string, string | undefined>>,
  perPage: number,
  next: LastUsePosition,
): string {
  return linkTo(path, filters, perPage, encodeLastUseCursor(next));
}
