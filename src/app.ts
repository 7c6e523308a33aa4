// buildApp(): the whole HTTP service as a Fastify instance that is never listening.
// Tests drive it with app.inject() (which readies it); src/server.ts listens. The app
// owns the store it is given: on close it flushes pending last-used times, then closes it.
import type { AuditSink } from './audit/events.js';
import { auditRoutes } from './audit/routes.js';
import { AuditService } from './audit/service.js';
import { OPERATOR_ACCOUNT_ID } from './accounts/ids.js';
import { auditEventView } from './audit/views.js';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Logger } from 'pino';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import { AppError } from './errors.js';
import { Drain } from './http/drain.js';
import { healthRoutes } from './http/health.js';
import { installJsonBodyParser } from './http/json-body.js';
import { registerOpenApi } from './http/openapi.js';
import { installRateLimit } from './http/rate-limit.js';
import { HttpTraffic, installMetrics } from './http/metrics.js';
import { installCors, SECURITY_HEADERS } from './http/security.js';
import { VERSION } from './version.js';
import { AccessLog, RequestLog } from './http/request-log.js';
import {
  clientErrorHandler,
  frameworkErrorHandler,
  installNotFoundHandler,
  installProblemHandlers,
  RETRY_AFTER_SECONDS,
} from './http/problem.js';
import { installExpectationHandling, protocolProblem, queryProblem } from './http/protocol.js';
import type { App } from './http/types.js';
import { buildLazySerializer } from './http/serialization.js';
import { buildValidator } from './http/validation.js';
import { requestIdOf } from './logging.js';
import type { Store } from './storage/types.js';
import { createTokenDomain, type TokenDomain } from './tokens/index.js';
import { tokenRoutes } from './tokens/routes.js';
import { PeriodicPurge, PURGE_INTERVAL_MS } from './periodic.js';
import { catalogManageRoutes } from './catalog/manage-routes.js';
import { catalogRoutes } from './catalog/routes.js';
import { gatewayRoutes } from './gateway/routes.js';
import { CatalogService } from './catalog/service.js';
import { createAuth, installRouteAuth, queryCredentialProblem } from './http/auth.js';
import { FailureLimiter } from './http/failure-limiter.js';
import { consoleRoutes } from './console/routes.js';
import { KeyRing } from './secret-scanning/keys.js';
import { secretScanningRoutes } from './secret-scanning/routes.js';
import { createAccountService } from './accounts/index.js';
import { accountRoutes } from './accounts/routes.js';
import type { AccountService } from './accounts/service.js';
import { ChangeFollower } from './fleet/changes.js';
import type { ChangeWatch } from './storage/types.js';
import { FleetRegistry } from './fleet/registry.js';

export const BODY_LIMIT_BYTES = 16 * 1024;

declare module 'fastify' {
  interface FastifyInstance {
    /** The domain objects behind the routes (for the server's bootstrap, and tests). */
    infracat: {
      tokens: TokenDomain;
      accounts: AccountService;
      catalog: CatalogService;
      audit: AuditService;
      /** Deletes tokens expired longer than TOKEN_EXPIRED_RETENTION_DAYS. */
      purger: PeriodicPurge;
      /** Deletes audit events older than AUDIT_RETENTION_DAYS. */
      auditPruner: PeriodicPurge;
      /** This instance's heartbeat, and the live instances that share the rate limits. */
      fleet: FleetRegistry;
    };
  }
}

export interface AppDeps {
  config: Config;
  store: Store;
  logger: Logger;
  /** The clock of token rules, retention and catalog sunsets; defaults to Date.now (tests substitute one). */
  now?: () => number;
  /** The drain before a stop (src/http/drain.ts), which src/server.ts starts; none by default. */
  drain?: Drain;
}

