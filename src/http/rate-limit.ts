// Request rate limits, in fixed windows: per token for authenticated requests, per client
// address otherwise (as addressKey() counts it: IPv6 by /64, src/http/client-key.ts). The
// quotas are the fleet's: with several instances on one database, each enforces its share
// (shareOf: the quota split among the live instances the fleet registry counts), so
// behind a balancer spreading requests evenly a client gets the quota, not N times it;
// counted in memory, no storage access per request. Windows are
// aligned to the wall clock, at an offset per key (a hash of it), so every instance's
// window for a client starts and ends at the same moment while different clients' windows
// do not all reset at once (no herd of retries at the top of each window).
// Every counted answer carries the draft-ietf-httpapi-ratelimit-headers fields (policyField
// and stateField below spell them):
//   RateLimit-Policy: "token";q=600;w=60    the fleet's quota and the window
//   RateLimit: "token";r=599;t=42           what the client can still expect across the fleet
//                                           (this instance's remaining share times the live
//                                           instances, at most q; 0 when this instance
//                                           refuses the next one), and the seconds until the
//                                           window ends
// Over the limit: 429 RATE_LIMITED with Retry-After. A revalidation costs nothing: a 304
// gives its unit back, and over the limit a GET/HEAD with If-None-Match to a route that
// declares `revalidates` is let through without one, to be answered 304 if the client's
// copy is current and refused with the 429 otherwise (the route calls refuseOverLimit()
// before any other answer; if it does not, onSend refuses anyway).
// A route opts out with `config: { rateLimit: false }`, the one exemption mechanism:
// operational routes (health, metrics, docs, console) and the forward-auth check (a
// gateway's per-request call; limit at the gateway) do. The limiter is attached to each
// route as it is declared (its config read once, not per request) and to the not-found
// handler (an unknown path costs a unit like any other request), as Fastify's own
// rate-limit plugin does; the 304 and over-limit bookkeeping only to `revalidates` routes.
//
// Not @fastify/rate-limit: its headers are the x-ratelimit-* or draft-03 ratelimit-limit/
// -remaining/-reset fields, not these structured fields with a policy name, and it has no
// way to give a 304's unit back or to let an over-limit revalidation through.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler, RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { LRUCache } from 'lru-cache';
import { countBound } from '../bounded.js';
import { AppError } from '../errors.js';
import { shareOf, type FleetView } from '../fleet/registry.js';
import { addressKey } from './client-key.js';
import type { TokenRecord } from '../storage/types.js';
import type { App } from './types.js';

/** The policies the RateLimit fields name, and whose budget each is. */
export const RATE_LIMIT_POLICIES = {
  token: 'per token, for authenticated requests',
  anonymous: 'per client address (IPv6: per /64), for anonymous requests',
} as const;
export type RateLimitPolicy = keyof typeof RATE_LIMIT_POLICIES;

export interface RateLimitOptions {
  /** Requests per window and policy (RATE_LIMIT, RATE_LIMIT_ANONYMOUS); 0 turns a policy off. */
  quotas: Record<RateLimitPolicy, number>;
  /** RATE_LIMIT_WINDOW_S. */
  windowS: number;
  /** Most windows (tokens and addresses) tracked at once; the least recently used go first. */
  maxKeys?: number;
  /** The instances sharing the quotas (the fleet registry, read on every request); absent: this one alone. */
  fleet?: FleetView;
  /** Told of each request of a token refused over the limit (its usage counts it). */
  onTokenRefused?: (token: TokenRecord) => void;
}

const ALONE: FleetView = { count: 1, rank: 0 };

/**
 * Where a key's windows start within the window length: the same for a key on every
 * instance (FNV-1a of its text, nothing per process), spread over the window across keys.
 */
export function windowOffset(key: string, windowMs: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % windowMs;
}

/** The end of the window holding `now`, for windows of `windowMs` starting at `offset` past each multiple. */
export function windowEnd(now: number, windowMs: number, offset: number): number {
  return Math.floor((now - offset) / windowMs) * windowMs + offset + windowMs;
}

