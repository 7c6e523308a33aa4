// The fast lane: the hottest reads (the catalog lists, the forward-auth check) answered
// straight on node:http, in front of Fastify, when a request is the plain case those
// routes answer most.
//
// Why: serving these bytes costs Node about 19 us of CPU; Fastify's request pipeline (its
// request and reply objects, router, hook runners, reply.send) adds about 11 us before any
// of our work, and the per-request work the design requires (request id, security headers,
// authentication, rate limit, metrics, access line) ran as five hooks on top: about 62 us
// in all (BENCHMARKS.md, issue #20). Here the same work runs in one pass, with each route's
// headers prepared once per catalog version or cached token.
//
// The lane never decides anything the full path would decide differently: a route gives it
// an answer only for the request it can answer in full, and everything else (another
// method or path spelling, a query string the route does not take, a conditional request,
// a body, an Expect header, a token not in the verification cache or not valid as sent, a
// request over its rate limit, a shutdown, debug logging) goes to Fastify untouched, with
// nothing counted here. The pieces it runs are the full path's own: protocolProblem(),
// genReqId's request id, the authenticator's memory half, the rate limiter's charge, the
// metrics recorder and the shaped access line. test/http/fast-lane.test.ts holds every
// answer here to the full path's, header for header, and every refusal to the full path.
//
// Only a server this app listens with takes the lane: app.inject() always goes the full way.
import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { TokenWithAccount } from '../storage/types.js';
import type { Auth } from './auth.js';
import type { RecordTraffic } from './metrics.js';
import { protocolProblem } from './protocol.js';
import type { RateLimiter } from './rate-limit.js';
import type { AccessLog } from './request-log.js';
import { SECURITY_HEADERS } from './security.js';

/** A route's plain answer: status 200, its own headers (name, value, ...) and its bytes. */
export interface LaneAnswer {
  headers: readonly string[];
  body: Buffer;
}

export interface LaneRoute {
  /** The route's URL as Fastify knows it (the metrics label). */
  route: string;
  /** Whether the route is rate limited (its Fastify config says the same). */
  rateLimited: boolean;
  /**
   * What a request with this query string (after `?`, '' for none) needs: the scopes a
   * token must hold, null when anonymous is allowed (a token presented must still be
   * valid), undefined to leave the request to the full path.
   */
  required(query: string): readonly string[] | null | undefined;
  /** The answer for the request's token (null: anonymous), or undefined for the full path. */
  answer(token: TokenWithAccount | null): LaneAnswer | undefined;
}

export interface LaneDeps {
  /** True once the app is closing: the full path answers the 503. */
  closing: () => boolean;
  auth: Pick<Auth, 'peekFromMemory' | 'useValid'>;
  /** Undefined when rate limiting is off. */
  limiter: Pick<RateLimiter, 'charge'> | undefined;
  /** request.ip as Fastify reads it (src/http/trust-proxy.ts). */
  clientAddress: (req: IncomingMessage) => string | undefined;
  /** request.id as Fastify's genReqId makes it (src/logging.ts requestIdOf()). */
  requestId: (req: IncomingMessage) => string;
  record: RecordTraffic;
  access: AccessLog;
  log: Logger;
}

/** Fastify's server options the server it builds would take (lib/server.js). */
interface ServerOptions {
  http?: http.ServerOptions;
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
  maxRequestsPerSocket?: number;
}

// The headers every answer starts with (src/app.ts sets them first on the full path).
const SECURITY = Object.entries(SECURITY_HEADERS).flat();
// Where a header template (below) takes each request's own values.
const ID = SECURITY.length + 1;
const POLICY = ID + 2;
const STATE = ID + 4;

/**
 * An answer's headers in writeHead()'s order, name and value, with the request id (and the
 * rate limit's policy and state when `limited`) left for each request to fill in: made once
 * per answer, so a request writes three values instead of building a list of thirty.
 */
function headerTemplate(answer: LaneAnswer, limited: boolean): string[] {
  return [
    ...SECURITY,
    'x-request-id',
    '',
    ...(limited ? ['ratelimit-policy', '', 'ratelimit', ''] : []),
    ...answer.headers,
    'content-length',
    String(answer.body.length),
  ];
}

