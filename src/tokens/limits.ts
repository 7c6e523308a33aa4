// The bounds of a token's fields and of an account's tokens, each declared once. The wire
// shapes (schemas.ts, src/accounts/schemas.ts), the rules that check a request (rules.ts)
// and the configuration's defaults (src/config.ts) all read them here, so none of those
// modules depends on another for a number.

/** Longest token (and account) name, in characters. */
export const NAME_MAX = 100;

/** The longest range one usage query may ask for, and the default one (the last week). */
export const USAGE_SPAN_MAX_DAYS = 90;
export const USAGE_SPAN_DEFAULT_DAYS = 7;

/** Longest grace period of a rotation: a day (GitHub's and Unkey's rotations offer no more). */
export const GRACE_MAX_S = 86_400;

/** TOKEN_MAX_STORED when unset, per live token allowed: room for tokens to expire and stay listed. */
export const STORED_PER_LIVE = 10;

/** The bound on one account's stored tokens: TOKEN_MAX_STORED, or STORED_PER_LIVE times TOKEN_MAX_LIVE. */
export function maxStoredTokens(limits: { tokenMaxStored: number | null; tokenMaxLive: number }): number {
  return limits.tokenMaxStored ?? STORED_PER_LIVE * limits.tokenMaxLive;
}
