// Tables as older schemas hold them, for seeding a database at an earlier version with
// insertRows() (test/helpers/raw-sql.ts): only the columns that version had.
import { API_TOKENS } from '../../src/storage/tables.js';
import type { TokenRecord } from '../../src/storage/types.js';

/** api_tokens before migration 14 (the token conditions): its last three columns are newer. */
export const TOKENS_BEFORE_CONDITIONS = {
  name: API_TOKENS.name,
  columns: API_TOKENS.columns.replace(', allowed_cidrs, not_before, enabled', ''),
  placeholders: API_TOKENS.placeholders.split(', ').slice(3).join(', '),
  params: (t: TokenRecord) => API_TOKENS.params(t).slice(0, -3),
};
