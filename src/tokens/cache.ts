// The verification cache: SHA-256 -> token record, bounded (LRU) and short-lived.
// An entry is trusted for `ttlMs` after it was read from storage; after that the next
// verification re-reads it, so a delete made on another instance takes effect within
// `ttlMs`. Deletes on this instance evict at once.
import type { TokenRecord } from '../storage/types.js';

interface Entry {
  token: TokenRecord;
  fetchedAt: number;
}

export class VerificationCache {
  private readonly byHash = new Map<string, Entry>();
  /** Bumped by every eviction, so a storage read that began before one is not cached after it. */
  generation = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  get(hash: string, now: number): TokenRecord | undefined {
    const entry = this.byHash.get(hash);
    if (entry === undefined || now - entry.fetchedAt >= this.ttlMs) {
      if (entry !== undefined) this.byHash.delete(hash);
      this.misses += 1;
      return undefined;
    }
    // Re-insert to mark as most recently used (Map keeps insertion order).
    this.byHash.delete(hash);
    this.byHash.set(hash, entry);
    this.hits += 1;
    return entry.token;
  }

  /** Like get(), but neither counted as a hit or miss nor marked as used (a re-check). */
  peek(hash: string, now: number): TokenRecord | undefined {
    const entry = this.byHash.get(hash);
    return entry === undefined || now - entry.fetchedAt >= this.ttlMs ? undefined : entry.token;
  }

  set(hash: string, token: TokenRecord, now: number): void {
    this.byHash.delete(hash);
    this.byHash.set(hash, { token, fetchedAt: now });
    while (this.byHash.size > this.maxEntries) {
      const oldest = this.byHash.keys().next().value;
      if (oldest === undefined) break;
      this.byHash.delete(oldest);
    }
  }

  /** Drops every entry of the token id (after a delete on this instance). */
  evictId(id: string): void {
    this.generation += 1;
    for (const [hash, entry] of this.byHash) if (entry.token.id === id) this.byHash.delete(hash);
  }

  get size(): number {
    return this.byHash.size;
  }
}
