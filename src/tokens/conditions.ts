// Token conditions as the domain reads them: the networks a token may be used from
// (`allowed_cidrs`), parsed strictly and kept in one canonical text, and the test of a
// client address against them. Pure functions over node:net: no HTTP, no storage.
import { BlockList, isIPv4, isIPv6, SocketAddress } from 'node:net';

/** Most networks one token may list. */
export const ALLOWED_CIDRS_MAX = 50;

type Family = 4 | 6;

interface Network {
  family: Family;
  /** The network address, one byte per element (4 or 16). */
  bytes: number[];
  prefix: number;
}

/**
 * The client address a request is judged by: read (an IP address), or unknown, with why
 * (a forwarded check whose gateway header is missing or ambiguous). A token with
 * allowed_cidrs is refused from an unknown address: fail closed.
 */
export type ClientAddress = { known: true; address: string } | { known: false; reason: string };

export function knownAddress(address: string): ClientAddress {
  return { known: true, address };
}

export function unknownAddress(reason: string): ClientAddress {
  return { known: false, reason };
}

/** An IP address literal exactly: dotted-quad IPv4 (no leading zeros) or IPv6 without zone or brackets. */
export function ipFamily(text: string): Family | null {
  if (text.includes('%')) return null;
  if (isIPv4(text)) return 4;
  return isIPv6(text) ? 6 : null;
}

function v4Bytes(text: string): number[] {
  return text.split('.').map(Number);
}

function v6Bytes(text: string): number[] {
  let head = text;
  const tail: number[] = [];
  // An embedded IPv4 (::ffff:10.0.0.1) is the last 32 bits.
  const dotted = /:(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted !== null) {
    tail.push(...v4Bytes(dotted[1]!));
    head = `${text.slice(0, dotted.index)}:0:0`;
  }
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const groups = (s: string | undefined) => (s === undefined || s === '' ? [] : s.split(':'));
  const l = groups(left);
  const r = groups(right);
  const all = right === undefined ? l : [...l, ...Array<string>(8 - l.length - r.length).fill('0'), ...r];
  const bytes = all.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
  if (tail.length > 0) bytes.splice(12, 4, ...tail);
  return bytes;
}

function bytesOf(text: string, family: Family): number[] {
  return family === 4 ? v4Bytes(text) : v6Bytes(text);
}

function formatBytes(bytes: readonly number[], family: Family): string {
  if (family === 4) return bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  // inet_ntop's text: RFC 5952 (lowercase, the longest run of zero groups as ::).
  return new SocketAddress({ address: groups.join(':'), family: 'ipv6' }).address;
}

/** Whether the first `prefix` bits of two addresses of one family agree. */
function samePrefix(a: readonly number[], b: readonly number[], prefix: number): boolean {
  for (let bit = 0; bit < prefix; bit += 8) {
    const take = Math.min(8, prefix - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((a[bit / 8]! & mask) !== (b[bit / 8]! & mask)) return false;
  }
  return true;
}

function masked(bytes: readonly number[], prefix: number): number[] {
  return bytes.map((byte, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return byte & ((0xff << (8 - keep)) & 0xff);
  });
}

/**
 * One network in CIDR notation as canonical text (`10.0.0.0/8`, `2001:db8::/32`), or why
 * not. A bare address is that one address (/32, /128). The prefix is plain decimal digits
 * within the family's width; an address with bits set past the prefix is refused, naming
 * the network it may have meant, rather than silently widened or narrowed. An
 * IPv4-mapped IPv6 network (`::ffff:10.0.0.0/104`) is written as the IPv4 network it is.
 */
export function parseCidr(text: string): { cidr: string } | { error: string } {
  const m = /^([^/]+)(?:\/(0|[1-9][0-9]{0,2}))?$/.exec(text);
  const family = m === null ? null : ipFamily(m[1]!);
  if (m === null || family === null) {
    return {
      error:
        'must be an IPv4 or IPv6 network in CIDR notation, e.g. 203.0.113.0/24 or 2001:db8::/32 ' +
        '(no zone, brackets, port or leading zeros)',
    };
  }
  const width = family === 4 ? 32 : 128;
  const prefix = m[2] === undefined ? width : Number(m[2]);
  if (prefix > width) return { error: `the prefix length must be 0 to ${width} for an IPv${family} network` };
  const bytes = bytesOf(m[1]!, family);
  const network = masked(bytes, prefix);
  if (!network.every((b, i) => b === bytes[i])) {
    return {
      error:
        `has host bits set: ${m[1]} is not the first address of a /${prefix}; ` +
        `the network is ${formatBytes(network, family)}/${prefix}`,
    };
  }
  // ::ffff:0:0/96 and narrower: IPv4 addresses written as IPv6.
  if (family === 6 && prefix >= 96 && samePrefix(bytes, [...Array<number>(10).fill(0), 0xff, 0xff], 96)) {
    return { cidr: `${bytes.slice(12).join('.')}/${prefix - 96}` };
  }
  return { cidr: `${formatBytes(network, family)}/${prefix}` };
}

function networkOf(cidr: string): Network {
  const [address, prefix] = cidr.split('/') as [string, string];
  const family = ipFamily(address)!;
  return { family, bytes: bytesOf(address, family), prefix: Number(prefix) };
}

/** Whether canonical network `inner` lies wholly within canonical network `outer`. */
export function cidrWithin(inner: string, outer: string): boolean {
  const a = networkOf(inner);
  const b = networkOf(outer);
  return a.family === b.family && b.prefix <= a.prefix && samePrefix(a.bytes, b.bytes, b.prefix);
}

/** A token's networks made into a BlockList: built once per cached token, checked per request. */
export function compileCidrs(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const n = networkOf(cidr);
    list.addSubnet(formatBytes(n.bytes, n.family), n.prefix, n.family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/**
 * Whether `address` (an IP literal) is in `list`. An IPv4 client seen as IPv4-mapped IPv6
 * (`::ffff:203.0.113.7`, a dual-stack socket) is the IPv4 address it is.
 */
export function addressAllowed(list: BlockList, address: string): boolean {
  const family = ipFamily(address);
  if (family === null) return false;
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}
