// Durations on the command line: `30s`, `15m`, `1h`, `1d`, or plain seconds (`90`). One
// whole number and at most one unit, in lower case: anything else (`1.5h`, `-1h`, `1h30m`,
// `1H`, ` 1h`) is refused with the forms accepted, never read some looser way.

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
const DURATION = /^(\d{1,12})([smhd]?)$/;

/** `86400` -> `1d`, `5400` -> `90m`: the largest unit that divides it whole. */
export function formatDuration(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    const size = UNIT_SECONDS[unit]!;
    if (seconds > 0 && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/**
 * Whole seconds, from 0 to `maxSeconds`, or why not (a sentence naming the accepted forms
 * and the limit, for a usage error).
 */
export function parseDuration(text: string, maxSeconds: number): { seconds: number } | { error: string } {
  const m = DURATION.exec(text);
  const limit = `at most ${formatDuration(maxSeconds)}`;
  if (m === null) {
    return {
      error:
        `${JSON.stringify(text)} is not a duration: ` +
        `use a whole number of seconds (90) or 30s, 15m, 1h, 1d (${limit})`,
    };
  }
  const seconds = Number(m[1]) * UNIT_SECONDS[m[2] === '' ? 's' : m[2]!]!;
  if (seconds > maxSeconds) return { error: `${text} is too long: ${limit} (${maxSeconds} seconds)` };
  return { seconds };
}
