// The verification cache: SHA-256 -> token record, bounded (least recently used go first)
// and short-lived, over lru-cache. An entry is trusted for `ttlMs` from when its storage
// read began; after that the next verification reads again, so a delete made on another
// instance takes effect within `ttlMs`. Deletes on this instance evict at once.
//
// Loads go through lru-cache's fetch(): concurrent verifications of one hash share one
// storage read (when a busy token's entry expires, its burst costs one round trip). Only
// found tokens are kept: an unknown hash is not cached (a flood of made-up secrets must
// not push real tokens out; the failure limiter remembers unknown hashes per window).
//
// An entry carries its account's status (read with the token, one statement): suspending,
// resuming or deleting an account evicts that account's entries on this instance at once
// (evictAccount). Other instances hear of every such change within about a second
// (src/fleet/changes.ts) and evict too; `ttlMs` bounds staleness only while they cannot hear.
import { LRUCache } from 'lru-cache';
import { countBound } from '../bounded.js';
import type { TokenWithAccount } from '../storage/types.js';

/** A storage error, told apart from lru-cache's rejection of an aborted load (see load()). */
class ReadFailed extends Error {}

/**
 * Told when entries are forgotten because a token or an account changed (not when one
 * expires or makes room, nor at a resync, which says only that anything may have changed):
 * what is kept in memory beside a token's verification (its signed access token,
 * src/oauth/phantom.ts) goes with it.
 */
export interface EvictionListener {
  token(id: string): void;
  account(accountId: string): void;
}

export class VerificationCache {
  hits = 0;
  misses = 0;
  private readonly lru: LRUCache<string, TokenWithAccount>;
  /** Hashes whose storage read is in flight (evictAccount cannot know their account yet). */
  private readonly loading = new Set<string>();
  /**
   * The cached hashes of each token id (one secret, two during a grace period): a change
   * announced by id (another instance deleted or rotated it) evicts without a walk.
   */
  private readonly hashesById = new Map<string, string[]>();
  private readonly listeners: EvictionListener[] = [];

  /**
   * `read` looks a hash up in storage (null: unknown). `ttlMs` 0 turns caching off but still
   * lets concurrent loads share a read. `clock` (ms, monotonic by default) is for tests.
   */
  constructor(
    max: number,
    private readonly ttlMs: number,
    read: (hash: string) => Promise<TokenWithAccount | null>,
    clock: () => number = () => performance.now(),
  ) {
    this.lru = new LRUCache<string, TokenWithAccount>({
      ...countBound(max),
      // lru-cache reads ttl 0 as "never expires": with caching off nothing is served (get()
      // answers a miss, loads force a read), and entries kept meanwhile are never trusted.
      ttl: ttlMs,
      // Staleness is checked against a fresh clock reading (the default caches it for 1 ms
      // with a timer): no timer on the verification path.
      ttlResolution: 0,
      perf: { now: clock },
      // A load whose key is deleted or evicted while its read runs still answers the
      // verifications that were waiting for it (they began before the delete), but its
      // result is not cached, and later loads do not join it: lru-cache drops the key, so
      // a delete is never undone by a read that began before it.
      ignoreFetchAbort: true,
      onInsert: (token, hash) => {
        if (token instanceof Promise) return; // a load in flight, not an entry
        const hashes = this.hashesById.get(token.id);
        if (hashes === undefined) this.hashesById.set(token.id, [hash]);
        else if (!hashes.includes(hash)) hashes.push(hash);
      },
      dispose: (token, hash) => {
        if (token instanceof Promise) return;
        const hashes = this.hashesById.get(token.id)?.filter((h) => h !== hash);
        if (hashes === undefined || hashes.length === 0) this.hashesById.delete(token.id);
        else this.hashesById.set(token.id, hashes);
      },
      fetchMethod: async (hash, _stale, { options }) => {
        const started = clock();
        let token: TokenWithAccount | null;
        this.loading.add(hash);
        try {
          token = await read(hash);
        } catch (err) {
          throw new ReadFailed('storage read failed', { cause: err });
        } finally {
          this.loading.delete(hash);
        }
        // Trusted for ttlMs from when the read began, as a delete it missed may be that old.
        if (ttlMs > 0) options.ttl = Math.max(1, ttlMs - (clock() - started));
        // undefined: lru-cache keeps nothing for the key.
        return token ?? undefined;
      },
    });
  }

  /** The cached token of `hash` (made the most recently used), counted as a hit or a miss (metrics). */
  get(hash: string): TokenWithAccount | undefined {
    const token = this.ttlMs > 0 ? this.lru.get(hash) : undefined;
    if (token === undefined) this.misses += 1;
    else this.hits += 1;
    return token;
  }

  /**
   * The token of `hash`, from memory when fresh (a load that waited at the failure
   * limiter's gate may find it there), else from the storage read in flight for it, or
   * from a new one. Storage errors propagate.
   */
  async load(hash: string): Promise<TokenWithAccount | null> {
    try {
      const token = await (this.ttlMs > 0 ? this.lru.fetch(hash) : this.lru.fetch(hash, { forceRefresh: true }));
      return token ?? null;
    } catch (err) {
      if (err instanceof ReadFailed) throw err.cause;
      // With ignoreFetchAbort, lru-cache rejects an aborted load only when its read found
      // nothing: the hash was unknown.
      return null;
    }
  }

  /**
   * Forgets a deleted token: the entry of `hash` and any load of it in flight, or, when
   * the hash is not known (storage had already lost the token), every entry of `id` in
   * account `accountId`.
   */
  evict(id: string, hash: string | undefined, accountId: string): void {
    for (const listener of this.listeners) listener.token(id);
    if (hash !== undefined) {
      this.lru.delete(hash);
      return;
    }
    for (const key of [...(this.hashesById.get(id) ?? [])])
      if (this.lru.peek(key)?.accountId === accountId) this.lru.delete(key);
  }

  /**
   * Forgets a token another instance changed (its hashes are not known here): every entry
   * of `id` and every load in flight, as a read that began before the change must not
   * cache what it found (see evictAccount).
   */
  evictChanged(id: string, accountId: string): void {
    for (const key of [...this.loading]) this.lru.delete(key);
    this.evict(id, undefined, accountId);
  }

  /** Forgets everything, loads in flight included: anything may have changed (a resync). */
  clear(): void {
    this.lru.clear();
  }

  /**
   * Forgets every entry of an account whose status changed or that was deleted, and every
   * load in flight (which account a load is for is known only when its read returns; an
   * unrelated one merely goes uncached): a read that began before the change never
   * caches the old status. Walks the cache: an operator action, not a request path.
   */
  evictAccount(accountId: string): void {
    const hashes = [...this.loading];
    for (const [key, token] of this.lru.entries()) if (token.accountId === accountId) hashes.push(key);
    for (const key of hashes) this.lru.delete(key);
    for (const listener of this.listeners) listener.account(accountId);
  }

  /** Adds a listener told of every change-driven eviction from now on. */
  onEvict(listener: EvictionListener): void {
    this.listeners.push(listener);
  }

  get size(): number {
    return this.lru.size;
  }
}
