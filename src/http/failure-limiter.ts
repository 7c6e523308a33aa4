// Failed authentications per client address, in fixed windows, and the gate in front of
// the storage lookups of each address.
//
// What needs protecting is storage, not the secrets: a secret carries 160+ random bits
// (guessing is pointless) and a CRC32 checksum refuses random strings offline, but a
// crafted well-formed fake costs one storage lookup. Refusing every request from an
// address past the limit would let one bad client behind a shared NAT or CI egress lock
// out everyone else there, so instead:
// - An address may have at most as many lookups in flight as it has failures left in its
//   window, and always one: past the limit, its lookups run one at a time (the others
//   wait their turn), so a flood from one address occupies one storage connection.
// - A hash a lookup found unknown is remembered for the window, so repeating a fake costs
//   no lookup at all.
// - A valid token is answered from the verification cache, or after its turn at the gate:
//   never refused because others failed. auth.ts answers a failure from an address past
//   the limit with 429 + Retry-After, which tells a misbehaving client to back off.
// Addresses are counted as addressKey() says (src/http/client-key.ts): IPv6 by /64.
// Memory is bounded: at most `maxKeys` addresses and `maxUnknown` hashes are tracked
// (oldest dropped first: lru-cache, read with peek() so that only a new window or a new
// unknown hash counts as recent); a gate exists only while lookups of its address are in
// flight or waiting, and each waiter is a request the server is already holding.

import { LRUCache } from 'lru-cache';
import { countBound } from '../bounded.js';
import type { TokenWithAccount } from '../storage/types.js';
import type { LookupGate } from '../tokens/service.js';

interface Window {
  failures: number;
  resetAt: number;
}

interface Gate {
  inFlight: number;
  /** Turns waiting, first come first served: waiting[head] is next. */
  waiting: (() => void)[];
  head: number;
}

export class FailureLimiter {
  // Windows and remembered hashes expire by the `now` each call is given (tests drive it),
  // so lru-cache only bounds them; its own clock-based ttl is not used.
  private readonly windows: LRUCache<string, Window>;
  private readonly gates = new Map<string, Gate>();
  /** Hash -> when to forget that storage did not know it. */
  private readonly unknown: LRUCache<string, number>;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    maxKeys = 100_000,
    maxUnknown = 10_000,
  ) {
    this.windows = new LRUCache(countBound(maxKeys));
    this.unknown = new LRUCache(countBound(maxUnknown));
  }

  /** Seconds to wait when `key` is over the limit, else 0. */
  retryAfter(key: string, now: number): number {
    const w = this.windows.peek(key);
    if (w === undefined || now >= w.resetAt || w.failures < this.limit) return 0;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  /**
   * Counts a failed authentication. Returns the seconds to wait when `key` had already
   * used up its failures before this one (answer 429), else 0 (answer 401).
   */
  fail(key: string, now: number): number {
    const wait = this.retryAfter(key, now);
    let w = this.windows.peek(key);
    if (w === undefined || now >= w.resetAt) {
      w = { failures: 0, resetAt: now + this.windowMs };
      this.windows.set(key, w);
    }
    w.failures += 1;
    return wait;
  }

  /** The gate for the lookups of `key` (one client address). */
  gate(key: string, now: () => number): LookupGate {
    return async (hash: string, read: () => Promise<TokenWithAccount | null>): Promise<TokenWithAccount | null> => {
      if (this.knownUnknown(hash, now())) return null;
      await this.acquire(key, now);
      try {
        // Another request may have found this hash unknown while this one waited.
        if (this.knownUnknown(hash, now())) return null;
        const found = await read();
        if (found === null) this.rememberUnknown(hash, now());
        return found;
      } finally {
        this.release(key, now);
      }
    };
  }

  /** Tracked state, for tests of the memory bound. */
  get sizes(): { addresses: number; gates: number; unknown: number } {
    return { addresses: this.windows.size, gates: this.gates.size, unknown: this.unknown.size };
  }

  /** Lookups `key` may have in flight: the failures it has left in its window, at least one. */
  private allowance(key: string, now: number): number {
    const w = this.windows.peek(key);
    const failures = w === undefined || now >= w.resetAt ? 0 : w.failures;
    return Math.max(1, this.limit - failures);
  }

  private acquire(key: string, now: () => number): Promise<void> {
    let g = this.gates.get(key);
    if (g === undefined) {
      g = { inFlight: 0, waiting: [], head: 0 };
      this.gates.set(key, g);
    }
    if (g.head === g.waiting.length && g.inFlight < this.allowance(key, now())) {
      g.inFlight += 1;
      return Promise.resolve();
    }
    const queue = g.waiting;
    return new Promise((resolve) => queue.push(resolve));
  }

  private release(key: string, now: () => number): void {
    const g = this.gates.get(key);
    if (g === undefined) return;
    g.inFlight -= 1;
    // Handing a turn over counts it in flight at once, so no newcomer slips in between.
    while (g.head < g.waiting.length && g.inFlight < this.allowance(key, now())) {
      g.inFlight += 1;
      const next = g.waiting[g.head]!;
      g.head += 1;
      next();
    }
    if (g.head === g.waiting.length) {
      g.waiting = [];
      g.head = 0;
      if (g.inFlight === 0) this.gates.delete(key);
    } else if (g.head >= 1024 && g.head * 2 >= g.waiting.length) {
      // A queue that never drains (a steady flood) sheds the turns already given.
      g.waiting = g.waiting.slice(g.head);
      g.head = 0;
    }
  }

  private knownUnknown(hash: string, now: number): boolean {
    const until = this.unknown.peek(hash);
    if (until === undefined) return false;
    if (now < until) return true;
    this.unknown.delete(hash);
    return false;
  }

  private rememberUnknown(hash: string, now: number): void {
    this.unknown.set(hash, now + this.windowMs);
  }
}
