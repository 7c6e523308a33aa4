// The page query of the lists kept oldest first (GET /api/v1/api-tokens,
// /api/v1/accounts and /api/v1/accounts/{id}/api-tokens), as a client writes it and as
// the domain reads it: the page size, and the cursor as the list position it stands for
// (the last row's created_at and id), and back again for the next page's link. The
// schema (schemas.ts PageParams) has already checked each parameter's form; what it
// cannot say (a well-formed cursor) is checked here, and anything that cannot be read
// exactly is refused. The audit trail's query (src/audit/query.ts) works the same way.
import type { FieldError } from '../errors.js';
import {
  CURSOR_ERROR,
  decodeCursor as decodeCursorText,
  encodeCursor as encodeCursorText,
  nextPageLink as linkTo,
} from '../paging.js';
import type { ListPosition } from '../storage/types.js';
import { LIST_PER_PAGE_DEFAULT, type PageParams } from './schemas.js';

/** What a listed id may be: tokens and accounts infracat issued, and older or imported ones. */
const ID = '[A-Za-z0-9_-]{1,100}';
const POSITION = new RegExp(`^(-?(?:0|[1-9][0-9]{0,15}))\\.(${ID})$`);

/** The domain's reading of a page query. */
export interface ListPage {
  /** Only rows after this position (the decoded cursor); from the start when absent. */
  after?: ListPosition | undefined;
  perPage: number;
}

/** One page of a list: its rows, and the position of the last one when another page follows. */
export interface Page<T> {
  items: T[];
  next: ListPosition | null;
}

/**
 * The page of `rows`, read with one more than a page (`perPage + 1`): whether another
 * page follows, without a count.
 */
export function pageOf<T extends { createdAt: number; id: string }>(rows: T[], perPage: number): Page<T> {
  const items = rows.slice(0, perPage);
  const last = items.at(-1);
  return {
    items,
    next: rows.length > perPage && last !== undefined ? { createdAt: last.createdAt, id: last.id } : null,
  };
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

/** The page query, or the problem with each parameter that cannot be read (pointers as `querystring:/name`). */
export function readPage(query: PageParams): { page: ListPage } | { errors: FieldError[] } {
  let after: ListPosition | undefined;
  if (query.cursor !== undefined) {
    const position = decodeCursor(query.cursor);
    if (position === null) return { errors: [CURSOR_ERROR] };
    after = position;
  }
  // The schema's pattern: 1-1000 in plain digits, so Number() reads it exactly.
  return { page: { after, perPage: query.per_page === undefined ? LIST_PER_PAGE_DEFAULT : Number(query.per_page) } };
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
