// Pure formatting for the console (no DOM): relative and exact times, sizes, prices.
// Unit-tested in test/console/format.test.ts.

const DAY_S = 86_400;
const YEAR_S = 365 * DAY_S;

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/**
 * "just now", "3 minutes ago", "in 90 days", "next year". Whole minutes and hours, then
 * days up to a year, rounded: never weeks or months, so an expiry chosen as 90 days reads
 * "in 90 days" a moment later, not "in 2 months" (a month is no fixed number of days).
 */
export function relativeTime(iso: string, now: number): string {
  const deltaS = Math.round((Date.parse(iso) - now) / 1000);
  const abs = Math.abs(deltaS);
  if (abs < 45) return deltaS <= 0 ? 'just now' : 'in a few seconds';
  const days = Math.round(deltaS / DAY_S);
  if (Math.abs(days) >= 365) return relative.format(Math.round(deltaS / YEAR_S), 'year');
  if (abs >= DAY_S) return relative.format(days, 'day');
  if (abs >= 3_600) return relative.format(Math.trunc(deltaS / 3_600), 'hour');
  return relative.format(Math.trunc(deltaS / 60) || Math.sign(deltaS), 'minute');
}

/** Whether a token with this `expires_at` has expired (it is still listed until purged). */
export function isExpired(expiresAt: string | null, now: number): boolean {
  return expiresAt !== null && Date.parse(expiresAt) <= now;
}

const exact = new Intl.DateTimeFormat('en-GB', {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZone: 'UTC',
  timeZoneName: 'short',
});

/** "21 Nov 2026, 22:30:05 UTC": unambiguous, whatever the viewer's time zone. */
export function exactTime(iso: string): string {
  return exact.format(new Date(iso));
}

const day = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

/** "21 Nov 2026" (UTC). */
export function shortDate(iso: string): string {
  return day.format(new Date(iso));
}

/** 1024 -> "1 GB", 512 -> "512 MB", 1536 -> "1.5 GB". */
export function memory(mb: number): string {
  if (mb < 1024) return `${mb} MB`;
  const gb = mb / 1024;
  return `${Number.isInteger(gb) ? gb : gb.toFixed(1)} GB`;
}

/** 6 -> "$6.00" (the catalog's prices are USD per month). */
export function price(amount: number, currency = 'USD'): string {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount);
}

/** An RFC 3339 expiry at the end of `days` from now, or of a chosen UTC date (yyyy-mm-dd). */
export function expiryFrom(choice: string, customDate: string, now: number): string | null {
  if (choice === 'never') return null;
  if (choice === 'custom') return customDate === '' ? '' : `${customDate}T23:59:59Z`;
  const days = Number(choice);
  return new Date(now + days * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A catalog revision's `changes`: settings changed and entries added, removed and changed per kind. */
export interface RevisionChanges {
  settings: number;
  added: Readonly<Record<string, number>>;
  removed: Readonly<Record<string, number>>;
  changed: Readonly<Record<string, number>>;
}

const count = (n: number, kind: string): string => `${n} ${n === 1 ? kind.replace(/s$/, '') : kind}`;

/** "+2 plans, -1 image, 3 changed, 1 setting changed"; "no changes". Kinds in the server's order. */
export function revisionChanges(c: RevisionChanges): string {
  const parts = [
    ...Object.entries(c.added)
      .filter(([, n]) => n > 0)
      .map(([kind, n]) => `+${count(n, kind)}`),
    ...Object.entries(c.removed)
      .filter(([, n]) => n > 0)
      .map(([kind, n]) => `-${count(n, kind)}`),
  ];
  const changed = Object.values(c.changed).reduce((sum, n) => sum + n, 0);
  if (changed > 0) parts.push(`${changed} changed`);
  if (c.settings > 0) parts.push(`${count(c.settings, 'settings')} changed`);
  return parts.length === 0 ? 'no changes' : parts.join(', ');
}

/**
 * What a revision's one-line summary says besides its counts ("rollback to version 3",
 * "initial catalog"): the text before its `: `, or null.
 */
export function revisionNote(summary: string | null): string | null {
  const at = summary?.lastIndexOf(': ') ?? -1;
  return at > 0 ? summary!.slice(0, at) : null;
}
