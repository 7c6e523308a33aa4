// buildApp(): the whole HTTP service as a Fastify instance that is never listening.
// Tests drive it with app.inject() (which readies it); src/server.ts listens. The app
// owns the store it is given: on close it flushes pending last-used times, then closes it.
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Logger } from 'pino';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import { AppError } from './errors.js';
import { healthRoutes } from './http/health.js';
import { installJsonBodyParser } from './http/json-body.js';
import { RequestLog } from './http/request-log.js';
import { installProblemHandlers, RETRY_AFTER_SECONDS } from './http/problem.js';
import type { App } from './http/types.js';
import { validatorCompiler } from './http/validation.js';
import { requestIdFrom } from './logging.js';
import type { Store } from './storage/types.js';
import { createTokenDomain, type TokenDomain } from './tokens/index.js';
import { tokenRoutes } from './tokens/routes.js';
import { createAuth } from './http/auth.js';
import { FailureLimiter } from './http/failure-limiter.js';

export const BODY_LIMIT_BYTES = 16 * 1024;

declare module 'fastify' {
  interface FastifyInstance {
    /** The domain objects behind the routes (for the server's bootstrap, and tests). */
    infracat: { tokens: TokenDomain };
  }
}

export interface AppDeps {
  config: Config;
  store: Store;
  logger: Logger;
}

export function buildApp(deps: AppDeps): App {
  const { config, store } = deps;
  // Typed as Fastify's logger so route modules share one App type.
  const loggerInstance: FastifyBaseLogger = deps.logger;
  const app = Fastify({
    loggerInstance,
    genReqId: (req) => requestIdFrom(req.headers['x-request-id']),
    logController: new RequestLog(),
    bodyLimit: BODY_LIMIT_BYTES,
    // Our own closing check below answers with a problem body instead of Fastify's.
    return503OnClosing: false,
    trustProxy: config.trustProxy,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  // JSON only (Fastify would also take text/plain); anything else is a 415.
  installJsonBodyParser(app);
  installProblemHandlers(app, { bodyLimit: BODY_LIMIT_BYTES });

  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      reply.header('connection', 'close');
      throw new AppError('SERVICE_UNAVAILABLE', 'the server is shutting down', {
        headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
      });
    }
  });
  const tokens = createTokenDomain(config, store, (err) => app.log.warn({ err }, 'last_used_at flush failed; will retry'));
  app.decorate('infracat', { tokens });
  const auth = createAuth({
    service: tokens.service,
    limiter: new FailureLimiter(config.authFailureLimit, config.authFailureWindowS * 1000),
  });
  app.decorateRequest('token', null);
  app.addHook('onRequest', auth.refuseQueryTokens);

  app.addHook('onReady', async () => {
    tokens.lastUsed.start();
  });
  app.addHook('onClose', async () => {
    // In-flight requests are done by now: write their last uses, then let go of storage.
    await tokens.lastUsed.stop();
    await store.close();
  });

  healthRoutes(app, { store, timeoutMs: config.databaseTimeoutMs });
  tokenRoutes(app, { service: tokens.service, auth });

  return app;
}
