// Account records -> the JSON the API (and `infracat accounts --json`) shows: exactly the
// fields of the Account schema (schemas.ts).
import type { AccountRecord } from '../storage/types.js';
import type { Account } from './schemas.js';

export function accountView(a: AccountRecord): Account {
  return {
    id: a.id,
    name: a.name,
    external_id: a.externalId,
    status: a.status,
    rate_limit: a.rateLimit,
    created_at: new Date(a.createdAt).toISOString(),
  };
}
