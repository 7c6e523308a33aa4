// The domain objects behind the routes, made once per app and shared as app.infracat:
// tokens, accounts, catalog, audit, webhooks, the background purges and this instance's
// place in the fleet. Their failures in the background are logged here and counted as storage
// errors (/metrics).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { OPERATOR_ACCOUNT_ID } from './accounts/ids.js';
import { createAccountService } from './accounts/index.js';
import type { AccountService } from './accounts/service.js';
import type { AuditSink } from './audit/events.js';
import { AuditService } from './audit/service.js';
import { auditEventView } from './audit/views.js';
import { CatalogService } from './catalog/service.js';
import { jwtIssuer, type Config } from './config.js';
import { FleetCounts } from './fleet/counts.js';
import { FleetRegistry } from './fleet/registry.js';
import { RATE_LIMIT_MAX_KEYS } from './http/rate-limit.js';
import { createSignedTokens, type SignedTokens } from './oauth/index.js';
import type { SigningKeys } from './oauth/keys.js';
import { PeriodicPurge, PURGE_INTERVAL_MS } from './periodic.js';
import type { Store } from './storage/types.js';
import { createTokenDomain, type TokenDomain } from './tokens/index.js';
import { createWebhookDomain, type WebhookDomain } from './webhooks/index.js';
import type { EncryptionKeys } from './webhooks/keys.js';
import { NOTICE_SCAN_MS } from './webhooks/notices.js';
import type { Resolver } from './webhooks/targets.js';

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
      /** Deletes hourly token usage older than TOKEN_USAGE_RETENTION_DAYS. */
      usagePruner: PeriodicPurge;
      /** This instance's heartbeat, and the live instances that share the rate limits. */
      fleet: FleetRegistry;
      /** The rate limiter's counts, shared with the other instances through storage. */
      limits: FleetCounts;
      /** Webhooks: the service, the delivery worker. */
      webhooks: WebhookDomain;
      /** Sends the tokens' expiry notices that fell due (every 30 s, on a listening instance). */
      notices: PeriodicPurge;
      /** Deletes webhook delivery log rows older than WEBHOOK_DELIVERY_RETENTION_DAYS. */
      deliveryPruner: PeriodicPurge;
      /** Signed access tokens; null when they are off (PostgreSQL without JWT_SIGNING_KEY_FILES). */
      signed: SignedTokens | null;
    };
  }
}

export interface ServicesOptions {
  config: Config;
  store: Store;
  /** The clock of token rules, retention and catalog sunsets; Date.now when absent. */
  now: (() => number) | undefined;
  /** Told about every background failure of storage (metrics). */
  onStorageError: () => void;
  /** How webhook target names resolve; the system resolver when absent. */
  webhookResolver?: Resolver | undefined;
  /** The keys that sign access tokens (src/oauth/keys.ts); null: signed access tokens are off. */
  signingKeys: SigningKeys | null;
  /** What seals webhook secrets (src/webhooks/keys.ts); null: webhooks cannot be given one. */
  webhookKeys: EncryptionKeys | null;
}

export const services = fp<ServicesOptions, RawServerDefault, TypeBoxTypeProvider>(
  (app, { config, store, now, onStorageError: countStorageError, webhookResolver, signingKeys, webhookKeys }, done) => {
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
          'last_used_at or usage flush failed; will retry (this warning repeats at most once a minute)',
        );
      },
      now,
      audit,
    );
    const catalog = new CatalogService(store.catalog, {
      refreshMs: config.catalogRefreshMs,
      audit,
      // Sunset is time-based: the same clock as the token rules.
      ...(now !== undefined ? { now } : {}),
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
      ...(now !== undefined ? { now } : {}),
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
    const usagePruner = new PeriodicPurge({
      intervalMs: PURGE_INTERVAL_MS,
      purge: () => tokens.service.pruneUsage(),
      onPurged: (count) => app.log.info({ count }, 'pruned token usage older than TOKEN_USAGE_RETENTION_DAYS'),
      onError: (err) => {
        countStorageError();
        app.log.warn({ err }, 'pruning token usage failed; will retry');
      },
    });
    const accounts = createAccountService(store, tokens.cache, now, audit);
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
    // A failed sync leaves each instance enforcing its share (src/fleet/counts.ts); like the
    // heartbeat, one warning a minute says it while it lasts.
    let limitsWarnedAt = Number.NEGATIVE_INFINITY;
    const limits: FleetCounts = new FleetCounts({
      store: store.rateCounters,
      fleet,
      windowMs: config.rateLimitWindowS * 1000,
      maxKeys: RATE_LIMIT_MAX_KEYS,
      onError: (err) => {
        countStorageError();
        if (Date.now() - limitsWarnedAt < 60_000) return;
        limitsWarnedAt = Date.now();
        app.log.warn(
          { err, failures: limits.stats.failures, instances: fleet.count },
          'sharing rate-limit counts failed; each instance enforces its share of the limits until it works again ' +
            '(this warning repeats at most once a minute)',
        );
      },
    });
    // A delivery the store could not record is retried when its claim's lease ends; like the
    // flush, one warning a minute says it while it lasts.
    let webhooksWarnedAt = Number.NEGATIVE_INFINITY;
    const webhooks = createWebhookDomain(config, store, webhookKeys, {
      resolve: webhookResolver,
      now,
      audit,
      onError: (err) => {
        countStorageError();
        if (Date.now() - webhooksWarnedAt < 60_000) return;
        webhooksWarnedAt = Date.now();
        app.log.warn(
          { err },
          'webhook delivery could not read or write storage; claimed deliveries are retried when their lease ends ' +
            '(this warning repeats at most once a minute)',
        );
      },
      onDisabled: (webhook) =>
        app.log.warn(
          { webhook_id: webhook.id, account_id: webhook.accountId },
          'webhook disabled: its deliveries failed for 24 hours',
        ),
    });
    const notices = new PeriodicPurge({
      intervalMs: NOTICE_SCAN_MS,
      purge: () => webhooks.sendNotices(),
      onError: (err) => {
        countStorageError();
        app.log.warn({ err }, 'sending token expiry notices failed; will retry');
      },
    });
    const deliveryPruner = new PeriodicPurge({
      intervalMs: PURGE_INTERVAL_MS,
      purge: () => webhooks.pruneDeliveries(),
      onPurged: (count) =>
        app.log.info({ count }, 'pruned webhook delivery log rows older than WEBHOOK_DELIVERY_RETENTION_DAYS'),
      onError: (err) => {
        countStorageError();
        app.log.warn({ err }, 'pruning the webhook delivery log failed; will retry');
      },
    });
    const signed =
      signingKeys === null
        ? null
        : createSignedTokens(
            signingKeys,
            {
              issuer: jwtIssuer(config),
              ttlS: config.jwtTtlS,
              cacheMax: config.tokenCacheMax,
              scopes: tokens.service.registry.names(),
              ...(now !== undefined ? { now } : {}),
            },
            tokens.cache,
          );
    app.decorate('infracat', {
      tokens,
      accounts,
      catalog,
      audit: auditService,
      purger,
      auditPruner,
      usagePruner,
      fleet,
      limits,
      webhooks,
      notices,
      deliveryPruner,
      signed,
    });
    done();
  },
  { name: 'infracat-services' },
);
