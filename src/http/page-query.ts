// The page query of the lists kept oldest first (tokens, accounts, an account's tokens),
// read for a route: the domain's ListPage (a token list's TokenListPage, with its order),
// or a 400 for the client.
import { AppError, type FieldError } from '../errors.js';
import { readPage, readTokenPage, type ListPage, type TokenListPage } from '../tokens/query.js';
import type { PageParams, TokenListQuery } from '../tokens/schemas.js';

/** What a read gave, or 400 INVALID_QUERY naming what cannot be read (as the audit trail's). */
function orRefuse<T>(read: { page: T } | { errors: FieldError[] }): T {
  if ('errors' in read) {
    const names = [...new Set(read.errors.map((e) => e.pointer.replace('querystring:/', '')))].join(', ');
    throw new AppError('INVALID_QUERY', `invalid query parameter ${names}`, { errors: read.errors });
  }
  return read.page;
}

/** The page a list query asks for, or 400 INVALID_QUERY. */
export function readPageQuery(query: PageParams): ListPage {
  return orRefuse(readPage(query));
}

/** The order and page a token list query asks for, or 400 INVALID_QUERY (a cursor of the other order too). */
export function readTokenListQuery(query: TokenListQuery): TokenListPage {
  return orRefuse(readTokenPage(query));
}
