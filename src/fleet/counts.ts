// The fleet's rate-limit counts: what every instance admitted for a key (a token, an
// account, a client address) in its current window, shared through storage so that a
// limit holds across the fleet whichever instances a client's requests reach.
//
// A request never waits for storage: each instance counts in memory and judges on the
// fleet total it last learnt plus what it counted since (its pending count). Every
// RATE_LIMIT_SYNC_MS it adds its pending counts to the shared counters, one batched
// UPSERT (RateCounterStore.add), and learns the fleet totals back. A key this instance
// has not synced within the last interval (new to it, or a client that moved here) is
// synced at once, in the background: the total reaches this instance within a round trip.
//
// Between two syncs an instance takes at most its part of what the fleet had left (its
// allowance): the part of the key's recent requests that reached it (a client pinned to
// one instance: all of the remainder; spread over three: a third), at least 1/N of it;
// before it ever learnt the key's total, its share of the whole quota (shareOf); when what
// it learnt is outdated (a client back from other instances), an even part. So a
// burst spread over the fleet stays near the limit, and a pinned client gets all of it.
// What the fleet may admit beyond the limit is what reaches the instances before they
// learn the total has been reached: at most the client's requests of about one interval
// (instances × per-instance rate × RATE_LIMIT_SYNC_MS), plus one unit per instance.
//
// Alone (the fleet registry counts one instance: the embedded default, a lone PostgreSQL
// instance) nothing is written: the local counts are exact. When another instance joins,
// this one's counts of the current windows are added at its first sync after its
// heartbeat has seen the newcomer (within INSTANCE_HEARTBEAT_MS).
//
// While storage fails (a sync rejects), each instance falls back to its share of each
// limit, counted locally (the quota split among the instances it last counted): fail
// safe, never more than the limit across the fleet, a pinned client gets 1/N of it. Its
// pending counts are kept and added once storage answers again.
//
// The counters of ended windows are deleted in bounded batches (by the window_end index),
// by every instance that syncs.
import { LRUCache } from 'lru-cache';
import { countBound } from '../bounded.js';
import type { RateCount, RateCounterStore } from '../storage/types.js';
import { shareOf, type FleetView } from './registry.js';

/** How often an instance adds its counts to the fleet's and learns the totals back. */
export const RATE_LIMIT_SYNC_MS = 200;
/** A key's first request after this long without a sync is synced at once (in the background). */
const STALE_AFTER_MS = RATE_LIMIT_SYNC_MS;
/**
 * What an instance learnt of a key this long ago no longer tells where its client is: it
 * may have moved away and spent the rest of its limit elsewhere. Two intervals, so that a
 * client that stays here, synced every interval, is never judged on it.
 */
const OUTDATED_AFTER_MS = 2 * RATE_LIMIT_SYNC_MS;
/** Background syncs for new or stale keys start at least this far apart (a flood of new keys batches). */
const EAGER_GAP_MS = 20;
/** Dead counters deleted per statement; a full batch is followed by another at the next sync. */
export const PRUNE_BATCH = 1000;
/** How often a sync also deletes dead counters, when the last batch was not full. */
const PRUNE_EVERY_MS = 10_000;

/** One key's count in its current window, as this instance knows it. */
interface Counter {
  key: string;
  /** The end of the key's current window (epoch ms), the same on every instance. */
  windowEnd: number;
  /** windowOffset(key): kept, so a new window of the key costs no hash. */
  offset: number;
  /** The fleet's total at the last sync (this instance's synced counts included). */
  known: number;
  /** Admitted here since the counts now being (or last) added; a 304's unit given back makes it smaller. */
  pending: number;
  /** Being added by the sync in flight (taken out of pending when it succeeds). */
  inFlight: number;
  /** Admitted here in this window, synced or not: the local share's count while storage fails. */
  mine: number;
  /**
   * This instance's part of the key's requests in the last synced interval (0..1); null
   * before the first sync of the window (the allowance is then the share of the quota).
   */
  part: number | null;
  /**
   * What the other instances added between this instance's last two syncs of the key: about
   * what they have counted and not yet added by now (0 until two syncs tell it).
   */
  others: number;
  /** The key's quota as last judged (an account's may change). */
  quota: number;
  /** When this key was last synced (epoch ms); 0: never in this window. */
  syncedAt: number;
}

export interface FleetCountsOptions {
  /** The shared counters; null: none (this instance counts alone, whatever the fleet). */
  store: RateCounterStore | null;
  fleet: FleetView;
  windowMs: number;
  /** Most keys tracked at once; the least recently used go first. Also the bound of a sync's batch. */
  maxKeys: number;
  /** A sync failed (the counts stay pending; meanwhile each instance enforces its share). */
  onError?: (err: unknown) => void;
  now?: () => number;
}

