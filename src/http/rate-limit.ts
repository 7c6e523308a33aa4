// Request rate limits, in fixed windows: per token and per account (all its tokens
// together) for authenticated requests, per client address otherwise (as addressKey()
// counts it: IPv6 by /64, src/http/client-key.ts). The limits are the fleet's: with
// several instances on one database, each counts in memory and shares its counts through
// storage every RATE_LIMIT_SYNC_MS (src/fleet/counts.ts), so a client gets its limit
// whether a balancer keeps it on one instance, spreads it over all of them or moves it;
// no request waits for storage. Alone, an instance counts exactly and writes nothing;
// while storage fails, each instance enforces its share of each limit (the quota split
// among the live instances). Windows are aligned to the wall clock, at an offset per key
// (windowOffset), so every instance's window for a client starts and ends at the same
// moment while different clients' windows do not all reset at once.
// Every counted answer carries the draft-ietf-httpapi-ratelimit-headers fields (policyField
// and stateField below spell them), one entry per policy the request was counted against:
//   RateLimit-Policy: "token";q=600;w=60, "account";q=6000;w=60
//                                           the fleet's quotas and the window
//   RateLimit: "token";r=599;t=42, "account";r=5990;t=17
//                                           what the client can still expect across the
//                                           fleet (as this instance last learnt it; 0 when
//                                           this instance refuses the next one), and the
//                                           seconds until the window ends
// Over a limit: 429 with Retry-After, RATE_LIMITED (the token's or the address's) or
// ACCOUNT_RATE_LIMITED (the account's: its `rate_limit`, or RATE_LIMIT_ACCOUNT); a request
// refused by either takes no unit from the other. A revalidation costs nothing: a 304
// gives its units back, and over the limit a GET/HEAD with If-None-Match to a route that
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
// -remaining/-reset fields, not these structured fields with a policy name, it has no way
// to give a 304's unit back or to let an over-limit revalidation through, and its shared
// store (Redis) is a component infracat does not otherwise need.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler, RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../errors.js';
import { FleetCounts, type Verdict } from '../fleet/counts.js';
import type { TokenRecord } from '../storage/types.js';
import { addressKey } from './client-key.js';
import type { App } from './types.js';

export { windowEnd, windowOffset } from '../fleet/counts.js';

/** The policies the RateLimit fields name, and whose budget each is. */
export const RATE_LIMIT_POLICIES = {
  token: 'per token, for authenticated requests',
  account: "per account, for all its tokens' requests together (an account's `rate_limit` replaces the default)",
  anonymous: 'per client address (IPv6: per /64), for anonymous requests',
} as const;
export type RateLimitPolicy = keyof typeof RATE_LIMIT_POLICIES;

export interface RateLimitOptions {
  /**
   * Requests per window and policy (RATE_LIMIT, RATE_LIMIT_ACCOUNT or its default,
   * RATE_LIMIT_ANONYMOUS); 0 turns a policy off. An account's own `rate_limit` replaces
   * the account quota for its tokens.
   */
  quotas: Record<RateLimitPolicy, number>;
  /** RATE_LIMIT_WINDOW_S. */
  windowS: number;
  /** The counts, shared with the fleet or not (src/fleet/counts.ts); absent: this instance's alone. */
  counts?: FleetCounts;
  /** Without `counts`: most keys tracked at once (RATE_LIMIT_MAX_KEYS); the least recently used go first. */
  maxKeys?: number;
  /** Told of each request of a token refused over a limit (its usage counts it). */
  onTokenRefused?: (token: TokenRecord) => void;
}

/** Most keys (tokens, accounts, addresses) a limiter tracks at once when not given its counts. */
export const RATE_LIMIT_MAX_KEYS = 100_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** The limiter on every route (installRateLimit); null when every quota is 0. */
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

/** One policy a request was counted against. */
interface Judged {
  policy: RateLimitPolicy;
  quota: number;
  verdict: Verdict;
}

