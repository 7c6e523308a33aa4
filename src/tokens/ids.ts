// Token ids: `tok_` + a ULID (48-bit millisecond time + 80 random bits, Crockford
// base32): opaque, URL-safe, and sortable by creation. Within one millisecond the
// random part is incremented, so ids minted by one process stay strictly ordered.
import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const TOKEN_ID_PATTERN = /^tok_[0-9A-HJKMNP-TV-Z]{26}$/;

let lastTime = -1;
let lastRandom: bigint = 0n;

export function newTokenId(now: number): string {
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
  return `tok_${out}`;
}
