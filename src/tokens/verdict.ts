// What a found token's secret is worth now, before the client address is judged: the one
// rule the service applies on every verification and `infracat tokens check` reports.
import type { TokenRecord, TokenWithAccount } from '../storage/types.js';

/**
 * Which of a token's secrets was presented: its current one, or the one it had before its
 * last rotation, still in its grace period. A previous secret reads, but makes no change to
 * tokens, accounts or the catalog (src/http/auth.ts).
 */
export type SecretKind = 'current' | 'previous';

/** Why a found token's secret is refused whatever address presents it. */
export type TokenRefusal = 'unknown' | 'suspended' | 'expired' | 'disabled' | 'not_yet_valid';

export type Verdict = { ok: true; secret: SecretKind } | { ok: false; reason: TokenRefusal };

/** Whether the token had expired at `now`. */
export function isExpired(token: TokenRecord, now: number): boolean {
  return token.expiresAt !== null && token.expiresAt <= now;
}

/** Whether the token's previous (rotated-out) secret is still in its grace period at `now`. */
export function inGrace(token: TokenRecord, now: number): boolean {
  return token.previousExpiresAt !== null && token.previousExpiresAt > now;
}

/**
 * A previous (rotated-out) secret counts only within its grace period (after it, it is as
 * unknown as any other old secret); then the account's status, the token's expiry, and its
 * conditions enabled and not_before. allowed_cidrs needs the client address: the caller
 * judges it after this.
 */
export function verdictOf(token: TokenWithAccount, hash: string, now: number): Verdict {
  const current = token.secretHash === hash;
  if (!current && !inGrace(token, now)) return { ok: false, reason: 'unknown' };
  if (token.accountStatus !== 'active') return { ok: false, reason: 'suspended' };
  if (isExpired(token, now)) return { ok: false, reason: 'expired' };
  if (!token.enabled) return { ok: false, reason: 'disabled' };
  if (token.notBefore !== null && now < token.notBefore) return { ok: false, reason: 'not_yet_valid' };
  return { ok: true, secret: current ? 'current' : 'previous' };
}
