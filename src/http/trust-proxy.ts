// TRUST_PROXY: whose X-Forwarded-For and X-Request-Id are believed. Read exactly as
// Fastify's proxy matcher will read it (a start must not fail later on what the config
// accepted), and a warning when the setting believes (nearly) any peer.
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';

/** false: no proxy; true: any peer; else the proxies' addresses/CIDRs. */
export type TrustProxy = boolean | string[];

/**
 * An IP address with an optional /prefix, exactly as the proxy matcher will read it (it
 * refuses /0); else null.
 */
function parseCidr(entry: string): { family: 4 | 6; address: string; prefix: number } | null {
  const m = /^([^/]+)(?:\/([0-9]{1,3}))?$/.exec(entry);
  if (m === null) return null;
  const family = isIP(m[1]!);
  if (family === 0) return null;
  const max = family === 4 ? 32 : 128;
  const prefix = m[2] === undefined ? max : Number(m[2]);
  if (prefix < 1 || prefix > max) return null;
  return { family: family as 4 | 6, address: m[1]!, prefix };
}

/** Reads `true`, `false` or a comma-separated list; throws an Error saying what was expected. */
export function parseTrustProxy(raw: string): TrustProxy {
  const v = raw.trim();
  if (v === 'false') return false;
  if (v === 'true') return true;
  const list = v
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  if (list.length === 0 || list.some((x) => parseCidr(x) === null)) {
    throw new Error(
      'expected true, false or a comma-separated list of IP addresses or CIDRs (prefix 1-32 for IPv4, 1-128 for IPv6)',
    );
  }
  return list;
}

// IPv4-mapped IPv6 ranges (::ffff:10.0.0.0/104) apply to IPv4 clients, with 96 fewer bits.
const IPV4_MAPPED = new BlockList();
IPV4_MAPPED.addSubnet('::ffff:0:0', 96, 'ipv6');

/**
 * Whether a trusted range is wider than the widest private range of its family
 * (10.0.0.0/8, fc00::/7): no proxy fleet needs that, but half the Internet is in it.
 */
function tooWide(entry: string): boolean {
  const cidr = parseCidr(entry);
  if (cidr === null) return false;
  if (cidr.family === 4) return cidr.prefix < 8;
  if (IPV4_MAPPED.check(cidr.address, 'ipv6') && cidr.prefix >= 96) return cidr.prefix - 96 < 8;
  return cidr.prefix < 7;
}

/**
 * The start-up warning for a TRUST_PROXY that believes (nearly) any peer: `true`, or a
 * range wider than any private network. Then a client picks its own address with
 * X-Forwarded-For, dodging the per-address limits and charging its failures to others.
 * null when only a list of proxies is trusted (or none).
 */
export function trustProxyWarning(trustProxy: TrustProxy): string | null {
  const wide = Array.isArray(trustProxy) ? trustProxy.filter(tooWide) : [];
  if (trustProxy !== true && wide.length === 0) return null;
  const what =
    trustProxy === true
      ? 'TRUST_PROXY=true trusts every peer'
      : `TRUST_PROXY trusts ${wide.join(', ')}, wider than any private network`;
  return (
    `${what}: any client can choose its own address with X-Forwarded-For, ` +
    'evading the per-address limits (failed authentications, anonymous rate limit) ' +
    'and charging its failures to other addresses. ' +
    "Set TRUST_PROXY to the list of your proxies' addresses/CIDRs instead (e.g. TRUST_PROXY=10.0.0.5,10.0.1.0/24)."
  );
}

/**
 * Whether the peer of `req` (the address the connection comes from, not any header) is a
 * proxy `trust` believes: only such a peer's own headers about the request are taken as
 * its word (X-Request-Id, src/logging.ts), with the same matcher that reads X-Forwarded-For.
 */
export function trustedPeer(trust: TrustProxy): (req: IncomingMessage) => boolean {
  if (trust === false) return () => false;
  if (trust === true) return () => true;
  const trusted = proxyAddr.compile(trust);
  return (req) => {
    const peer = req.socket.remoteAddress;
    return peer !== undefined && trusted(peer, 0);
  };
}