/** `r=`: what a client can expect across the fleet, from what this instance has left of its share. */
export function fleetRemaining(local: number, quota: number, fleet: FleetView): number {
  return Math.min(quota, local * Math.max(1, fleet.count));
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The limiter on every route (installRateLimit); null when both quotas are 0. */
    rateLimiter: RateLimiter | null;
  }
  interface FastifyRequest {
    /** What the rate limiter took for this request; null when it did not count it. */
    rateLimit: Taken | null;
  }
  interface FastifyContextConfig {
    /** false: this route is not rate limited. */
    rateLimit?: boolean;
    /**
     * true: the handler answers a current If-None-Match with 304 from memory, and calls
     * refuseOverLimit(request) before any other answer (see the top of this file).
     */
    revalidates?: boolean;
  }
}

/** `RateLimit-Policy`: the quota of requests per window of seconds. */
export function policyField(policy: RateLimitPolicy, quota: number, windowS: number): string {
  return `"${policy}";q=${quota};w=${windowS}`;
}

/** `RateLimit`: the requests remaining and the seconds until the window resets. */
export function stateField(policy: RateLimitPolicy, remaining: number, resetS: number): string {
  return `"${policy}";r=${remaining};t=${resetS}`;
}

interface Window {
  used: number;
  resetAt: number;
  /** windowOffset(key): kept, so a new window of the key costs no hash. */
  offset: number;
}

/** What the limiter did with a request: the unit it took (to give back on a 304), or the 429 it holds back. */
interface Taken {
  key: string;
  policy: RateLimitPolicy;
  /** What remained of this instance's share after this request. */
  local: number;
  quota: number;
  resetS: number;
  /** Set when over the limit: the refusal a revalidation was spared, unless it ends in a 304. */
  held: AppError | null;
}

/**
 * For routes that declare `revalidates`: when the request came in over the rate limit,
 * throws the 429 it was spared for being a revalidation. Call it once the answer is known
 * not to be a 304, before any other answer (or header) is made.
 */
export function refuseOverLimit(request: FastifyRequest): void {
  const held = request.rateLimit?.held;
  if (held) throw held;
}

export interface RateLimiter {
  /** The limiter as a preHandler hook, for the not-found handler and routes declared by hand. */
  hook: preHandlerHookHandler;
}

/**
 * Installs the limiter on every route declared from now on (see the top of this file) and
 * returns it for the not-found handler and routes declared by hand.
 */
