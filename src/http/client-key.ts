// The key every per-address limit counts a client under (the failed-authentication
// limiter, the anonymous rate limit): one client is one key whichever limit counts it and
// however its address is written.
import { isIP } from 'node:net';

/**
 * What a limit counts a client by: its IPv4 address (also when written IPv4-mapped,
 * ::ffff:192.0.2.1), or its IPv6 /64. A host or LAN is normally given a whole /64, so
 * counting single IPv6 addresses would let one client dodge a limit by rotating through
 * 2^64 of them. Sharing a count within a /64 is the price: what shares a /64 is normally
 * one site.
 */
export function addressKey(ip: string): string {
  // IPv4, the common case on every counted request: nothing to parse.
  if (!ip.includes(':')) return ip;
  const groups = ipv6Groups(ip);
  if (groups === null) return ip;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (a zone id is dropped), or null if it is not one. */
function ipv6Groups(address: string): number[] | null {
  let text = address.split('%')[0]!;
  if (isIP(text) !== 6) return null;
  // A dotted IPv4 tail (::ffff:192.0.2.1) is the last two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string | undefined): number[] =>
    part === undefined || part === '' ? [] : part.split(':').map((g) => parseInt(g, 16));
  const [before, after] = text.split('::');
  const head = parse(before);
  const tail = parse(after);
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}
