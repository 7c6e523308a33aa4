// Prometheus metrics at /metrics. HTTP traffic is counted as each answer completes (by
// the request log, src/http/request-log.ts, which runs then anyway); the domain's own
// counters (verification outcomes, cache hits, last-used flushes, catalog snapshot)
// are read at scrape time, so the domain code knows nothing of Prometheus.
import { BlockList, isIP } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CatalogService } from '../catalog/service.js';
import type { ChangeFollower } from '../fleet/changes.js';
import type { FleetRegistry } from '../fleet/registry.js';
import { AppError } from '../errors.js';
import type { SignedTokens } from '../oauth/index.js';
import type { SignedVia } from '../oauth/signer.js';
import type { TokenDomain } from '../tokens/index.js';
import type { WebhookDomain } from '../webhooks/index.js';
import { noStoreAnswers } from './no-store.js';
import type { App } from './types.js';

export interface MetricsSources {
  tokens: TokenDomain;
  /** Storage statements sent so far. */
  storageQueries: () => number;
  catalog: CatalogService;
  /** Storage failures seen anywhere (requests, catalog refreshes, last-used flushes, heartbeats). */
  storageErrors: () => number;
  /** What this instance heard of other instances' changes. */
  changes: ChangeFollower;
  fleet: FleetRegistry;
  webhooks: WebhookDomain;
  /** The HTTP requests answered, as the request log counts them. */
  traffic: HttpTraffic;
  /** Signed access tokens; null when they are off. */
  signed: SignedTokens | null;
}

// All of 127.0.0.0/8 is loopback (Linux routes every address of it to lo), and so is ::1.
// BlockList also matches IPv4-mapped IPv6 (::ffff:127.0.0.2) against the IPv4 subnet.
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether a socket's peer address is on this machine's loopback. Anything unparsable is not. */
export function isLoopback(address: string | undefined): boolean {
  const family = address === undefined ? 0 : isIP(address);
  if (family === 0) return false;
  try {
    return LOOPBACK.check(address!, family === 4 ? 'ipv4' : 'ipv6');
  } catch {
    return false;
  }
}

const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * HTTP requests by method, route and status, and their durations as a histogram, counted
 * as each answer completes. The series are bounded: methods Node knows, route patterns (or
 * "unmatched"), statuses.
 */
export class HttpTraffic {
  /** Its own registry: the app's (installMetrics) is made later, by the metrics plugin. */
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'infracat_http_requests_total',
    help: 'HTTP requests answered, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'infracat_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  /** Counts one answer to `method` on `route` (its URL pattern, or "unmatched") with `status`, that took `ms`. */
  record(method: string, route: string, status: number, ms: number): void {
    const labels = { method, route, status };
    this.requests.inc(labels);
    this.duration.observe(labels, ms / 1000);
  }
}