/** What the limiter did with a request: the units it took (to give back on a 304), or the 429 it holds back. */
interface Taken {
  judged: Judged[];
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

const CODES: Record<RateLimitPolicy, 'RATE_LIMITED' | 'ACCOUNT_RATE_LIMITED'> = {
  token: 'RATE_LIMITED',
  account: 'ACCOUNT_RATE_LIMITED',
  anonymous: 'RATE_LIMITED',
};

const WHOSE: Record<RateLimitPolicy, string> = {
  token: 'rate limit',
  account: "the account's rate limit (all its tokens together)",
  anonymous: 'rate limit',
};

/**
 * Installs the limiter on every route declared from now on (see the top of this file) and
 * returns it for the not-found handler and routes declared by hand.
 */
export function installRateLimit(app: App, options: RateLimitOptions): RateLimiter {
  const { quotas, windowS } = options;
  const onTokenRefused = options.onTokenRefused ?? (() => undefined);
  const counts =
    options.counts ??
    new FleetCounts({
      store: null,
      fleet: { count: 1, rank: 0 },
      windowMs: windowS * 1000,
      maxKeys: options.maxKeys ?? RATE_LIMIT_MAX_KEYS,
    });
  // The fixed policy fields are built once here, not on every request (an account's quota varies).
  const fixedFields = {
    token: policyField('token', quotas.token, windowS),
    anonymous: policyField('anonymous', quotas.anonymous, windowS),
  };
  app.decorateRequest('rateLimit', null);

  const fieldOf = ({ policy, quota }: Judged): string =>
    policy === 'account' ? policyField('account', quota, windowS) : fixedFields[policy];

  /** The policies this request counts against, each judged (no unit taken yet). */
  function judge(request: FastifyRequest): Judged[] {
    const token = request.token;
    const judged: Judged[] = [];
    if (token === null) {
      if (quotas.anonymous > 0)
        judged.push({
          policy: 'anonymous',
          quota: quotas.anonymous,
          verdict: counts.judge(`a:${addressKey(request.ip)}`, quotas.anonymous),
        });
      return judged;
    }
    if (quotas.token > 0)
      judged.push({ policy: 'token', quota: quotas.token, verdict: counts.judge(`t:${token.id}`, quotas.token) });
    const accountQuota = token.accountRateLimit ?? quotas.account;
    if (accountQuota > 0)
      judged.push({
        policy: 'account',
        quota: accountQuota,
        verdict: counts.judge(`c:${token.accountId}`, accountQuota),
      });
    return judged;
  }

  function setHeaders(reply: FastifyReply, judged: readonly Judged[]): void {
    reply.header('ratelimit-policy', judged.map(fieldOf).join(', '));
    reply.header(
      'ratelimit',
      judged.map((j) => stateField(j.policy, j.verdict.remaining, j.verdict.resetS)).join(', '),
    );
  }

  /** The 429 for this request, or null when it is within its budgets (a unit is then taken from each). */
  function take(request: FastifyRequest, reply: FastifyReply, revalidates: boolean): AppError | null {
    const judged = judge(request);
    if (judged.length === 0) return null;
    const refusing = judged.filter((j) => !j.verdict.allowed);
    // Refused by one policy, the request takes no unit from the others: what they said remains.
    if (refusing.length > 0)
      for (const j of judged)
        if (j.verdict.allowed) j.verdict = { ...j.verdict, remaining: Math.min(j.quota, j.verdict.remaining + 1) };
    setHeaders(reply, judged);
    if (refusing.length === 0) {
      for (const j of judged) counts.take(j.verdict.counter);
      request.rateLimit = { judged, held: null };
      return null;
    }
    const first = refusing[0]!;
    const resetS = Math.max(...refusing.map((j) => j.verdict.resetS));
    const detail =
      `${WHOSE[first.policy]} of ${first.quota} requests per ${windowS} s reached; ` + `retry after ${resetS} s`;
    const refusal = new AppError(CODES[first.policy], detail, { headers: { 'retry-after': String(resetS) } });
    const revalidation =
      revalidates &&
      (request.method === 'GET' || request.method === 'HEAD') &&
      request.headers['if-none-match'] !== undefined;
    if (!revalidation) {
      if (request.token !== null) onTokenRefused(request.token);
      return refusal;
    }
    request.rateLimit = { judged, held: refusal };
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
      for (const j of took.judged) {
        counts.giveBack(j.verdict.counter);
        j.verdict = { ...j.verdict, remaining: Math.min(j.quota, j.verdict.remaining + 1) };
      }
      reply.header(
        'ratelimit',
        took.judged.map((j) => stateField(j.policy, j.verdict.remaining, j.verdict.resetS)).join(', '),
      );
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
 * The rate limits of the fleet (quotas of 0 for every policy: none), after authentication,
 * which tells a token's requests from an address's. Every quota 0 turns rate limiting off,
 * accounts' own `rate_limit` included.
 */
export const rateLimiting = fp<Pick<RateLimitOptions, 'quotas' | 'windowS'>, RawServerDefault, TypeBoxTypeProvider>(
  (app, { quotas, windowS }, done) => {
    const limited = quotas.token > 0 || quotas.anonymous > 0 || quotas.account > 0;
    app.decorate(
      'rateLimiter',
      limited
        ? installRateLimit(app, {
            quotas,
            windowS,
            counts: app.infracat.limits,
            onTokenRefused: (token) => app.infracat.tokens.service.recordRefusal(token, 'rate_limited'),
          })
        : null,
    );
    done();
  },
  { name: 'infracat-rate-limit', dependencies: ['infracat-services', 'infracat-auth'] },
);