/** A key's judgement: whether a unit may be taken, what the fleet still admits, and the window's end. */
export interface Verdict {
  allowed: boolean;
  /** What the client can still expect across the fleet; 0 when this instance refuses the next request. */
  remaining: number;
  /** Seconds until the window ends (at least 1). */
  resetS: number;
  /** The counter to take the unit from (take()). */
  counter: Counter;
}

/**
 * Where a key's windows start within the window length: the same for a key on every
 * instance (FNV-1a of its text, nothing per process), spread over the window across keys,
 * so every instance's window for a client starts and ends at the same moment while
 * different clients' windows do not all reset at once.
 */
export function windowOffset(key: string, windowMs: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % windowMs;
}

/** The end of the window holding `now`, for windows of `windowMs` starting at `offset` past each multiple. */
export function windowEnd(now: number, windowMs: number, offset: number): number {
  return Math.floor((now - offset) / windowMs) * windowMs + offset + windowMs;
}

export class FleetCounts {
  readonly stats = {
    /** Syncs that added counts and learnt totals. */
    syncs: 0,
    /** Syncs that failed (their counts stay pending). */
    failures: 0,
    /** Dead counters deleted. */
    pruned: 0,
  };
  private readonly counters: LRUCache<string, Counter>;
  /** Keys counted or asked about since their last sync. */
  private readonly dirty = new Set<string>();
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private eager: NodeJS.Timeout | undefined;
  private lastSyncAt = Number.NEGATIVE_INFINITY;
  private nextPruneAt = 0;
  /** The last sync failed: each instance enforces its local share until one succeeds. */
  private failing = false;
  /** The last sync found other instances: counts were shared. */
  private shared = false;
  private stopped = false;

  constructor(private readonly options: FleetCountsOptions) {
    this.counters = new LRUCache<string, Counter>(countBound(options.maxKeys));
    this.now = options.now ?? Date.now;
  }

  /** Whether counts are shared now: a store, and other live instances. */
  private get sharing(): boolean {
    return this.options.store !== null && this.options.fleet.count > 1 && !this.stopped;
  }

  /** Syncs every RATE_LIMIT_SYNC_MS from now on (an instance that listens: src/lifecycle.ts). */
  start(): void {
    if (this.timer !== undefined || this.stopped || this.options.store === null) return;
    this.timer = setInterval(() => void this.sync(), RATE_LIMIT_SYNC_MS);
    this.timer.unref();
  }

  /** Stops syncing; waits for a sync in flight (storage closes next). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.eager !== undefined) clearTimeout(this.eager);
    this.timer = undefined;
    this.eager = undefined;
    await this.running;
  }

  /** Judges a request against `key`'s limit of `quota` per window: whether a unit may be taken (take() takes it). */
  judge(key: string, quota: number): Verdict {
    const now = this.now();
    const { windowMs } = this.options;
    let counter = this.counters.get(key);
    if (counter === undefined || now >= counter.windowEnd) {
      const offset = counter?.offset ?? windowOffset(key, windowMs);
      const end = windowEnd(now, windowMs, offset);
      counter = {
        key,
        windowEnd: end,
        offset,
        known: 0,
        pending: 0,
        inFlight: 0,
        mine: 0,
        part: null,
        others: 0,
        quota,
        syncedAt: 0,
      };
      this.counters.set(key, counter);
    }
    counter.quota = quota;
    const resetS = Math.max(1, Math.ceil((counter.windowEnd - now) / 1000));
    const fleet = this.options.fleet;
    const total = counter.known + counter.pending;
    // What this instance may still take before it learns more: the rest of the limit as far
    // as it knows, within its allowance (sharing) or its local share (storage failing).
    let left = quota - total;
    if (this.sharing) {
      if (this.failing) left = Math.min(left, shareOf(quota, fleet) - counter.mine);
      else left = Math.min(left - counter.others, this.allowance(counter, quota, now) - counter.pending);
      this.dirty.add(key);
      if (now - counter.syncedAt >= STALE_AFTER_MS) this.soon();
    }
    const allowed = left > 0;
    // r: across the fleet, what the last total leaves; 0 when this instance refuses the next one.
    const remaining = left - (allowed ? 1 : 0) <= 0 ? 0 : Math.max(0, quota - total - (allowed ? 1 : 0));
    return { allowed, remaining, resetS, counter };
  }

