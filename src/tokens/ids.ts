// Ids of stored things: `<prefix>_` + a ULID (48-bit millisecond time + 80 random bits,
// Crockford base32): opaque, URL-safe, and sortable by creation. Tokens are `tok_`,
// accounts `acc_` (src/accounts/ids.ts). Within one millisecond the random part is
// incremented, so ids minted by one process stay strictly ordered (across prefixes too:
// one sequence).
import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** The 26 characters of a ULID. */
export const ULID_PATTERN_SOURCE = '[0-9A-HJKMNP-TV-Z]{26}';
export const TOKEN_ID_PATTERN = new RegExp(`^tok_${ULID_PATTERN_SOURCE}$`);

let lastTime = -1;
let lastRandom: bigint = 0n;

/** `<prefix>_` + a ULID of `now` (epoch milliseconds). */
export function newId(prefix: string, now: number): string {
  let random: bigint;
  if (now <= lastTime) {
    random = (lastRandom + 1n) & ((1n << 80n) - 1n);
    now = lastTime;
  } else {
    random = BigInt(`0x${randomBytes(10).toString('hex')}`);
  }
  lastTime = now;
  lastRandom = random;
  const value = (BigInt(now) << 80n) | random;
  let out = '';
  let v = value;
  for (let i = 0; i < 26; i++) {
    out = CROCKFORD[Number(v & 31n)]! + out;
    v >>= 5n;
  }
  return `${prefix}_${out}`;
}

export function newTokenId(now: number): string {
  return newId('tok', now);
}
