// The closed list of reasons a use of a token is counted as refused (token_usage has a
// column per reason, the usage endpoint a key per reason). Only refusals of a token that
// was found are counted: a secret of no token (malformed, unknown) has nothing to count
// against. Reasons decided by the verification itself (src/tokens/service.ts judge):
// expired, not_yet_valid, disabled, address, suspended. Decided after it, of a request
// whose token was verified: scope (src/http/auth.ts) and rate_limited (src/http/rate-limit.ts).
export const USAGE_REASONS = [
  'expired',
  'not_yet_valid',
  'disabled',
  'address',
  'scope',
  'rate_limited',
  'suspended',
] as const;
export type UsageReason = (typeof USAGE_REASONS)[number];

/** The reasons refused after the token was verified: such a request is also among the verified ones. */
export const AFTER_VERIFICATION: readonly UsageReason[] = ['scope', 'rate_limited'];

/** What one use is counted as: a verification that accepted the token, or a refusal by reason. */
export type UsageOutcome = 'verified' | UsageReason;

/** The outcomes in the order of a usage cell's counts (and of token_usage's count columns). */
export const USAGE_OUTCOMES: readonly UsageOutcome[] = ['verified', ...USAGE_REASONS];

const REASON_SET: ReadonlySet<string> = new Set(USAGE_REASONS);

export function isUsageReason(reason: string): reason is UsageReason {
  return REASON_SET.has(reason);
}
