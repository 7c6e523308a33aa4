// Token usage bookkeeping off the request path, as last_used_at's (last-used.ts): each
// use is counted in memory in its token's cell of the hour, and the cells are added to
// storage in one batch per interval (LAST_USED_FLUSH_MS), one upsert per 1,000 cells
// (storage's addUsage). Storage adds, never replaces, so the batches of every instance
// sum. A cell is a handful of numbers; their number is bounded (maxPending): past it a
// flush starts at once and uses with no cell left are dropped and counted (metrics).
// A failed flush keeps the cells it did not store for the next one; stop() flushes what is left.
import type { FieldError } from '../errors.js';
import { UsageWriteError, type TokenStore, type UsageCell } from '../storage/types.js';
import { USAGE_SPAN_DEFAULT_DAYS, USAGE_SPAN_MAX_DAYS } from './limits.js';
import { parseTimestamp } from './rules.js';
import { AFTER_VERIFICATION, USAGE_OUTCOMES, type UsageOutcome, type UsageReason } from './usage-reasons.js';

export const HOUR_MS = 3_600_000;

/** Most cells pending at once: 100,000 tokens used in one interval, a few MB of memory. */
export const USAGE_MAX_PENDING = 100_000;

const INDEX = Object.fromEntries(USAGE_OUTCOMES.map((o, i) => [o, i])) as Record<UsageOutcome, number>;