export function installRateLimit(app: App, options: RateLimitOptions): RateLimiter {
  const { quotas, windowS } = options;
  const windowMs = windowS * 1000;
  const fleet = options.fleet ?? ALONE;
  const onTokenRefused = options.onTokenRefused ?? (() => undefined);
  const windows = new LRUCache<string, Window>(countBound(options.maxKeys ?? 100_000));
  // The policy field is fixed per policy: built once here, not on every request.
  const policyFields: Record<RateLimitPolicy, string> = {
    token: policyField('token', quotas.token, windowS),
    anonymous: policyField('anonymous', quotas.anonymous, windowS),
  };
  app.decorateRequest('rateLimit', null);

  /** Counts a request against `key`'s window: a unit taken if `allowed`, and what is left. */
  function use(key: string, quota: number): { allowed: boolean; local: number; resetS: number } {
    const now = Date.now();
    let window = windows.get(key);
    if (window === undefined || now >= window.resetAt) {
      const offset = window?.offset ?? windowOffset(key, windowMs);
      window = { used: 0, resetAt: windowEnd(now, windowMs, offset), offset };
      windows.set(key, window);
    }
    const resetS = Math.max(1, Math.ceil((window.resetAt - now) / 1000));
    // The fleet as the last heartbeat saw it: a change mid-window changes the share, and
    // the units already used stay used.
    const share = shareOf(quota, fleet);
    const allowed = window.used < share;
    if (allowed) window.used += 1;
    return { allowed, local: Math.max(0, share - window.used), resetS };
  }

  const identify = (tokenId: string | null, ip: string): [RateLimitPolicy, string] =>
    tokenId !== null ? ['token', `t:${tokenId}`] : ['anonymous', `a:${addressKey(ip)}`];

  /** The 429 for this request, or null when it is within its budget (a unit is then taken). */
  function take(request: FastifyRequest, reply: FastifyReply, revalidates: boolean): AppError | null {
    const [policy, key] = identify(request.token?.id ?? null, request.ip);
    const quota = quotas[policy];
    if (quota === 0) return null;
    const { allowed, local, resetS } = use(key, quota);
    reply.header('ratelimit-policy', policyFields[policy]);
    reply.header('ratelimit', stateField(policy, fleetRemaining(local, quota, fleet), resetS));
    if (allowed) {
      request.rateLimit = { key, policy, local, quota, resetS, held: null };
      return null;
    }
    const detail = `rate limit of ${quota} requests per ${windowS} s reached; retry after ${resetS} s`;
    const refusal = new AppError('RATE_LIMITED', detail, { headers: { 'retry-after': String(resetS) } });
    const revalidation =
      revalidates &&
      (request.method === 'GET' || request.method === 'HEAD') &&
      request.headers['if-none-match'] !== undefined;
    if (!revalidation) {
      if (request.token !== null) onTokenRefused(request.token);
      return refusal;
    }
    request.rateLimit = { key, policy, local, quota, resetS, held: refusal };
    return null;
  }

  // Callback hooks: nothing here awaits, and these run on every counted request.
  const limit =
    (revalidates: boolean): preHandlerHookHandler =>
    (request, reply, done) =>
      done(take(request, reply, revalidates) ?? undefined);

  const settle: onSendHookHandler = (request, reply, payload, done) => {
    const took = request.rateLimit;
    if (took === null) return done(null, payload);
    if (took.held !== null) {
      // A revalidation over the limit that is not answered 304 is refused after all.
      if (reply.statusCode !== 304 && request.token !== null) onTokenRefused(request.token);
      if (reply.statusCode !== 304 && reply.statusCode !== 429) {
        // The route answered something else over the limit without refusing: fail closed.
        // (Passed from onSend, the error goes to the problem handler; this hook sees its 429.)
        const refusal = took.held;
        took.held = null;
        reply.removeHeader('etag').removeHeader('cache-control').removeHeader('last-modified');
        return done(refusal);
      }
    } else if (reply.statusCode === 304) {
      const window = windows.get(took.key);
      let local = took.local + 1;
      if (window !== undefined && window.used > 0) {
        window.used -= 1;
        local = Math.max(0, shareOf(took.quota, fleet) - window.used);
      }
      reply.header('ratelimit', stateField(took.policy, fleetRemaining(local, took.quota, fleet), took.resetS));
    }
    done(null, payload);
  };

  app.addHook('onRoute', (route) => {
    if (route.config?.rateLimit === false) return;
    const revalidates = route.config?.revalidates === true;
    route.preHandler = [...hooks(route.preHandler), limit(revalidates)];
    if (revalidates) route.onSend = [...hooks(route.onSend), settle];
  });
  return { hook: limit(false) };
}

/** A route's hooks of one kind as a list (Fastify takes one, a list, or none). */
function hooks<T>(declared: T | T[] | undefined): T[] {
  return declared === undefined ? [] : Array.isArray(declared) ? declared : [declared];
}

/**
 * The rate limits of the fleet (quotas of 0 for both policies: none), after authentication,
 * which tells a token's requests from an address's.
 */
export const rateLimiting = fp<Pick<RateLimitOptions, 'quotas' | 'windowS'>, RawServerDefault, TypeBoxTypeProvider>(
  (app, { quotas, windowS }, done) => {
    const limited = quotas.token > 0 || quotas.anonymous > 0;
    const { service } = app.infracat.tokens;
    app.decorate(
      'rateLimiter',
      limited
        ? installRateLimit(app, {
            quotas,
            windowS,
            fleet: app.infracat.fleet,
            onTokenRefused: (token) => service.recordRefusal(token, 'rate_limited'),
          })
        : null,
    );
    done();
  },
  { name: 'infracat-rate-limit', dependencies: ['infracat-services', 'infracat-auth'] },
);
