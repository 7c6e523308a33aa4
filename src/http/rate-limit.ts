// Request rate limits, per instance, in fixed windows: per token for authenticated
// requests, per client address otherwise. Every counted answer carries the
// draft-ietf-httpapi-ratelimit-headers fields:
//   RateLimit-Policy: "token";q=600;w=60
//   RateLimit: "token";r=599;t=42
// Over the limit: 429 RATE_LIMITED with Retry-After. A revalidation costs nothing: a 304
// gives its unit back, and over the limit a GET/HEAD with If-None-Match to a route that
// declares `revalidates` is let through without one, to be answered 304 if the client's
// copy is current and refused with the 429 otherwise (the route calls refuseOverLimit()
// before any other answer; if it does not, onSend refuses anyway). Operational routes
// (health, metrics, docs) and the forward-auth check (a gateway's per-request call; limit
// at the gateway) are exempt.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { App } from './types.js';

export interface RateLimitOptions {
  perToken: number;
  perAddress: number;
  windowMs: number;
  maxKeys?: number;
  now?: () => number;
}

interface Window {
  used: number;
  resetAt: number;
}

declare module 'fastify' {
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

const EXEMPT_PREFIXES = ['/docs', '/api/v1/auth/check'];
const COUNTED = Symbol('rateLimitCounted');
/** The 429 held back while an over-limit revalidation runs. */
const HELD = Symbol('rateLimitHeld');

type Marked = Record<symbol, unknown>;

/**
 * For routes that declare `revalidates`: when the request came in over the rate limit,
 * throws the 429 it was spared for being a revalidation. Call it once the answer is known
 * not to be a 304, before any other answer (or header) is made.
 */
export function refuseOverLimit(request: FastifyRequest): void {
  const held = (request as unknown as Marked)[HELD];
  if (held instanceof AppError) throw held;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  constructor(private readonly options: RateLimitOptions) {}

  /** Takes one unit; returns what the headers should say and whether it was allowed. */
  take(key: string, quota: number, now: number): { allowed: boolean; remaining: number; resetS: number } {
    let w = this.windows.get(key);
    if (w === undefined || now >= w.resetAt) {
      w = { used: 0, resetAt: now + this.options.windowMs };
      this.windows.delete(key);
      this.windows.set(key, w);
      const max = this.options.maxKeys ?? 100_000;
      while (this.windows.size > max) {
        const oldest = this.windows.keys().next().value;
        if (oldest === undefined) break;
        this.windows.delete(oldest);
      }
    }
    const resetS = Math.max(1, Math.ceil((w.resetAt - now) / 1000));
    if (w.used >= quota) return { allowed: false, remaining: 0, resetS };
    w.used += 1;
    return { allowed: true, remaining: quota - w.used, resetS };
  }

  giveBack(key: string): void {
    const w = this.windows.get(key);
    if (w !== undefined && w.used > 0) w.used -= 1;
  }
}

export function installRateLimit(app: App, options: RateLimitOptions): RateLimiter {
  const limiter = new RateLimiter(options);
  const now = options.now ?? Date.now;
  const windowS = Math.round(options.windowMs / 1000);

  function keyOf(request: FastifyRequest): { key: string; quota: number; policy: string } {
    return request.token !== null
      ? { key: `t:${request.token.id}`, quota: options.perToken, policy: 'token' }
      : { key: `a:${request.ip}`, quota: options.perAddress, policy: 'anonymous' };
  }

  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config?.rateLimit === false) return;
    const url = request.routeOptions.url ?? request.url;
    if (EXEMPT_PREFIXES.some((p) => url.startsWith(p))) return;
    const { key, quota, policy } = keyOf(request);
    if (quota === 0) return;
    const r = limiter.take(key, quota, now());
    reply.header('ratelimit-policy', `"${policy}";q=${quota};w=${windowS}`);
    reply.header('ratelimit', `"${policy}";r=${r.remaining};t=${r.resetS}`);
    if (r.allowed) {
      (request as unknown as Marked)[COUNTED] = key;
      return;
    }
    const refusal = new AppError('RATE_LIMITED', `rate limit of ${quota} requests per ${windowS} s reached; retry after ${r.resetS} s`, {
      headers: { 'retry-after': String(r.resetS) },
    });
    const revalidation = request.routeOptions.config?.revalidates === true &&
      (request.method === 'GET' || request.method === 'HEAD') && request.headers['if-none-match'] !== undefined;
    if (!revalidation) throw refusal;
    (request as unknown as Marked)[HELD] = refusal;
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const marked = request as unknown as Marked;
    const held = marked[HELD];
    if (held instanceof AppError && reply.statusCode !== 304 && reply.statusCode !== 429) {
      // The route answered something else over the limit without refusing: fail closed.
      // (Thrown from onSend, the error goes to the problem handler; this hook sees its 429.)
      marked[HELD] = undefined;
      reply.removeHeader('etag').removeHeader('cache-control').removeHeader('last-modified');
      throw held;
    }
    const key = marked[COUNTED];
    if (typeof key === 'string' && reply.statusCode === 304) {
      limiter.giveBack(key);
      const header = reply.getHeader('ratelimit');
      if (typeof header === 'string') reply.header('ratelimit', header.replace(/;r=(\d+)/, (_m, r: string) => `;r=${Number(r) + 1}`));
    }
    return payload;
  });
  return limiter;
}