  /** Takes the unit judge() allowed. */
  take(counter: Counter): void {
    counter.pending += 1;
    counter.mine += 1;
  }

  /** Gives a taken unit back (a 304); nothing when the counter's window has ended. */
  giveBack(counter: Counter): void {
    if (this.now() >= counter.windowEnd) return;
    counter.pending -= 1;
    counter.mine = Math.max(0, counter.mine - 1);
  }

  /**
   * What `counter` may take between two syncs: its part of what the fleet had left (less
   * what the others have likely counted since), or its share of the quota before it knew.
   * A client back after a while elsewhere finds an outdated part (all of it, when it was
   * pinned here before): until the sync its request started answers, the instance takes
   * no more than an even part of what it knew was left.
   */
  private allowance(counter: Counter, quota: number, now: number): number {
    const fleet = this.options.fleet;
    if (counter.part === null) return shareOf(quota, fleet);
    const even = 1 / Math.max(1, fleet.count);
    const part = now - counter.syncedAt >= OUTDATED_AFTER_MS ? even : Math.max(counter.part, even);
    return Math.max(1, Math.ceil(Math.max(0, quota - counter.known - counter.others) * part));
  }

  /** A background sync soon (a new or stale key), at most one in flight and EAGER_GAP_MS apart. */
  private soon(): void {
    if (this.eager !== undefined || this.stopped) return;
    const wait = Math.max(0, this.lastSyncAt + EAGER_GAP_MS - this.now());
    this.eager = setTimeout(() => {
      this.eager = undefined;
      void this.sync();
    }, wait);
    this.eager.unref();
  }

  /** One sync; concurrent calls share it. Never rejects. */
  sync(): Promise<void> {
    this.running ??= this.once().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async once(): Promise<void> {
    const store = this.options.store;
    if (store === null || !this.sharing) {
      this.dirty.clear();
      this.shared = false;
      this.failing = false;
      return;
    }
    const now = this.now();
    this.lastSyncAt = now;
    // After a join, every key counted while this instance was alone (their pending counts
    // hold everything since their windows began); then the keys counted since the last sync.
    const keys = this.shared ? [...this.dirty] : [...this.counters.keys()];
    this.shared = true;
    this.dirty.clear();
    const batch: Counter[] = [];
    for (const key of keys) {
      const counter = this.counters.peek(key);
      // Its window ended (its counts are of no use now), or it was evicted (bounded memory).
      if (counter === undefined || now >= counter.windowEnd) continue;
      counter.inFlight = counter.pending;
      batch.push(counter);
    }
    if (batch.length > 0) {
      let totals: RateCount[];
      try {
        totals = await store.add(batch.map((c) => ({ key: c.key, windowEnd: c.windowEnd, n: c.inFlight })));
      } catch (err) {
        for (const c of batch) {
          c.inFlight = 0;
          this.dirty.add(c.key);
        }
        this.stats.failures += 1;
        this.failing = true;
        this.options.onError?.(err);
        return;
      }
      const byKey = new Map(totals.map((t) => [`${t.windowEnd}:${t.key}`, t.n]));
      for (const c of batch) {
        const total = byKey.get(`${c.windowEnd}:${c.key}`);
        const added = c.inFlight;
        c.inFlight = 0;
        if (total === undefined) continue;
        // A window that ended meanwhile started a new counter: this one is no longer tracked.
        if (this.counters.peek(c.key) !== c) continue;
        const others = total - c.known - added;
        const first = c.syncedAt === 0;
        c.part = first ? (total > 0 ? added / total : 1) : added + others > 0 ? added / (added + others) : c.part;
        // The first sync of the window knows only the total so far, not what the others
        // counted and have not added yet: assume they used their shares (a burst spread over
        // the fleet); from the second on, what they added in between.
        c.others = first
          ? Math.max(0, c.quota - shareOf(c.quota, this.options.fleet) - (total - added))
          : Math.max(0, others);
        c.known = total;
        c.pending -= added;
        c.syncedAt = now;
      }
      this.stats.syncs += 1;
    }
    this.failing = false;
    if (now >= this.nextPruneAt) {
      try {
        // Ended more than a window ago: an instance whose clock lags a little still adds to live rows.
        const deleted = await store.prune(now - this.options.windowMs, PRUNE_BATCH);
        this.stats.pruned += deleted;
        this.nextPruneAt = deleted >= PRUNE_BATCH ? now : now + PRUNE_EVERY_MS;
      } catch (err) {
        this.nextPruneAt = now + PRUNE_EVERY_MS;
        this.options.onError?.(err);
      }
    }
  }
}
