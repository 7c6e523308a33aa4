// Tables as older schemas hold them, for seeding a database at an earlier version with
// insertRows() (test/helpers/raw-sql.ts): only the columns that version had.
import { API_TOKENS } from '../../src/storage/tables.js';
import type { TokenRecord } from '../../src/storage/types.js';

/** The api_tokens columns newer than migration 13: the token conditions (14) and last_used_ip (15). */
const NEWER = new Set(['allowed_cidrs', 'not_before', 'enabled', 'last_used_ip']);
const KEPT = API_TOKENS.columns.split(', ').map((c) => !NEWER.has(c));

/** api_tokens before migration 14 (the token conditions) and 15 (last_used_ip). */
export const TOKENS_BEFORE_CONDITIONS = {
  name: API_TOKENS.name,
  columns: API_TOKENS.columns
    .split(', ')
    .filter((_, i) => KEPT[i])
    .join(', '),
  placeholders: KEPT.filter(Boolean)
    .map(() => '?')
    .join(', '),
  params: (t: TokenRecord) => API_TOKENS.params(t).filter((_, i) => KEPT[i]),
};
