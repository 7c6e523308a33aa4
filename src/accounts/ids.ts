// Account ids: `acc_` + a ULID, from the one id generator (src/tokens/ids.ts).
import { OPERATOR_ACCOUNT_ID } from '../storage/migrations.js';
import { newId, ULID_PATTERN_SOURCE } from '../tokens/ids.js';

export const ACCOUNT_ID_PATTERN = new RegExp(`^acc_${ULID_PATTERN_SOURCE}$`);

/**
 * The operator account's id: the ULID of time zero, the same on every database (written
 * by migration 4, which creates the account), so code and operators know it without a
 * lookup, and it sorts before every other account.
 */
export { OPERATOR_ACCOUNT_ID };

export function newAccountId(now: number): string {
  return newId('acc', now);
}

export function isOperatorAccount(id: string): boolean {
  return id === OPERATOR_ACCOUNT_ID;
}