export function buildApp(deps: AppDeps): App {
  const { config, store } = deps;
  const drain = deps.drain ?? new Drain();
  // First: a key file that is not exactly a valid key list stops the start (a ConfigError).
  const secretScanningKeys = openSecretScanningKeys(config, deps.logger);
  // Typed as Fastify's logger so route modules share one App type.
  const loggerInstance: FastifyBaseLogger = deps.logger;
  const access = new AccessLog(deps.logger, config.accessLog);
  const traffic = new HttpTraffic();
  const app = Fastify({
    loggerInstance,
    // X-Request-Id is taken from trusted proxies only (src/logging.ts).
    genReqId: requestIdOf(config.trustProxy),
    logController: new RequestLog(access, traffic),
    bodyLimit: BODY_LIMIT_BYTES,
    // Our own closing check below answers with a problem body instead of Fastify's.
    return503OnClosing: false,
    // No timer per plugin and per route: avvio arms and clears a 10 s timer for each of the
    // ~200 plugins and `after` steps of a start, 3-7 ms of ready() here (BENCHMARKS.md,
    // "Start-up, session 17"). src/server.ts bounds the whole start with one deadline instead.
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

  // JSON only (Fastify would also take text/plain); anything else is a 415.
  installJsonBodyParser(app);
  let storageErrors = 0;
  const countStorageError = (): void => {
    storageErrors += 1;
  };
  installProblemHandlers(app, { bodyLimit: BODY_LIMIT_BYTES, onStorageError: countStorageError });
  installExpectationHandling(app);
  installCors(app, config.corsOrigins);

  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // What every request meets first, in one callback hook (it runs on every request and
  // finds nothing wrong with almost all of them; each hook, and each async one most,
  // costs a catalog GET measurably): the headers every answer carries, then the refusals
  // that hold whatever the route: shutting down, broken framing, an abusive or
  // credential-carrying query string. After CORS, so a browser can read these refusals.
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(SECURITY_HEADERS).header('x-request-id', request.id);
    if (closing) {
      reply.header('connection', 'close');
      done(
        new AppError('SERVICE_UNAVAILABLE', 'the server is shutting down', {
          headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
        }),
      );
      return;
    }
    const query = request.query;
    done(protocolProblem(request.raw) ?? queryProblem(query) ?? queryCredentialProblem(query) ?? undefined);
  });
  // A flush retries every LAST_USED_FLUSH_MS: while storage is down or read-only, one
  // warning a minute (with the count) says it all, instead of one a second.
  // Each audit event, once its transaction committed, is also one log line (`"audit": true`)
  // in the event's wire shape, for operators to ship to their SIEM.
  const audit: AuditSink = (event) =>
    app.log.info({ audit: true, event: auditEventView(event, OPERATOR_ACCOUNT_ID) }, 'audit event');
  let flushFailures = 0;
  let flushWarnedAt = Number.NEGATIVE_INFINITY;
  const tokens = createTokenDomain(
    config,
    store,
    (err) => {
      countStorageError();
      flushFailures += 1;
      if (Date.now() - flushWarnedAt < 60_000) return;
      flushWarnedAt = Date.now();
      app.log.warn(
        { err, failures: flushFailures },
        'last_used_at flush failed; will retry (this warning repeats at most once a minute)',
      );
    },
    deps.now,
    audit,
  );
  const catalog = new CatalogService(store.catalog, {
    refreshMs: config.catalogRefreshMs,
    audit,
    // Sunset is time-based: the same clock as the token rules.
    ...(deps.now !== undefined ? { now: deps.now } : {}),
    onRefreshError: (err) => {
      countStorageError();
      app.log.warn({ err }, 'catalog refresh failed; serving the last snapshot');
    },
  });
  const purger = new PeriodicPurge({
    intervalMs: PURGE_INTERVAL_MS,
    purge: () => tokens.service.purgeExpired(),
    onPurged: (count) => app.log.info({ count }, 'purged tokens expired longer than TOKEN_EXPIRED_RETENTION_DAYS'),
    onError: (err) => {
      countStorageError();
      app.log.warn({ err }, 'purging expired tokens failed; will retry');
    },
  });
  const auditService = new AuditService(store.audit, {
    retentionMs: config.auditRetentionDays * 86_400_000,
    ...(deps.now !== undefined ? { now: deps.now } : {}),
  });
  // Pruning is housekeeping, not a change anyone made: logged, never itself an event.
  const auditPruner = new PeriodicPurge({
    intervalMs: PURGE_INTERVAL_MS,
    purge: () => auditService.prune(),
    onPurged: (count) => app.log.info({ count }, 'pruned audit events older than AUDIT_RETENTION_DAYS'),
    onError: (err) => {
      countStorageError();
      app.log.warn({ err }, 'pruning audit events failed; will retry');
    },
  });
  const accounts = createAccountService(store, tokens.cache, deps.now, audit);
  // A failed heartbeat keeps the last count (src/fleet/registry.ts); like the flush
  // above, one warning a minute says it while it lasts.
  let fleetWarnedAt = Number.NEGATIVE_INFINITY;
  const fleet = new FleetRegistry({
    store: store.instances,
    heartbeatMs: config.instanceHeartbeatMs,
    onChange: (count, previous) =>
      app.log.info({ instances: count, previous }, 'live instances changed: the rate limits are split among them'),
    onError: (err, failed) => {
      countStorageError();
      if (Date.now() - fleetWarnedAt < 60_000) return;
      fleetWarnedAt = Date.now();
      const outcome =
        failed === 'leave'
          ? 'its row expires by itself'
          : 'the rate limits stay split among the last known count of instances';
      app.log.warn(
        { err, failed, instances: fleet.count, failures: fleet.stats.failures },
        `instance ${failed} failed; ${outcome} (this warning repeats at most once a minute)`,
      );
    },
  });
  app.decorate('infracat', { tokens, accounts, catalog, audit: auditService, purger, auditPruner, fleet });
  const auth = createAuth({
    service: tokens.service,
    limiter: new FailureLimiter(config.authFailureLimit, config.authFailureWindowS * 1000),
    ...(deps.now !== undefined ? { now: deps.now } : {}),
  });
  app.decorateRequest('token', null);
  app.decorateRequest('tokenSecret', null);
  installRouteAuth(app, auth);
  const rateLimit = {
    quotas: { token: config.rateLimit, anonymous: config.rateLimitAnonymous },
    windowS: config.rateLimitWindowS,
  };
  const limiter =
    rateLimit.quotas.token > 0 || rateLimit.quotas.anonymous > 0
      ? installRateLimit(app, { ...rateLimit, fleet })
      : undefined;
  installNotFoundHandler(app, limiter?.hook);
  // Other instances' changes, heard as they commit (src/fleet/changes.ts).
  const changes = new ChangeFollower({
    cache: tokens.cache,
    catalog,
    onConnected: () => app.log.info('hearing changes made by other instances'),
    onDisconnected: (err) => {
      countStorageError();
      app.log.warn(
        { err },
        'lost the connection that hears changes made by other instances; reconnecting ' +
          '(meanwhile they take effect here within TOKEN_CACHE_TTL_MS and CATALOG_REFRESH_MS)',
      );
    },
  });
  let watch: ChangeWatch | undefined;
  installMetrics(app, config.metricsAccess, {
    tokens,
    catalog,
    changes,
    storageErrors: () => storageErrors,
    storageQueries: () => store.stats.queries,
    fleet,
    traffic,
  });

  // An instance of the fleet is one that serves: it registers once it listens, so a start
  // that fails before (its port taken, its storage or catalog not ready) never counts and
  // never shrinks the others' shares of the rate limits. An app that never listens (one
  // tested through inject()) is no instance. startServer() awaits the same first heartbeat
  // before it says it is listening (src/server.ts); onClose deregisters.
  app.addHook('onListen', async () => {
    await fleet.start();
    if (fleet.stats.beats > 0) app.log.info({ instance: fleet.id, instances: fleet.count }, 'instance registered');
  });
  app.addHook('onReady', async () => {
    tokens.lastUsed.start();
    purger.start();
    auditPruner.start();
    // First start of an empty database gets the shipped catalog; then load what is live.
    // If storage is down now, catalogs start empty and fill in at the next refresh.
    try {
      // Loaded (with the YAML parser) only when the database has no catalog yet.
      const seed = async () => (await import('./catalog/default.js')).loadDefaultCatalog();
      if (await catalog.seedIfEmpty(seed)) app.log.info('applied the default catalog to an empty database');
      await catalog.load();
    } catch (err) {
      app.log.warn({ err }, 'could not load the catalog at start; will retry');
    }
    catalog.start();
    watch = store.watch(changes);
    // Serve once this instance hears other instances' changes (or knows it cannot yet: a
    // failed attempt is bounded by DATABASE_TIMEOUT_MS). What changed before it listened is
    // taken in by the resync that follows the connection, at start rather than later.
    await changes.firstAttempt;
  });
  app.addHook('onClose', async () => {
    // In-flight requests are done by now: leave the fleet (the others take over this
    // instance's share at their next heartbeat), write the last uses, let go of storage.
    await fleet.stop();
    await watch?.stop();
    catalog.stop();
    await purger.stop();
    await auditPruner.stop();
    await tokens.lastUsed.stop();
    await store.close();
  });

  // Before the routes: @fastify/swagger collects them as they are registered.
  registerOpenApi(app, { version: VERSION, bodyLimit: BODY_LIMIT_BYTES, tokenPrefix: config.tokenPrefix, rateLimit });
  healthRoutes(app, { store, timeoutMs: config.databaseTimeoutMs, drain });
  tokenRoutes(app, { service: tokens.service });
  accountRoutes(app, { accounts, tokens: tokens.service });
  auditRoutes(app, { audit: auditService });
  gatewayRoutes(app, {
    service: tokens.service,
    auth,
    rules: config.authCheckRules,
    gateway: config.authCheckGateway,
  });
  catalogRoutes(app, { catalog, access: config.catalogAccess, cacheControl: config.catalogCacheControl });
  catalogManageRoutes(app, { catalog, now: deps.now ?? Date.now });
  if (config.console) consoleRoutes(app);
  if (secretScanningKeys !== null)
    secretScanningRoutes(app, { keys: secretScanningKeys, service: tokens.service, limiter: limiter?.hook });

  return app;
}

/** SECRET_SCANNING_KEYS_FILE's keys, or null when it is unset (the endpoint is then off). */
function openSecretScanningKeys(config: Config, logger: Logger): KeyRing | null {
  if (config.secretScanningKeysFile === '') return null;
  const keys = new KeyRing(config.secretScanningKeysFile, {
    onReload: (ids) => logger.info({ key_identifiers: ids }, 'secret scanning keys file changed: keys reloaded'),
    onReloadError: (message) => logger.error(message),
  });
  logger.info({ key_identifiers: keys.identifiers() }, 'secret scanning reports accepted, signed by these keys');
  return keys;
}
