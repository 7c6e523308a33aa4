// Token records -> the JSON the API (and `infracat tokens --json`) shows. The shapes are
// the response schemas' (schemas.ts); here only how each field is made from a record.
import type { TokenRecord, UsageCell } from '../storage/types.js';
import type { CreatedToken, CurrentTokenView, RotatedToken, TokenView, UsageBucketView } from './schemas.js';
import { usageBucket } from './usage.js';
import type { IssuedToken } from './service.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function conditionViews(t: TokenRecord) {
  return { allowed_cidrs: t.allowedCidrs, not_before: iso(t.notBefore), enabled: t.enabled };
}

export function tokenView(t: TokenRecord): TokenView {
  return {
    id: t.id,
    name: t.name,
    scopes: t.scopes,
    created_at: new Date(t.createdAt).toISOString(),
    last_used_at: iso(t.lastUsedAt),
    last_used_ip: t.lastUsedIp,
    expires_at: iso(t.expiresAt),
    ...conditionViews(t),
  };
}

export function usageView(cell: UsageCell): UsageBucketView {
  const bucket = usageBucket(cell);
  return {
    hour: new Date(bucket.hour).toISOString(),
    valid: bucket.valid,
    refused: bucket.refused,
    refused_by_reason: bucket.refusedByReason,
  };
}

export function currentView(t: TokenRecord): CurrentTokenView {
  return { ...tokenView(t), account_id: t.accountId };
}

export function createdView({ token, secret }: IssuedToken): CreatedToken {
  return {
    id: token.id,
    name: token.name,
    token: secret,
    scopes: token.scopes,
    created_at: new Date(token.createdAt).toISOString(),
    expires_at: iso(token.expiresAt),
    ...conditionViews(token),
  };
}

export function rotatedView(issued: IssuedToken): RotatedToken {
  return { ...createdView(issued), previous_secret_expires_at: iso(issued.token.previousExpiresAt) };
}
