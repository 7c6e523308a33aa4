// buildApp(): the whole HTTP service as a Fastify instance that is never listening.
// Tests drive it with app.inject() (which readies it); src/server.ts listens. The app
// owns the store it is given: on close it flushes pending last-used times, then closes it.
import { accountRoutes } from './accounts/routes.js';
import { ACCOUNT_SCHEMAS } from './accounts/schemas.js';
import { AUDIT_SCHEMAS } from './audit/schemas.js';
import { CATALOG_MANAGE_SCHEMAS } from './catalog/manage-schemas.js';
import { CATALOG_SCHEMAS } from './catalog/schemas.js';
import { SECRET_SCANNING_SCHEMAS } from './secret-scanning/schemas.js';
import { TOKEN_SCHEMAS } from './tokens/schemas.js';
import { auditRoutes } from './audit/routes.js';
import { catalogManageRoutes } from './catalog/manage-routes.js';
import { catalogRoutes } from './catalog/routes.js';
import { accountRateLimit, type Config } from './config.js';
import { consoleRoutes } from './console/routes.js';
import { GATEWAY_SCHEMAS, gatewayRoutes } from './gateway/routes.js';
import { routeAuth } from './http/auth.js';
import { Drain } from './http/drain.js';
import { HEALTH_SCHEMAS, healthRoutes } from './http/health.js';
import { createInstance } from './http/instance.js';
import { jsonBody } from './http/json-body.js';
import { HttpTraffic, metrics, StorageErrors } from './http/metrics.js';
import { openApi } from './http/openapi.js';
import { notFound, problems } from './http/problem.js';
import { expectations } from './http/protocol.js';
import { rateLimiting } from './http/rate-limit.js';
import { requestGuard } from './http/request-guard.js';
import { routeGroup } from './http/route-group.js';
import { crossOrigin } from './http/security.js';
import type { App } from './http/types.js';
import { lifecycle } from './lifecycle.js';
import { loadSigningKeys, type SigningKeys } from './oauth/keys.js';
import { loadEncryptionKeys, type EncryptionKeys } from './webhooks/keys.js';
import { oauthRoutes } from './oauth/routes.js';
import { OAUTH_SCHEMAS } from './oauth/schemas.js';
import { KeyRing } from './secret-scanning/keys.js';
import { secretScanningRoutes } from './secret-scanning/routes.js';
import { services } from './services.js';
import type { Logger } from 'pino';
import type { Store } from './storage/types.js';
import { tokenRoutes } from './tokens/routes.js';
import { VERSION } from './version.js';
import { webhookRoutes } from './webhooks/routes.js';
import { WEBHOOK_SCHEMAS } from './webhooks/schemas.js';
import type { Resolver } from './webhooks/targets.js';

export const BODY_LIMIT_BYTES = 16 * 1024;

export interface AppDeps {
  config: Config;
  store: Store;
  logger: Logger;
  /** The clock of token rules, retention and catalog sunsets; defaults to Date.now (tests substitute one). */
  now?: () => number;
  /** The drain before a stop (src/http/drain.ts), which src/server.ts starts; none by default. */
  drain?: Drain;
  /** How webhook target host names resolve (tests point names where they like); the system resolver by default. */
  webhookResolver?: Resolver;
}

