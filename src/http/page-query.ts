// The page query of the lists kept oldest first (tokens, accounts, an account's tokens),
// read for a route: the domain's ListPage, or a 400 for the client.
import { AppError } from '../errors.js';
import { readPage, type ListPage } from '../tokens/query.js';
import type { PageParams } from '../tokens/schemas.js';

/** The page a list query asks for, or 400 INVALID_QUERY naming what cannot be read (as the audit trail's). */
export function readPageQuery(query: PageParams): ListPage {
  const read = readPage(query);
  if ('errors' in read) {
    const names = [...new Set(read.errors.map((e) => e.pointer.replace('querystring:/', '')))].join(', ');
    throw new AppError('INVALID_QUERY', `invalid query parameter ${names}`, { errors: read.errors });
  }
  return read.page;
}
