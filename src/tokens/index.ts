// Wires the token domain from configuration; used by the HTTP app and the CLI alike.
import type { AuditSink } from '../audit/events.js';
import { maxStoredTokens, type Config } from '../config.js';
import type { Store } from '../storage/types.js';
import { VerificationCache } from './cache.js';
import { LastUsedTracker } from './last-used.js';
import { ScopeRegistry } from './scopes.js';
import { TokenService } from './service.js';

export interface TokenDomain {
  service: TokenService;
  cache: VerificationCache;
  lastUsed: LastUsedTracker;
}

export function createTokenDomain(
  config: Pick<
    Config,
    | 'tokenPrefix'
    | 'tokenMaxLive'
    | 'tokenMaxStored'
    | 'tokenMaxLifetimeDays'
    | 'tokenExpiredRetentionDays'
    | 'tokenCacheTtlMs'
    | 'tokenCacheMax'
    | 'lastUsedFlushMs'
    | 'scopeResources'
  >,
  store: Store,
  onFlushError?: (err: unknown) => void,
  now?: () => number,
  audit?: AuditSink,
): TokenDomain {
  // Read through store.tokens at each call (not a bound method): tests wrap findByHash to hold a read.
  const read = (hash: string) => store.tokens.findByHash(hash);
  // An injected clock (tests) drives the cache's TTL too, as it drives token expiry.
  const cache = new VerificationCache(config.tokenCacheMax, config.tokenCacheTtlMs, read, now);
  const lastUsed = new LastUsedTracker(store.tokens, {
    intervalMs: config.lastUsedFlushMs,
    ...(onFlushError ? { onError: onFlushError } : {}),
  });
  const service = new TokenService(store.tokens, {
    prefix: config.tokenPrefix,
    registry: new ScopeRegistry(config.scopeResources),
    maxLive: config.tokenMaxLive,
    maxStored: maxStoredTokens(config),
    maxLifetimeMs: config.tokenMaxLifetimeDays * 86_400_000,
    expiredRetentionMs: config.tokenExpiredRetentionDays * 86_400_000,
    cache,
    tracker: lastUsed,
    ...(now !== undefined ? { now } : {}),
    ...(audit !== undefined ? { audit } : {}),
  });
  return { service, cache, lastUsed };
}
