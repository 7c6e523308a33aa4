// Wires the token domain from plain settings (the configuration's values, which the HTTP
// app and the CLI pass as they are); used by both alike.
import type { AuditSink } from '../audit/events.js';
import type { Store } from '../storage/types.js';
import { VerificationCache } from './cache.js';
import { LastUsedTracker } from './last-used.js';
import { maxStoredTokens } from './limits.js';
import { ScopeRegistry } from './scopes.js';
import { TokenService } from './service.js';
import { UsageTracker } from './usage.js';

export interface TokenDomain {
  service: TokenService;
  cache: VerificationCache;
  lastUsed: LastUsedTracker;
  usage: UsageTracker;
}

/** What the token domain is made with; each field is the setting of the same name (src/config.ts). */
export interface TokenSettings {
  tokenPrefix: string;
  tokenMaxLive: number;
  /** null: the default bound (limits.ts maxStoredTokens). */
  tokenMaxStored: number | null;
  tokenMaxLifetimeDays: number;
  tokenExpiredRetentionDays: number;
  tokenUsageRetentionDays: number;
  tokenCacheTtlMs: number;
  tokenCacheMax: number;
  lastUsedFlushMs: number;
  scopeResources: readonly string[];
}

export function createTokenDomain(
  settings: TokenSettings,
  store: Store,
  onFlushError?: (err: unknown) => void,
  now?: () => number,
  audit?: AuditSink,
): TokenDomain {
  // Read through store.tokens at each call (not a bound method): tests wrap findByHash to hold a read.
  const read = (hash: string) => store.tokens.findByHash(hash);
  // An injected clock (tests) drives the cache's TTL too, as it drives token expiry.
  const cache = new VerificationCache(settings.tokenCacheMax, settings.tokenCacheTtlMs, read, now);
  const lastUsed = new LastUsedTracker(store.tokens, {
    intervalMs: settings.lastUsedFlushMs,
    ...(onFlushError ? { onError: onFlushError } : {}),
  });
  // Counted uses are flushed with last_used_at's cadence.
  const usage = new UsageTracker(store.tokens, {
    intervalMs: settings.lastUsedFlushMs,
    ...(onFlushError ? { onError: onFlushError } : {}),
  });
  const service = new TokenService(store.tokens, {
    prefix: settings.tokenPrefix,
    registry: new ScopeRegistry(settings.scopeResources),
    maxLive: settings.tokenMaxLive,
    maxStored: maxStoredTokens(settings),
    maxLifetimeMs: settings.tokenMaxLifetimeDays * 86_400_000,
    expiredRetentionMs: settings.tokenExpiredRetentionDays * 86_400_000,
    usageRetentionMs: settings.tokenUsageRetentionDays * 86_400_000,
    cache,
    tracker: lastUsed,
    usage,
    ...(now !== undefined ? { now } : {}),
    ...(audit !== undefined ? { audit } : {}),
  });
  return { service, cache, lastUsed, usage };
}
