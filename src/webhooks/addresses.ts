// Which addresses a webhook may be delivered to: public unicast only (no SSRF). Everything
// else is refused, each range with the reason a refusal names: private, loopback,
// link-local (cloud metadata services live there), unique-local, shared (CGNAT), multicast,
// unspecified, reserved and documentation ranges, and IPv6 forms that carry an IPv4
// address (IPv4-mapped, NAT64, 6to4, Teredo) or are not global unicast. IPv6 is judged by
// what it is allowed to be (global unicast, 2000::/3, minus the special ranges inside it),
// so a range missing from this list is refused, not let through.
import { BlockList, isIP } from 'node:net';

const V4: readonly [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved (IETF protocol assignments)'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved (6to4 relay)'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved (benchmarking)'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

// Inside 2000::/3, the IPv6 global unicast space, what is still not a public host.
const V6_SPECIAL: readonly [string, number, string][] = [
  ['2001::', 32, 'Teredo (carries an IPv4 address)'],
  ['2001::', 23, 'reserved (IETF protocol assignments)'],
  ['2001:db8::', 32, 'documentation'],
  ['2002::', 16, '6to4 (carries an IPv4 address)'],
  ['3fff::', 20, 'documentation'],
];

// Outside 2000::/3: named for the refusal (all refused).
const V6_NAMED: readonly [string, number, string][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::ffff:0:0', 96, 'IPv4-mapped'],
  ['::', 96, 'IPv4-compatible'],
  ['64:ff9b::', 96, 'NAT64 (carries an IPv4 address)'],
  ['64:ff9b:1::', 48, 'NAT64 (carries an IPv4 address)'],
  ['100::', 64, 'discard-only'],
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

function lists(ranges: readonly [string, number, string][], type: 'ipv4' | 'ipv6'): [BlockList, string][] {
  return ranges.map(([net, prefix, why]) => {
    const list = new BlockList();
    list.addSubnet(net, prefix, type);
    return [list, why];
  });
}

const V4_LISTS = lists(V4, 'ipv4');
const V6_SPECIAL_LISTS = lists(V6_SPECIAL, 'ipv6');
const V6_NAMED_LISTS = lists(V6_NAMED, 'ipv6');
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, in either notation) carries, else null. */
function mappedV4(address: string): string | null {
  const m = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (m === null) return null;
  if (m[1] !== undefined) return m[1];
  const hi = parseInt(m[2]!, 16);
  const lo = parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/**
 * Why `address` may not be delivered to (`loopback`, `private`, ...), or null when it is a
 * public address. Not an IP address at all: refused too.
 */
export function refusedAddress(address: string): string | null {
  const plain = address.replace(/^\[|\]$/g, '');
  const family = isIP(plain);
  if (family === 4) return V4_LISTS.find(([list]) => list.check(plain, 'ipv4'))?.[1] ?? null;
  if (family !== 6) return 'not an IP address';
  const v4 = mappedV4(plain);
  if (v4 !== null) {
    const why = refusedAddress(v4);
    return `IPv4-mapped${why === null ? '' : `, ${why}`}`;
  }
  if (GLOBAL_UNICAST.check(plain, 'ipv6'))
    return V6_SPECIAL_LISTS.find(([list]) => list.check(plain, 'ipv6'))?.[1] ?? null;
  return V6_NAMED_LISTS.find(([list]) => list.check(plain, 'ipv6'))?.[1] ?? 'not global unicast';
}
