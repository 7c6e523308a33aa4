// Background purges: a job that deletes what has outlived its retention (expired tokens
// after TOKEN_EXPIRED_RETENTION_DAYS, audit events after AUDIT_RETENTION_DAYS), run at
// start and then every interval, off the request path, so the tables stop growing.
// Several instances purging at once is harmless (the same idempotent DELETEs); a failed
// run is retried at the next tick.
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