/** The start of the hour holding `at` (epoch milliseconds). */
export function hourOf(at: number): number {
  return at - (((at % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

export interface UsageOptions {
  intervalMs: number;
  maxPending?: number;
  onError?: (err: unknown) => void;
}

export class UsageTracker {
  /** Each token's cell of the hour it was last used in: a use costs one lookup by id. */
  private current = new Map<string, UsageCell>();
  /** Cells of earlier hours, not yet flushed. */
  private older: UsageCell[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private readonly maxPending: number;
  /** Batches written, cells in them, failures and uses dropped for want of a cell (metrics). */
  readonly stats = { flushes: 0, cells: 0, failures: 0, dropped: 0 };
  /** Uses counted since start, by outcome (metrics). */
  readonly totals: Record<UsageOutcome, number> = Object.fromEntries(USAGE_OUTCOMES.map((o) => [o, 0])) as Record<
    UsageOutcome,
    number
  >;

  constructor(
    private readonly store: Pick<TokenStore, 'addUsage'>,
    private readonly options: UsageOptions,
  ) {
    this.maxPending = options.maxPending ?? USAGE_MAX_PENDING;
  }

  /** Counts one use of a token at `at` as `outcome`. */
  record(tokenId: string, outcome: UsageOutcome, at: number): void {
    const hour = hourOf(at);
    let cell = this.current.get(tokenId);
    if (cell === undefined || cell.hour !== hour) {
      if (this.current.size + this.older.length >= this.maxPending) {
        this.stats.dropped += 1;
        void this.flush();
        return;
      }
      if (cell !== undefined) this.older.push(cell);
      cell = { tokenId, hour, counts: USAGE_OUTCOMES.map(() => 0) };
      this.current.set(tokenId, cell);
    }
    cell.counts[INDEX[outcome]]! += 1;
    this.totals[outcome] += 1;
  }

  /** Cells pending (metrics, tests). */
  get pending(): number {
    return this.current.size + this.older.length;
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.flush(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Adds everything counted so far to storage. Concurrent calls share one flush. */
  flush(): Promise<void> {
    this.flushing ??= this.doFlush().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async doFlush(): Promise<void> {
    if (this.pending === 0) return;
    const batch = merged([...this.older, ...this.current.values()]);
    this.current = new Map();
    this.older = [];
    try {
      await this.store.addUsage(batch);
      this.stats.flushes += 1;
      this.stats.cells += batch.length;
    } catch (err) {
      this.stats.failures += 1;
      // Only what was not stored goes back: nothing is counted twice.
      const added = err instanceof UsageWriteError ? err.added : 0;
      this.stats.cells += added;
      for (const cell of batch.slice(added)) this.restore(cell);
      this.options.onError?.(err instanceof UsageWriteError ? (err.cause ?? err) : err);
    }
  }

  /** Puts an unflushed cell back, within the bound (beyond it its uses are dropped). */
  private restore(cell: UsageCell): void {
    if (this.pending >= this.maxPending) {
      this.stats.dropped += cell.counts.reduce((a, b) => a + b, 0);
      return;
    }
    this.older.push(cell);
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
    if (this.pending > 0) await this.flush(); // cells put back by a failed flush
  }
}

/**
 * One cell per (token, hour): a token used in an hour, then another, then the first again
 * (a clock set back) has two cells of that hour, and one statement must not touch a row twice.
 */
function merged(cells: readonly UsageCell[]): UsageCell[] {
  const byKey = new Map<string, UsageCell>();
  for (const cell of cells) {
    const key = `${cell.hour} ${cell.tokenId}`;
    const seen = byKey.get(key);
    if (seen === undefined) byKey.set(key, cell);
    else seen.counts = seen.counts.map((n, i) => n + cell.counts[i]!);
  }
  return [...byKey.values()];
}

const DAY_MS = 86_400_000;

/** The hours a usage query asks for: those starting from `from` (an hour's start) and before `to`. */
export interface UsageRange {
  from: number;
  to: number;
}

/**
 * The range of a usage query (`since`, `until`: RFC 3339, each optional), or the problem
 * with each parameter that cannot be read (pointers as `querystring:/name`). until defaults
 * to `now`, since to USAGE_SPAN_DEFAULT_DAYS before until; since must be before until, and
 * at most USAGE_SPAN_MAX_DAYS before it. The hour holding since is included (hours are
 * the counts' unit); until is exclusive.
 */
export function readUsageRange(
  query: { since?: string | undefined; until?: string | undefined },
  now: number,
): { range: UsageRange } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const instant = (name: 'since' | 'until'): number | undefined => {
    const text = query[name];
    if (text === undefined) return undefined;
    const parsed = parseTimestamp(text);
    if ('at' in parsed) return parsed.at;
    errors.push({ pointer: `querystring:/${name}`, detail: parsed.error });
    return undefined;
  };
  const givenSince = instant('since');
  const givenUntil = instant('until');
  if (errors.length > 0) return { errors };
  const until = givenUntil ?? now;
  const since = givenSince ?? until - USAGE_SPAN_DEFAULT_DAYS * DAY_MS;
  if (until <= since) {
    errors.push({ pointer: 'querystring:/until', detail: 'must be after since (since is inclusive, until exclusive)' });
  } else if (until - since > USAGE_SPAN_MAX_DAYS * DAY_MS) {
    errors.push({
      pointer: givenSince === undefined ? 'querystring:/until' : 'querystring:/since',
      detail: `since and until may be at most ${USAGE_SPAN_MAX_DAYS} days apart`,
    });
  }
  if (errors.length > 0) return { errors };
  return { range: { from: hourOf(since), to: until } };
}

/** One hour of a token's usage as the API shows it. */
export interface UsageBucket {
  hour: number;
  /** Uses that were let through: verified, less those refused afterwards (scope, rate limit). */
  valid: number;
  refused: number;
  /** Only the reasons with a count. */
  refusedByReason: Partial<Record<UsageReason, number>>;
}

/**
 * A stored hour as the API shows it. A request refused after its token verified (scope,
 * rate limit) was counted as verified too; it is taken out of `valid` here. (Both counts
 * are made in the same instant, so they fall in the same hour but across an hour's turn;
 * `valid` is never shown below 0.)
 */
export function usageBucket(cell: UsageCell): UsageBucket {
  const refusedByReason: Partial<Record<UsageReason, number>> = {};
  let refused = 0;
  let after = 0;
  USAGE_OUTCOMES.forEach((outcome, i) => {
    const n = cell.counts[i]!;
    if (outcome === 'verified' || n === 0) return;
    refusedByReason[outcome] = n;
    refused += n;
    if (AFTER_VERIFICATION.includes(outcome)) after += n;
  });
  return { hour: cell.hour, valid: Math.max(0, cell.counts[INDEX.verified]! - after), refused, refusedByReason };
}
