// config -> store -> migrate -> buildApp -> listen (only once the app is ready: catalog
// loaded, admin token minted) -> registered in the fleet (only once listening; a start that
// fails lets go of everything), and a graceful stop on SIGTERM/SIGINT: drain for
// SHUTDOWN_DRAIN_MS (src/http/drain.ts), stop accepting, let in-flight requests finish,
// flush, close storage, all bounded by SHUTDOWN_TIMEOUT_MS. Nothing else lives here.
import { setTimeout as sleep } from 'node:timers/promises';
import closeWithGrace from 'close-with-grace';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { withDeadline } from './deadline.js';
import { Drain } from './http/drain.js';
import type { App } from './http/types.js';
import type { Config } from './config.js';
import { trustProxyWarning } from './http/trust-proxy.js';
import { describeDatabase } from './storage/database-url.js';
import { createLogger } from './logging.js';
import { openStore } from './storage/index.js';
import { OPERATOR_ACCOUNT_ID } from './storage/migrations.js';

export interface RunningServer {
  app: App;
  /** The address actually bound, e.g. http://127.0.0.1:8080. */
  url: string;
  /** Starts the drain (src/http/drain.ts): /readyz answers 503, all else is served as usual. */
  drain(): void;
  /** Closes; after drain(), first stops listening and lets clients close their connections. */
  close(): Promise<void>;
}

/**
 * The longest a start may take from building the app to ready: Fastify's own default per
 * plugin, here for the whole of ready() (src/http/instance.ts turns the per-plugin timers off).
 */
export const READY_TIMEOUT_MS = 10_000;

/** app.ready(), failing once `ms` pass: a plugin or onReady hook that never settles stops the start. */
export function readyWithin(app: Pick<App, 'ready'>, ms: number): Promise<unknown> {
  return withDeadline(
    app.ready(),
    ms,
    `the server was not ready within ${ms} ms: a plugin or start-up step (storage, the catalog) never finished`,
  );
}

export async function startServer(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
): Promise<RunningServer> {
  const started = performance.now();
  const trustWarning = trustProxyWarning(config.trustProxy);
  if (trustWarning !== null) logger.warn({ trust_proxy: config.trustProxy }, trustWarning);
  const store = await openStore(config, {
    onIdleError: (err) => logger.warn({ err }, 'idle database connection failed'),
    onWarning: (message, details) => logger.warn(details, message),
  });
  let app: App | undefined;
  let ready = false;
  let url: string;
  const drain = new Drain();
  try {
    const report = await store.migrate();
    if (report.applied.length > 0) logger.info({ applied: report.applied, version: report.version }, 'schema migrated');
    // Fail fast: a read-only database would otherwise serve reads and fail every write.
    await store.checkWritable();
    app = buildApp({ config, store, logger, drain });
    await readyWithin(app, READY_TIMEOUT_MS);
    ready = true;
    await bootstrapAdminToken(app, logger, config.bootstrapAdminToken);
    url = await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    // A failed start lets go of everything, so the process ends with its exit code: a ready
    // app closes as at a stop (its timers, the change feed's connection, storage); one
    // that never got ready may hold a step that never settles, so its storage alone.
    if (app !== undefined && ready) await app.close().catch(() => undefined);
    else await store.close().catch(() => undefined);
    throw err;
  }
  // Registered in the fleet once listening (src/lifecycle.ts): the first heartbeat is done by now.
  await app.infracat.fleet.start();
  logger.info(
    { url, storage: describeDatabase(config.database), startup_ms: Math.round(performance.now() - started) },
    'infracat listening',
  );

  return {
    app,
    url,
    drain: () => drain.start(),
    close: async () => {
      // A drained instance lets its clients close their connections first; the app's own close
      // would destroy idle ones (perhaps carrying a request already) and refuse new requests.
      if (drain.active) await drain.letGo(app.server, config.shutdownDrainMs);
      await app.close();
    },
  };
}

/**
 * The first start of a database mints one admin token and shows it once on stderr (not
 * through the logger, so it never lands in log storage). Exactly one instance wins,
 * even when several start together on one PostgreSQL. No later start mints one, even
 * with no token left (deleting every token must not conjure a new admin): it says so
 * and names the recovery command.
 */
async function bootstrapAdminToken(app: App, logger: Logger, mint: boolean): Promise<void> {
  const service = app.infracat.tokens.service;
  const issued = await service.bootstrapAdmin(mint);
  if (issued === null) {
    if ((await service.list(OPERATOR_ACCOUNT_ID, { perPage: 1 })).items.length === 0) {
      logger.warn(
        'no live API token exists and this start mints none ' +
          '(the bootstrap admin token is minted only on the first start of a database, ' +
          'when BOOTSTRAP_ADMIN_TOKEN is true); ' +
          'create one with: infracat tokens create --name NAME --all-scopes',
      );
    }
    return;
  }
  logger.info(
    { token_id: issued.token.id, scopes: issued.token.scopes },
    'minted the bootstrap admin token (secret printed once to stderr)',
  );
  process.stderr.write(
    [
      '',
      'infracat: this is the first start of this database, so an admin token holding every scope was created.',
      'It is shown this once and never minted again; store it in a secret manager now. ' +
        '(Set BOOTSTRAP_ADMIN_TOKEN=false to skip this.)',
      '',
      `  id:    ${issued.token.id}`,
      `  token: ${issued.secret}`,
      '',
      '',
    ].join('\n'),
  );
}

/** `infracat serve`: start, then stay up until a signal. */
export async function serve(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  const server = await startServer(config, logger);
  closeWithGrace({ delay: config.shutdownTimeoutMs, logger }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'fatal error, shutting down');
    else logger.info({ signal }, 'shutting down');
    // A process in an unknown state (a fatal error) stops at once; a signalled one drains
    // first (src/http/drain.ts), so that no client request meets a closing connection.
    if (err === undefined && config.shutdownDrainMs > 0) {
      server.drain();
      logger.info({ drain_ms: config.shutdownDrainMs }, 'draining: /readyz answers 503, all else is served as usual');
      await sleep(config.shutdownDrainMs);
      logger.info('draining: no new connections; each answer closes its connection; waiting for clients to let go');
    } else {
      logger.info('stopping: no new connections; waiting for in-flight requests');
    }
    await server.close();
    logger.info('shutdown complete');
    logger.flush();
  });
  // Log lines are written in batches (src/logging.ts): whoever waits for "infracat
  // listening" (an orchestrator, an operator) sees it now, once signals are handled.
  logger.flush();
}
