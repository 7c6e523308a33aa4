// last_used_at bookkeeping off the request path: uses are recorded in memory
// (latest time per token, with the client address of that use) and written in one batch per interval, so a token used a
// thousand times a second costs one row update per interval, and a batch is one
// statement per BATCH_ROWS tokens (storage's touch, which yields to the event loop between
// them). Storage keeps the max, so batches from several instances never move the time
// backwards. A failed flush keeps its entries for the next one; stop() flushes what is
// left. A use is in storage within an interval plus a flush's time: a flush of 10,000
// tokens takes well under one interval (scripts/bench-touch.ts).
import type { LastUsed, TokenStore } from '../storage/types.js';

export interface LastUsedOptions {
  intervalMs: number;
  onError?: (err: unknown) => void;
}

export class LastUsedTracker {
  private pendingUses = new Map<string, LastUsed>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Batches written and rows in them, for tests and metrics. */
  readonly stats = { flushes: 0, rows: 0, failures: 0 };

  constructor(
    private readonly store: Pick<TokenStore, 'touch'>,
    private readonly options: LastUsedOptions,
  ) {}

  record(id: string, at: number, ip: string | null = null): void {
    const prev = this.pendingUses.get(id);
    if (prev === undefined || at > prev.at) this.pendingUses.set(id, { id, at, ip });
  }

  /** A use not yet written, so reads on this instance can show it straight away. */
  pending(id: string): LastUsed | undefined {
    return this.pendingUses.get(id);
  }

  forget(id: string): void {
    this.pendingUses.delete(id);
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.flush(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Writes everything recorded so far as one batch. Concurrent calls share one flush. */
  flush(): Promise<void> {
    this.flushing ??= this.doFlush().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async doFlush(): Promise<void> {
    if (this.pendingUses.size === 0) return;
    const batch = this.pendingUses;
    this.pendingUses = new Map();
    try {
      await this.store.touch([...batch.values()]);
      this.stats.flushes += 1;
      this.stats.rows += batch.size;
    } catch (err) {
      this.stats.failures += 1;
      for (const use of batch.values()) this.record(use.id, use.at, use.ip ?? null);
      this.options.onError?.(err);
    }
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
    if (this.pendingUses.size > 0) await this.flush(); // entries re-queued by a failed flush
  }
}
