// Ids of stored things: `<prefix>_` + a ULID (48-bit millisecond time + 80 random bits,
// Crockford base32): opaque, URL-safe, and sortable by creation. Tokens are `tok_`,
// accounts `acc_` (src/accounts/ids.ts), audit events `evt_`. An id's time is exactly the
// `now` it was minted for, even when the clock stepped back: the audit trail's since and
// until select events by their ids' time (an index range), which must be their occurred_at.
// Within one millisecond the random part is incremented, so ids minted by one process for
// the same millisecond stay strictly ordered (across prefixes too: one sequence).
import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** The 26 characters of a ULID. */
export const ULID_PATTERN_SOURCE = '[0-9A-HJKMNP-TV-Z]{26}';
export const TOKEN_ID_PATTERN = new RegExp(`^tok_${ULID_PATTERN_SOURCE}$`);

/** The largest time a ULID holds (48 bits of milliseconds, in the year 10889). */
const ULID_TIME_MAX = 2 ** 48 - 1;

let lastTime = -1;
let lastRandom: bigint = 0n;

/** `<prefix>_` + a ULID of `now` (epoch milliseconds). */
export function newId(prefix: string, now: number): string {
  let random: bigint;
  if (now === lastTime) {
    random = (lastRandom + 1n) & ((1n << 80n) - 1n);
  } else {
    random = BigInt(`0x${randomBytes(10).toString('hex')}`);
  }
  lastTime = now;
  lastRandom = random;
  return `${prefix}_${crockford((BigInt(now) << 80n) | random, 26)}`;
}

/**
 * The smallest id of `prefix` a millisecond can have: every id minted at `ms` or later
 * sorts at or after it, every id minted earlier before it. Times outside what a ULID
 * holds are clamped to its range (before 1970: the first id of all).
 */
export function firstIdAt(prefix: string, ms: number): string {
  const time = Math.min(Math.max(Math.floor(ms), 0), ULID_TIME_MAX);
  return `${prefix}_${crockford(BigInt(time), 10)}${'0'.repeat(16)}`;
}

/** `value` in `length` Crockford base32 digits. */
function crockford(value: bigint, length: number): string {
  let out = '';
  let v = value;
  for (let i = 0; i < length; i++) {
    out = CROCKFORD[Number(v & 31n)]! + out;
    v >>= 5n;
  }
  return out;
}

export function newTokenId(now: number): string {
  return newId('tok', now);
}
