// Failed authentications per client address, in fixed windows. Past the limit every
// authentication attempt from that address answers 429 until the window ends, which
// makes guessing secrets (or hammering storage with well-formed fakes) pointless.
// Memory is bounded: at most `maxKeys` addresses are tracked, oldest dropped first.

interface Window {
  failures: number;
  resetAt: number;
}

export class FailureLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys = 100_000,
  ) {}

  /** Seconds to wait when `key` is over the limit, else 0. */
  retryAfter(key: string, now: number): number {
    const w = this.windows.get(key);
    if (w === undefined || now >= w.resetAt || w.failures < this.limit) return 0;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  fail(key: string, now: number): void {
    let w = this.windows.get(key);
    if (w === undefined || now >= w.resetAt) {
      w = { failures: 0, resetAt: now + this.windowMs };
      this.windows.delete(key);
      this.windows.set(key, w);
      while (this.windows.size > this.maxKeys) {
        const oldest = this.windows.keys().next().value;
        if (oldest === undefined) break;
        this.windows.delete(oldest);
      }
    }
    w.failures += 1;
  }
}
