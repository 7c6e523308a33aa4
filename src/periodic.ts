// Background purges: a job that deletes what has outlived its retention (expired tokens
// after TOKEN_EXPIRED_RETENTION_DAYS, audit events after AUDIT_RETENTION_DAYS), run once
// the instance listens and then every interval, off the request path, so the tables stop
// growing.
// Several instances purging at once is harmless (the same idempotent DELETEs); a failed
// run is retried at the next tick. A run is short batches (inBatches), each an index range
// (test/storage/query-plans.test.ts), with a turn of the event loop before each: a backlog
// of any size never holds a start, a request or a timer for longer than one batch.
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Runs `batch` (which deletes at most `size` rows and resolves to how many) until one
 * deletes fewer than `size`; resolves to the total. Each batch waits for a later turn of
 * the event loop: on SQLite a batch is synchronous work, and batches chained by promises
 * alone would run back to back before any I/O, so a run would hold every request (and the
 * first health check) until the whole backlog was gone. Between batches, connections are accepted,
 * requests answered and timers fired.
 */
export async function inBatches(size: number, batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    await nextTurn();
    const done = await batch();
    total += done;
    if (done < size) return total;
  }
}

export interface PurgeOptions {
  intervalMs: number;
  /** One run; resolves to how many rows it deleted. */
  purge: () => Promise<number>;
  onPurged?: (count: number) => void;
  onError?: (err: unknown) => void;
}

export const PURGE_INTERVAL_MS = 3_600_000;

export class PeriodicPurge {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly options: PurgeOptions) {}

  start(): void {
    if (this.timer !== undefined) return;
    void this.run();
    this.timer = setInterval(() => void this.run(), this.options.intervalMs);
    this.timer.unref();
  }

  /** One purge; concurrent calls share it. */
  run(): Promise<void> {
    this.running ??= this.options
      .purge()
      .then(
        (count) => {
          if (count > 0) this.options.onPurged?.(count);
        },
        (err: unknown) => this.options.onError?.(err),
      )
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /** Resolves when no purge is running (the one started at start included). */
  async idle(): Promise<void> {
    await this.running;
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
