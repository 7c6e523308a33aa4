// The Fastify instance of the app, with the server options it is built with (src/app.ts
// registers its plugins). It never listens by itself.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { requestIdOf } from '../logging.js';
import type { Drain } from './drain.js';
import type { HttpTraffic } from './metrics.js';
import { clientErrorHandler, frameworkErrorHandler } from './problem.js';
import { AccessLog, RequestLog } from './request-log.js';
import { buildLazySerializer } from './serialization.js';
import type { App } from './types.js';
import { buildValidator } from './validation.js';

export interface InstanceOptions {
  config: Config;
  logger: Logger;
  bodyLimit: number;
  drain: Drain;
  /** Counts each answer, as the request log writes its line. */
  traffic: HttpTraffic;
}

export function createInstance({ config, logger, bodyLimit, drain, traffic }: InstanceOptions): App {
  // Typed as Fastify's logger so route modules share one App type.
  const loggerInstance: FastifyBaseLogger = logger;
  const access = new AccessLog(logger, config.accessLog);
  return Fastify({
    loggerInstance,
    // X-Request-Id is taken from trusted proxies only (src/logging.ts).
    genReqId: requestIdOf(config.trustProxy),
    logController: new RequestLog(access, traffic),
    bodyLimit,
    // Our own closing check (src/http/request-guard.ts) answers with a problem body instead of Fastify's.
    return503OnClosing: false,
    // One deadline bounds the whole start (src/server.ts, readyWithin) rather than a timer
    // per plugin: a start that hangs anywhere fails at the same, documented bound.
    pluginTimeout: 0,
    trustProxy: config.trustProxy,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // Slow-loris guard: the header block must arrive within headersTimeout; Node checks
    // every connectionsCheckingInterval (30 s by default, too coarse for that).
    // requireHostHeader: Node's own answer to a Host-less request is a bare 400;
    // src/http/protocol.ts refuses it with a problem instead.
    // ServerResponse: once a drain lets go of its connections, each answer closes its own.
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: 1000,
      requireHostHeader: false,
      ServerResponse: drain.ServerResponse,
    },
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    // Our own compilers, both compiling on a route's first use (src/http/validation.ts,
    // src/http/serialization.ts).
    schemaController: { compilersFactory: { buildValidator, buildSerializer: buildLazySerializer } },
  }).withTypeProvider<TypeBoxTypeProvider>();
}
