// LISTEN for the changes other instances announce (../changes.ts), on a connection of its
// own: a pooled connection cannot hold a LISTEN (it goes back to the pool), and PgBouncer
// in transaction mode drops one, hence DATABASE_NOTIFY_URL for a direct, session-mode
// connection when a pooler sits in front.
//
// The connection is kept up for as long as the watch runs: when it breaks (server
// restart, network, pg_terminate_backend) it reconnects with exponential backoff and
// jitter; a probe every PROBE_MS notices a connection that died silently. Changes made
// while it was down were missed, so every (re)connection is followed by a resync. While it
// is down nothing else suffers: verifications still expire after TOKEN_CACHE_TTL_MS and
// the catalog is still polled every CATALOG_REFRESH_MS, and readiness does not depend on it.
import pg from 'pg';
import { CHANGE_CHANNEL, decodeChange, RESYNC } from '../changes.js';
import type { ChangeHandlers, ChangeWatch } from '../types.js';

export interface ListenerOptions {
  url: string;
  /** Connect and probe time-out (DATABASE_TIMEOUT_MS). */
  timeoutMs: number;
}

/** First retry after this long, doubling up to MAX_BACKOFF_MS (each with up to 50% jitter). */
const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;
/** How often an idle listening connection proves it is still alive. */
const PROBE_MS = 5000;

export function listen(options: ListenerOptions, handlers: ChangeHandlers): ChangeWatch {
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let probe: NodeJS.Timeout | undefined;
  let failures = 0;
  /** The client of the connection attempt in flight, if any (stop() ends it at once). */
  let attempt: pg.Client | undefined;

  const schedule = (err: unknown): void => {
    if (stopped || retry !== undefined) return;
    if (probe !== undefined) clearInterval(probe);
    probe = undefined;
    const old = client;
    client = undefined;
    old?.removeAllListeners('notification');
    // end() on a broken client still settles; its errors are this failure, already told.
    void old?.end().catch(() => undefined);
    if (failures === 0) handlers.disconnected?.(err);
    const backoff = Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** failures);
    failures += 1;
    retry = setTimeout(
      () => {
        retry = undefined;
        void connect();
      },
      backoff * (1 + Math.random() / 2),
    );
    retry.unref();
  };

  const connect = async (): Promise<void> => {
    const next = new pg.Client({
      connectionString: options.url,
      connectionTimeoutMillis: options.timeoutMs,
      query_timeout: options.timeoutMs,
      keepAlive: true,
      application_name: 'infracat-listen',
    });
    // Without a listener an error event would crash the process; any error means reconnect.
    next.on('error', (err) => {
      if (client === next) schedule(err);
    });
    next.on('end', () => {
      if (client === next) schedule(new Error('the listening connection ended'));
    });
    next.on('notification', (msg) => {
      if (msg.channel === CHANGE_CHANNEL) handlers.change(decodeChange(msg.payload));
    });
    attempt = next;
    try {
      await next.connect();
      await next.query(`LISTEN ${CHANGE_CHANNEL}`);
    } catch (err) {
      next.removeAllListeners('notification');
      void next.end().catch(() => undefined);
      schedule(err);
      return;
    } finally {
      attempt = undefined;
    }
    if (stopped) {
      await next.end().catch(() => undefined);
      return;
    }
    client = next;
    failures = 0;
    handlers.connected?.();
    // Whatever changed while not listening (or before this start) was not heard.
    handlers.change(RESYNC);
    probe = setInterval(() => {
      next.query('SELECT 1').catch((err: unknown) => {
        if (client === next) schedule(err);
      });
    }, PROBE_MS);
    probe.unref();
  };

  void connect();
  return {
    async stop() {
      stopped = true;
      if (retry !== undefined) clearTimeout(retry);
      if (probe !== undefined) clearInterval(probe);
      // An attempt in flight (a server that does not answer) is cut short, not waited for:
      // pg's end() of a client still connecting only half-closes its socket and settles
      // when the server answers, which a black-holed server never does.
      attempt?.connection.stream.destroy();
      const last = client;
      client = undefined;
      await last?.end().catch(() => undefined);
    },
  };
}
