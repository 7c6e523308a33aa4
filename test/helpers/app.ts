// build(t): a ready-to-inject app on a fresh SQLite file (or a given store), with its
// log lines captured so tests can assert what was (and was not) logged.
import { Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { App } from '../../src/http/types.js';
import { createLogger } from '../../src/logging.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import type { Store } from '../../src/storage/types.js';
import { tempDir } from './sqlite.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { TEST_CONTEXT } from './audit.js';
import { parseExposition, value } from './prometheus.js';
import type { Resolver } from '../../src/webhooks/targets.js';

export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.lines.push(
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== ''),
    );
    done();
  }
  get text(): string {
    return this.lines.join('\n');
  }
  records(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

export interface Built {
  app: App;
  store: Store;
  logs: LogCapture;
  config: Config;
}

export interface BuildOptions {
  store?: Store;
  env?: Record<string, string>;
  /** A controllable clock for token rules. */
  now?: () => number;
  /**
   * Registers extra (test-only) routes before the app is readied: in a plugin after the
   * app's own, so they get what every route gets (authentication, the rate limit).
   */
  extend?: (app: App) => void;
  /** How webhook target names resolve (the system resolver when absent). */
  webhookResolver?: Resolver;
}

export async function build(t: TestContext, options: BuildOptions = {}): Promise<Built> {
  const tmp = tempDir();
  const config = loadConfig({
    DATABASE_URL: `sqlite:${tmp.file()}`,
    LOG_LEVEL: 'info',
    BOOTSTRAP_ADMIN_TOKEN: 'false',
    ...options.env,
  });
  const store = options.store ?? new SqliteStore({ path: tmp.file(), busyTimeoutMs: 2000 });
  await store.migrate().catch((err: unknown) => {
    if (options.store === undefined) throw err; // a given (possibly broken) store may fail
  });
  const logs = new LogCapture();
  const app = buildApp({
    config,
    store,
    logger: createLogger(config.logLevel, logs),
    ...(options.now ? { now: options.now } : {}),
    ...(options.webhookResolver ? { webhookResolver: options.webhookResolver } : {}),
  });
  const { extend } = options;
  if (extend !== undefined) {
    void app.register((routes, _options, done) => {
      extend(routes);
      done();
    });
  }
  // Ready, never listening: the background purges start only once an app listens
  // (src/lifecycle.ts), so a test runs them when it means to (run(), or listen()).
  await app.ready();
  t.after(async () => {
    await app.close();
    tmp.remove();
  });
  return { app, store, logs, config };
}

/** A token minted by the operator path (no escalation check), for driving the API. */
export async function mintToken(
  app: App,
  scopes: string[],
  name = 'test',
): Promise<{ id: string; secret: string; auth: { authorization: string } }> {
  const { token, secret } = await app.infracat.tokens.service.create(
    { name, scopes },
    null,
    OPERATOR_ACCOUNT_ID,
    TEST_CONTEXT,
  );
  return { id: token.id, secret, auth: { authorization: `Bearer ${secret}` } };
}

export const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';

/**
 * Waits until the app hears changes and has taken in the resync that follows (a dropped
 * verification cache, a catalog refresh). On PostgreSQL the change feed connects after
 * start, so that resync reads storage at a moment of its own: a test that counts storage
 * queries calls this first.
 */
export async function changeFeedSettled(app: App, deadlineMs = 10_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  const resyncs = async () =>
    value(
      parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body),
      'infracat_change_feed_changes_total',
      {
        kind: 'resync',
      },
    ) ?? 0;
  while ((await resyncs()) < 1) {
    if (Date.now() > end) throw new Error('the change feed did not connect');
    await new Promise((r) => setTimeout(r, 10));
  }
  await app.infracat.catalog.refresh(); // shares the resync's refresh if it still runs
}
