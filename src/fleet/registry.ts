// The fleet registry: how many infracat instances are running on this database, so each
// can enforce its share of a fleet-wide rate limit with no storage access per request.
// Every instance refreshes its row in `instances` (migration 7) every heartbeat and reads
// back how many rows are live and where its own id sorts among them; the request path
// reads that from memory. A row counts while its expires_at (the heartbeat's time plus
// STALE_AFTER_BEATS intervals) is ahead of the clock: a graceful stop deletes it (the
// others rebalance at their next heartbeat); a crashed instance's row stops counting
// once it expires and is pruned an hour later.
//
// A failed heartbeat keeps the last known view: falling back to "alone" during an
// outage would let every instance allow the whole limit, N times the fleet's; nor does
// the first heartbeat after an outage shrink the count (see once()). The
// clocks of the instances are compared (expiries, aligned windows): keep them in sync
// (NTP), as any fleet does.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { InstanceStore, LiveInstances } from '../storage/types.js';

/** An instance stops counting this many heartbeat intervals after its last heartbeat. */
export const STALE_AFTER_BEATS = 3;
/** Rows of instances that died without leaving are deleted this long after they expired. */
export const DEAD_ROW_RETENTION_MS = 3_600_000;
/** How often a heartbeat also prunes dead rows. */
const PRUNE_EVERY_MS = 600_000;

/** What the registry last learnt: live instances (at least this one) and this one's rank among them. */
export type FleetView = Readonly<LiveInstances>;

/** What failed: a heartbeat (the view is kept), pruning dead rows, or deleting this row at stop. */
export type FleetOperation = 'heartbeat' | 'prune' | 'leave';

export interface FleetRegistryOptions {
  store: InstanceStore;
  /** INSTANCE_HEARTBEAT_MS. */
  heartbeatMs: number;
  onError?: (err: unknown, failed: FleetOperation) => void;
  /** The number of live instances changed (not called for the first heartbeat's count when it is 1). */
  onChange?: (count: number, previous: number) => void;
}

export class FleetRegistry implements FleetView {
  /** Random per process: a restarted instance is a new one (its old row, if any, expires). */
  readonly id = `ins_${randomBytes(10).toString('hex')}`;
  readonly stats = {
    /** Heartbeats that refreshed the view. */
    beats: 0,
    /** Heartbeats that failed (the view stayed as it was). */
    failures: 0,
    /** When the last successful heartbeat started (epoch ms); 0 before the first. */
    lastBeatAt: 0,
  };
  private view: FleetView = { count: 1, rank: 0 };
  private readonly startedAt = Date.now();
  private readonly host = hostname();
  private timer: NodeJS.Timeout | undefined;
  /** The first heartbeat, once start() has been called. */
  private first: Promise<void> | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private lastPrunedAt = Number.NEGATIVE_INFINITY;
  /** The last heartbeat failed. */
  private failing = false;

  constructor(private readonly options: FleetRegistryOptions) {}

  /** Live instances, this one included (1 until the first heartbeat succeeds). */
  get count(): number {
    return this.view.count;
  }

  /** How many live instances sort before this one (0 .. count-1). */
  get rank(): number {
    return this.view.rank;
  }

  /**
   * Registers this instance: the first heartbeat (awaited: a started instance knows its
   * fleet), then one every interval. Called again, it returns the first heartbeat.
   */
  start(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.first === undefined) {
      this.timer = setInterval(() => void this.beat(), this.options.heartbeatMs);
      this.timer.unref();
      this.first = this.beat();
    }
    return this.first;
  }

  /** One heartbeat; concurrent calls share it (a slow database never piles them up). Never rejects. */
  beat(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.once().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Stops the heartbeats and deletes this instance's row, so the others take over its share. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    // A heartbeat still in flight would write the row back after the delete.
    await this.running;
    if (this.stats.beats === 0) return;
    try {
      await this.options.store.leave(this.id);
    } catch (err) {
      // The row expires by itself within STALE_AFTER_BEATS intervals.
      this.options.onError?.(err, 'leave');
    }
  }

  private async once(): Promise<void> {
    const now = Date.now();
    let live: LiveInstances;
    try {
      live = await this.options.store.heartbeat({
        id: this.id,
        host: this.host,
        pid: process.pid,
        startedAt: this.startedAt,
        heartbeatAt: now,
        expiresAt: now + STALE_AFTER_BEATS * this.options.heartbeatMs,
      });
    } catch (err) {
      this.stats.failures += 1;
      this.failing = true;
      this.options.onError?.(err, 'heartbeat');
      return;
    }
    const previous = this.view.count;
    // Its own row was just written: at least one, and a rank within the count. After an
    // outage longer than the staleness bound every row has expired, and the first
    // instances back would each see themselves nearly alone: the first count after a
    // failure may grow but not shrink (the others write their rows by the next heartbeat).
    const count = this.failing ? Math.max(previous, live.count, 1) : Math.max(1, live.count);
    this.failing = false;
    this.view = { count, rank: Math.min(Math.max(0, live.rank), count - 1) };
    this.stats.beats += 1;
    this.stats.lastBeatAt = now;
    if (count !== previous) this.options.onChange?.(count, previous);
    if (now - this.lastPrunedAt >= PRUNE_EVERY_MS) {
      this.lastPrunedAt = now;
      await this.options.store.prune(now - DEAD_ROW_RETENTION_MS).catch((err: unknown) => {
        this.options.onError?.(err, 'prune');
      });
    }
  }
}

/**
 * This instance's part of a fleet-wide quota: the quota split evenly, the remainder one
 * unit each to the instances of the lowest ranks, so the parts add up to exactly the
 * quota when the instances agree on the view. At least 1: a quota smaller than the
 * fleet cannot be split, and each instance then allows one request per window.
 */
export function shareOf(quota: number, view: FleetView): number {
  const n = Math.max(1, view.count);
  const rank = Math.min(Math.max(0, view.rank), n - 1);
  return Math.max(1, Math.floor(quota / n) + (rank < quota % n ? 1 : 0));
}
