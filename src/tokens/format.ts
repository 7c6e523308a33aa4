// Token secrets: `<prefix>_<30 base62 random chars><6 base62 chars of CRC32>`.
// 30 base62 characters carry 178 bits of randomness (the design asks for >= 160). The
// checksum (GitHub's scheme) lets secret scanners and this service reject typos and
// made-up strings offline, before any storage lookup. Only SHA-256(secret) is stored.
import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const RANDOM_CHARS = 30;
export const CHECKSUM_CHARS = 6;
/** A prefix is short lowercase letters/digits, starting with a letter, e.g. `icat`. */
export const PREFIX_PATTERN = /^[a-z][a-z0-9]{1,15}$/;

/** Uniform base62 characters by rejection sampling (no modulo bias). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62]; // 248 = 4 * 62
      if (out.length === length) break;
    }
  }
  return out;
}

function base62Fixed(value: number, width: number): string {
  let out = '';
  let v = value;
  for (let i = 0; i < width; i++) {
    out = ALPHABET[v % 62]! + out;
    v = Math.floor(v / 62);
  }
  return out; // 62^6 > 2^32, so six characters always hold a CRC32
}

function checksum(body: string): string {
  return base62Fixed(crc32(body) >>> 0, CHECKSUM_CHARS);
}

export function generateSecret(prefix: string): string {
  const body = `${prefix}_${randomBase62(RANDOM_CHARS)}`;
  return body + checksum(body);
}

export type SecretCheck = { ok: true } | { ok: false; reason: 'format' | 'checksum' };

/** Offline check of a presented secret: shape, prefix and checksum. */
export function checkSecret(secret: string, prefix: string): SecretCheck {
  const expectedLength = prefix.length + 1 + RANDOM_CHARS + CHECKSUM_CHARS;
  if (secret.length !== expectedLength || !secret.startsWith(`${prefix}_`)) return { ok: false, reason: 'format' };
  const rest = secret.slice(prefix.length + 1);
  if (!/^[0-9A-Za-z]+$/.test(rest)) return { ok: false, reason: 'format' };
  const body = secret.slice(0, secret.length - CHECKSUM_CHARS);
  return checksum(body) === secret.slice(-CHECKSUM_CHARS) ? { ok: true } : { ok: false, reason: 'checksum' };
}

export function hashSecret(secret: string): string {
  // One-shot crypto.hash (Node >= 20.12): no Hash object per verification.
  return hash('sha256', secret, 'hex');
}
