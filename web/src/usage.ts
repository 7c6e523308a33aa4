// A token's usage chart, decided without the DOM: which hours the chart shows, each bar's
// heights and hover text, the day marks. Unit-tested in test/console/logic.test.ts; drawn
// by views/usage.ts.

export const CHART_DAYS = 7;
const HOUR = 3_600_000;
export const CHART_HOURS = CHART_DAYS * 24;

/** One hourly bucket as GET .../usage answers it. */
export interface UsageBucket {
  hour: string;
  valid: number;
  refused: number;
  refused_by_reason: Partial<Record<string, number>>;
}

/** What each refusal reason is called on screen. */
const REASON_TEXT: Record<string, string> = {
  expired: 'expired',
  not_yet_valid: 'not yet valid',
  disabled: 'disabled',
  address: 'address not allowed',
  scope: 'missing scope',
  rate_limited: 'rate limited',
  suspended: 'account suspended',
};

export interface ChartBar {
  /** The hour's place from the chart's first hour (0 .. CHART_HOURS - 1). */
  slot: number;
  valid: number;
  refused: number;
  /** The hover text: the hour and its counts. */
  label: string;
}

export interface UsageChart {
  /** The first hour shown (epoch ms): the hour 7 days before the current one's end. */
  from: number;
  bars: ChartBar[];
  /** The tallest bar's total (at least 1, so an empty chart divides by something). */
  max: number;
  totals: { valid: number; refused: number };
  /** Each UTC midnight within the chart: its slot and its date. */
  days: { slot: number; label: string }[];
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number) => String(n).padStart(2, '0');
const day = (at: number) => {
  const d = new Date(at);
  return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
};

/** "Nov 27, 17:00 UTC: 12 valid, 3 refused (missing scope 2, address not allowed 1)". */
export function barLabel(bucket: UsageBucket): string {
  const at = Date.parse(bucket.hour);
  const reasons = Object.entries(bucket.refused_by_reason)
    .filter((entry): entry is [string, number] => (entry[1] ?? 0) > 0)
    .map(([reason, n]) => `${REASON_TEXT[reason] ?? reason} ${n}`);
  const refused = `${bucket.refused} refused${reasons.length > 0 ? ` (${reasons.join(', ')})` : ''}`;
  return `${day(at)}, ${pad(new Date(at).getUTCHours())}:00 UTC: ${bucket.valid} valid, ${refused}`;
}

/** The chart of the last CHART_DAYS days up to `now`'s hour, from the buckets the API answered. */
export function usageChart(buckets: readonly UsageBucket[], now: number): UsageChart {
  const from = Math.floor(now / HOUR) * HOUR - (CHART_HOURS - 1) * HOUR;
  const bars: ChartBar[] = [];
  const totals = { valid: 0, refused: 0 };
  for (const bucket of buckets) {
    const slot = Math.round((Date.parse(bucket.hour) - from) / HOUR);
    if (!(slot >= 0 && slot < CHART_HOURS)) continue;
    bars.push({ slot, valid: bucket.valid, refused: bucket.refused, label: barLabel(bucket) });
    totals.valid += bucket.valid;
    totals.refused += bucket.refused;
  }
  const max = Math.max(1, ...bars.map((b) => b.valid + b.refused));
  const days: { slot: number; label: string }[] = [];
  for (let at = Math.ceil(from / (24 * HOUR)) * 24 * HOUR; at < from + CHART_HOURS * HOUR; at += 24 * HOUR) {
    days.push({ slot: (at - from) / HOUR, label: day(at) });
  }
  return { from, bars, max, totals, days };
}