export function buildApp(deps: AppDeps): App {
  const { config, store, now } = deps;
  const drain = deps.drain ?? new Drain();
  // First: a key file that is not exactly a valid key list stops the start (a ConfigError).
  const secretScanningKeys = openSecretScanningKeys(config, deps.logger);
  const signingKeys = openSigningKeys(config, deps.logger);
  const webhookKeys = openWebhookKeys(config, deps.logger);
  const traffic = new HttpTraffic();
  const storageErrors = new StorageErrors();
  const rateLimit = {
    quotas: { token: config.rateLimit, account: accountRateLimit(config), anonymous: config.rateLimitAnonymous },
    windowS: config.rateLimitWindowS,
  };
  const app = createInstance({ config, logger: deps.logger, bodyLimit: BODY_LIMIT_BYTES, drain, traffic });

  // Plugins of the root instance. Authentication and the rate limit attach to each route as
  // it is declared, so they come before every plugin that declares routes (CORS declares
  // the preflight's); a request meets CORS, then the request guard.
  void app.register(jsonBody);
  void app.register(problems, { bodyLimit: BODY_LIMIT_BYTES, onStorageError: storageErrors.add });
  void app.register(expectations);
  void app.register(services, {
    config,
    store,
    now,
    onStorageError: storageErrors.add,
    webhookResolver: deps.webhookResolver,
    signingKeys,
    webhookKeys,
  });
  void app.register(routeAuth, {
    failureLimit: config.authFailureLimit,
    failureWindowS: config.authFailureWindowS,
    now,
  });
  void app.register(rateLimiting, rateLimit);
  void app.register(crossOrigin, { origins: config.corsOrigins });
  void app.register(requestGuard);
  void app.register(notFound);
  void app.register(lifecycle, { store, onStorageError: storageErrors.add });
  void app.register(metrics, {
    access: config.metricsAccess,
    traffic,
    storageErrors: () => storageErrors.count,
    storageQueries: () => store.stats.queries,
  });
  void app.register(openApi, {
    version: VERSION,
    bodyLimit: BODY_LIMIT_BYTES,
    tokenPrefix: config.tokenPrefix,
    rateLimit,
    corsOrigins: config.corsOrigins,
    schemas: {
      ...HEALTH_SCHEMAS,
      ...TOKEN_SCHEMAS,
      ...ACCOUNT_SCHEMAS,
      ...AUDIT_SCHEMAS,
      ...WEBHOOK_SCHEMAS,
      ...GATEWAY_SCHEMAS,
      ...OAUTH_SCHEMAS,
      ...CATALOG_SCHEMAS,
      ...CATALOG_MANAGE_SCHEMAS,
      // Only where the endpoint is on (SECRET_SCANNING_KEYS_FILE): a named shape no route uses is noise.
      ...(secretScanningKeys !== null ? SECRET_SCANNING_SCHEMAS : {}),
    },
  });

  // The routes, each group a plugin of its own; the OpenAPI document lists them in this order.
  void app.register(routeGroup('infracat-health-routes', healthRoutes), {
    store,
    timeoutMs: config.databaseTimeoutMs,
    drain,
  });
  void app.register(routeGroup('infracat-token-routes', tokenRoutes), (root) => ({
    service: root.infracat.tokens.service,
  }));
  void app.register(routeGroup('infracat-account-routes', accountRoutes), (root) => ({
    accounts: root.infracat.accounts,
    tokens: root.infracat.tokens.service,
  }));
  void app.register(routeGroup('infracat-audit-routes', auditRoutes), (root) => ({ audit: root.infracat.audit }));
  void app.register(routeGroup('infracat-webhook-routes', webhookRoutes), (root) => ({
    service: root.infracat.webhooks.service,
  }));
  void app.register(routeGroup('infracat-gateway-routes', gatewayRoutes), (root) => ({
    service: root.infracat.tokens.service,
    auth: root.tokenAuth,
    rules: config.authCheckRules,
    gateway: config.authCheckGateway,
    phantom: config.authCheckJwt ? (root.infracat.signed?.phantom ?? null) : null,
  }));
  void app.register(routeGroup('infracat-oauth-routes', oauthRoutes), (root) => ({
    signed: root.infracat.signed,
    service: root.infracat.tokens.service,
    auth: root.tokenAuth,
    problems: { bodyLimit: BODY_LIMIT_BYTES, onStorageError: storageErrors.add },
  }));
  void app.register(routeGroup('infracat-catalog-routes', catalogRoutes), (root) => ({
    catalog: root.infracat.catalog,
    access: config.catalogAccess,
    cacheControl: config.catalogCacheControl,
  }));
  void app.register(routeGroup('infracat-catalog-manage-routes', catalogManageRoutes), (root) => ({
    catalog: root.infracat.catalog,
    now: now ?? Date.now,
    bodyLimit: config.catalogBodyLimitBytes,
  }));
  if (config.console) void app.register(routeGroup('infracat-console-routes', consoleRoutes));
  if (secretScanningKeys !== null) {
    void app.register(routeGroup('infracat-secret-scanning-routes', secretScanningRoutes), (root) => ({
      keys: secretScanningKeys,
      service: root.infracat.tokens.service,
      limiter: root.rateLimiter?.hook,
    }));
  }
  return app;
}

/**
 * The keys that seal webhook signing secrets (WEBHOOK_ENCRYPTION_KEYS, or on SQLite
 * infracat's own), or null when there are none; an own key file that is not exactly one
 * key stops the start (a ConfigError). Logged by origin and path, never the key.
 */
function openWebhookKeys(config: Config, logger: Logger): EncryptionKeys | null {
  const keys = loadEncryptionKeys(config, (message, details) => logger.warn(details, message));
  if (keys === null) {
    logger.info(
      'webhooks cannot be given a secret: on PostgreSQL they need WEBHOOK_ENCRYPTION_KEYS (see docs/webhooks.md)',
    );
  } else if (keys.origin !== 'setting') {
    logger.info(
      { file: keys.file },
      `webhook secrets: sealed with infracat's own key (${keys.origin === 'made' ? 'made now, ' : ''}` +
        'beside the database)',
    );
  }
  return keys;
}

/**
 * The keys that sign access tokens (JWT_SIGNING_KEY_FILES, or on SQLite infracat's own), or
 * null when signed access tokens are off; a key file that is not exactly one P-256 private
 * key stops the start (a ConfigError). Logged by path and key id, never the key.
 */
function openSigningKeys(config: Config, logger: Logger): SigningKeys | null {
  const keys = loadSigningKeys(config, (message, details) => logger.warn(details, message));
  if (keys === null) {
    logger.info(
      'signed access tokens are off: on PostgreSQL they need JWT_SIGNING_KEY_FILES (see docs/signed-tokens.md)',
    );
    return null;
  }
  const [signing] = keys.keys;
  const how = {
    files: 'from JWT_SIGNING_KEY_FILES',
    made: 'made now, beside the database',
    reused: 'beside the database',
  };
  logger.info(
    { kid: signing!.kid, file: signing!.file, published: keys.keys.map((k) => ({ kid: k.kid, file: k.file })) },
    `signed access tokens: signing with key ${signing!.kid} (${how[keys.origin]})`,
  );
  return keys;
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