interface LaneEntry {
  route: LaneRoute;
  /** The route's 200s counted, its metrics labels found once (at its first answer). */
  observe?: (ms: number) => void;
}

export class FastLane {
  readonly #routes = new Map<string, LaneEntry>();
  // Each answer's header templates, without and with the rate limit's headers. One list is
  // filled and written per request: writeHead() reads it at once and keeps nothing of it.
  readonly #templates = new WeakMap<LaneAnswer, [string[] | undefined, string[] | undefined]>();
  #deps: LaneDeps | undefined;
  /** Requests answered here. */
  served = 0;

  /**
   * Fastify's `serverFactory`: the HTTP/1.1 server Fastify would build, whose requests
   * meet the lane first.
   */
  readonly serverFactory = (handler: RequestListener, options: ServerOptions): http.Server => {
    const server = http.createServer(options.http ?? {}, (req, res) => {
      if (!this.#serve(req, res)) handler(req, res);
    });
    // As Fastify sets them on a server of its own.
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    server.setTimeout(options.connectionTimeout ?? 0);
    if ((options.maxRequestsPerSocket ?? 0) > 0) server.maxRequestsPerSocket = options.maxRequestsPerSocket!;
    return server;
  };

  /** Adds a route's plain GET at exactly `path` (no other spelling). */
  route(path: string, route: LaneRoute): void {
    this.#routes.set(path, { route });
  }

  /** Opens the lane (until then, and if never, every request goes the full way). */
  open(deps: LaneDeps): void {
    this.#deps = deps;
  }

  /** Answers `req` and returns true, or returns false having done nothing. */
  #serve(req: IncomingMessage, res: ServerResponse): boolean {
    const deps = this.#deps;
    if (deps === undefined || req.method !== 'GET') return false;
    const url = req.url!;
    const q = url.indexOf('?');
    const entry = this.#routes.get(q < 0 ? url : url.slice(0, q));
    if (entry === undefined) return false;
    const { route } = entry;
    const start = performance.now();
    const h = req.headers;
    if (
      deps.closing() ||
      // At debug level the full path also logs each request as it comes in.
      deps.log.isLevelEnabled('debug') ||
      h['if-none-match'] !== undefined ||
      h['content-length'] !== undefined ||
      h['transfer-encoding'] !== undefined ||
      h.expect !== undefined ||
      protocolProblem(req) !== null
    )
      return false;
    let token: TokenWithAccount | null | undefined;
    let answer: LaneAnswer | undefined;
    let address: string | undefined;
    try {
      const required = route.required(q < 0 ? '' : url.slice(q + 1));
      if (required === undefined) return false;
      token = deps.auth.peekFromMemory(req, required);
      if (token === undefined) return false;
      answer = route.answer(token);
      address = deps.clientAddress(req);
    } catch (err) {
      // A fault here is the full path's to answer (and log as it logs any request's).
      deps.log.error({ err }, 'fast lane failed; the request goes the full way');
      return false;
    }
    if (answer === undefined || address === undefined) return false;
    const charge = route.rateLimited ? (deps.limiter?.charge(token?.id ?? null, address) ?? 'off') : 'off';
    if (charge === 'over') return false;
    if (token !== null) deps.auth.useValid(token);

    const requestId = deps.requestId(req);
    let templates = this.#templates.get(answer);
    if (templates === undefined) this.#templates.set(answer, (templates = [undefined, undefined]));
    let headers: string[];
    if (charge === 'off') headers = templates[0] ??= headerTemplate(answer, false);
    else {
      headers = templates[1] ??= headerTemplate(answer, true);
      headers[POLICY] = charge.policy;
      headers[STATE] = charge.state;
    }
    headers[ID] = requestId;
    res.writeHead(200, headers);
    res.end(answer.body);
    this.served += 1;

    const ms = performance.now() - start;
    (entry.observe ??= deps.record('GET', route.route, 200))(ms);
    if (deps.access.wants(200)) {
      deps.access.write({
        requestId,
        method: 'GET',
        url,
        remoteAddress: req.socket.remoteAddress,
        status: 200,
        ms,
      });
    }
    return true;
  }
}