/** A counter whose value is read from a running total at scrape time. */
function totalCounter(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

/** Installs the metrics: the /metrics route and what it reads at scrape time. */
export function installMetrics(app: App, access: 'public' | 'loopback' | 'off', sources: MetricsSources): void {
  const registry = Registry.merge([new Registry(), sources.traffic.registry]);
  collectDefaultMetrics({ register: registry });

  const { service, cache, lastUsed, usage } = sources.tokens;
  new Counter({
    name: 'infracat_token_verifications_total',
    help:
      'Token verifications by outcome (ok, format, checksum, unknown, expired, suspended, disabled, ' +
      'not_yet_valid, address, error), and requests of verified tokens refused afterwards (scope, rate_limited; ' +
      'also counted under ok)',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [outcome, n] of Object.entries(service.verifications)) this.inc({ outcome }, n);
    },
  });
  totalCounter(
    registry,
    'infracat_token_cache_hits_total',
    'Verifications answered from the in-memory cache',
    () => cache.hits,
  );
  totalCounter(
    registry,
    'infracat_token_cache_misses_total',
    'Verifications that needed a storage lookup',
    () => cache.misses,
  );
  const { signed } = sources;
  new Counter({
    name: 'infracat_jwt_signed_total',
    help:
      'Signed access tokens made, by the path that asked: exchange (POST /api/v1/oauth/token) or forward_auth ' +
      '(X-Token-Jwt of /api/v1/auth/check, one per token until shortly before it expires)',
    labelNames: ['via'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const via of ['exchange', 'forward_auth'] as SignedVia[]) this.inc({ via }, signed?.signer.signed[via] ?? 0);
    },
  });
  totalCounter(
    registry,
    'infracat_jwt_forward_auth_reused_total',
    'Allowed forward-auth checks answered with a signed access token made for an earlier one (AUTH_CHECK_JWT)',
    () => signed?.phantom.hits ?? 0,
  );
  totalCounter(
    registry,
    'infracat_last_used_flushes_total',
    'Batched last_used_at writes',
    () => lastUsed.stats.flushes,
  );
  totalCounter(
    registry,
    'infracat_last_used_rows_total',
    'Token rows updated by last_used_at batches',
    () => lastUsed.stats.rows,
  );
  totalCounter(
    registry,
    'infracat_last_used_flush_failures_total',
    'last_used_at batches that failed (retried later)',
    () => lastUsed.stats.failures,
  );
  totalCounter(registry, 'infracat_token_usage_flushes_total', 'Batched token usage writes', () => usage.stats.flushes);
  totalCounter(
    registry,
    'infracat_token_usage_cells_total',
    'Token-hour rows added to by token usage batches',
    () => usage.stats.cells,
  );
  totalCounter(
    registry,
    'infracat_token_usage_flush_failures_total',
    'Token usage batches that failed (retried later)',
    () => usage.stats.failures,
  );
  totalCounter(
    registry,
    'infracat_token_usage_dropped_total',
    'Token uses not counted: the pending token-hour cells were at their bound',
    () => usage.stats.dropped,
  );
  totalCounter(
    registry,
    'infracat_storage_queries_total',
    'SQL statements sent to storage (transaction control not counted)',
    sources.storageQueries,
  );
  totalCounter(
    registry,
    'infracat_storage_errors_total',
    'Storage unavailable errors (requests, catalog refreshes, flushes, heartbeats)',
    sources.storageErrors,
  );
  new Gauge({
    name: 'infracat_catalog_version',
    help: 'Catalog version of the in-memory snapshot',
    registers: [registry],
    collect() {
      this.set(sources.catalog.snapshot.version);
    },
  });
  new Gauge({
    name: 'infracat_catalog_snapshot_age_seconds',
    help: 'Seconds since the in-memory catalog snapshot was built',
    registers: [registry],
    collect() {
      this.set((Date.now() - sources.catalog.snapshot.builtAt) / 1000);
    },
  });
  new Gauge({
    name: 'infracat_catalog_last_check_age_seconds',
    help: 'Seconds since storage was last checked for a newer catalog (grows while storage is down)',
    registers: [registry],
    collect() {
      const at = sources.catalog.lastCheckedAt;
      this.set(at === 0 ? -1 : (Date.now() - at) / 1000);
    },
  });

  new Gauge({
    name: 'infracat_change_feed_listening',
    help: "1 while this instance hears other instances' changes as they happen; 0 while it relies on TTL and polling",
    registers: [registry],
    collect() {
      this.set(sources.changes.listening ? 1 : 0);
    },
  });
  new Counter({
    name: 'infracat_change_feed_changes_total',
    help: 'Changes heard from storage, by kind (resync: anything may have changed; at start and after a reconnect)',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, n] of Object.entries(sources.changes.heard)) this.inc({ kind }, n);
    },
  });
  totalCounter(
    registry,
    'infracat_change_feed_disconnects_total',
    'Times the connection that hears changes was lost (it reconnects by itself)',
    () => sources.changes.disconnects,
  );

  const { fleet } = sources;
  new Gauge({
    name: 'infracat_fleet_instances',
    help: 'Live instances as the last successful heartbeat counted them (the rate limits are split among them)',
    registers: [registry],
    collect() {
      this.set(fleet.count);
    },
  });
  totalCounter(
    registry,
    'infracat_fleet_heartbeat_failures_total',
    'Heartbeats that failed (the last count of instances is kept)',
    () => fleet.stats.failures,
  );
  const { worker } = sources.webhooks;
  new Counter({
    name: 'infracat_webhook_attempts_total',
    help: 'Webhook delivery attempts this instance made, by outcome (delivered: a 2xx; failed: anything else)',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ outcome: 'delivered' }, worker.stats.delivered);
      this.inc({ outcome: 'failed' }, worker.stats.failed);
    },
  });
  totalCounter(
    registry,
    'infracat_webhooks_disabled_total',
    'Webhooks this instance disabled because their deliveries failed for 24 hours',
    () => worker.stats.disabled,
  );
  new Gauge({
    name: 'infracat_fleet_heartbeat_age_seconds',
    help: 'Seconds since the last successful heartbeat (grows while storage is down; -1 before the first)',
    registers: [registry],
    collect() {
      const at = fleet.stats.lastBeatAt;
      this.set(at === 0 ? -1 : (Date.now() - at) / 1000);
    },
  });

  void app.register(async (plugin) => {
    noStoreAnswers(plugin);
    plugin.get('/metrics', { config: { rateLimit: false }, schema: { hide: true } }, async (request, reply) => {
      // The socket's peer, never request.ip: with TRUST_PROXY a header could claim loopback.
      if (access === 'off' || (access === 'loopback' && !isLoopback(request.socket.remoteAddress))) {
        throw new AppError('NOT_FOUND', 'no resource at /metrics');
      }
      reply.type(registry.contentType);
      return registry.metrics();
    });
  });
}

/** Storage failures seen anywhere (requests, catalog refreshes, last-used flushes, heartbeats). */
export class StorageErrors {
  count = 0;
  readonly add = (): void => {
    this.count += 1;
  };
}

export interface MetricsOptions extends Pick<MetricsSources, 'storageQueries' | 'storageErrors' | 'traffic'> {
  /** METRICS_ACCESS. */
  access: 'public' | 'loopback' | 'off';
}

/** The metrics of the app's domain objects and of the change feed, at /metrics. */
export const metrics = fp<MetricsOptions, RawServerDefault, TypeBoxTypeProvider>(
  (app, { access, ...sources }, done) => {
    const { tokens, catalog, fleet, signed, webhooks } = app.infracat;
    installMetrics(app, access, { ...sources, tokens, catalog, fleet, signed, webhooks, changes: app.changeFeed });
    done();
  },
  { name: 'infracat-metrics', dependencies: ['infracat-services', 'infracat-lifecycle'] },
);
