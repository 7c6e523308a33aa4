// The client address of a forward-auth check: the address of whoever sent the request the
// gateway guards, which a token's allowed_cidrs are judged by. Read only from the header
// the configured gateway sets itself, replacing whatever a client sent under that name:
//
//   nginx    X-Real-IP (proxy_set_header X-Real-IP $remote_addr): one address
//   traefik  X-Forwarded-For (ForwardAuth with trustForwardHeader: false sets it to the
//            address of its peer, alone): one address
//   envoy    X-Forwarded-For (use_remote_address: true appends the address of Envoy's
//            peer, after whatever the client sent): the last address
//
// Anything else (the header missing, sent twice, not exactly an IP address, a list where
// one address is expected) leaves the address unknown, with why: a token with
// allowed_cidrs is then refused (fail closed); a token without them is not affected.
import { ipFamily, knownAddress, unknownAddress, type ClientAddress } from '../tokens/conditions.js';

/** The gateway whose header is read. */
export type AddressGateway = 'nginx' | 'traefik' | 'envoy';

const HEADER: Record<AddressGateway, string> = {
  nginx: 'X-Real-IP',
  traefik: 'X-Forwarded-For',
  envoy: 'X-Forwarded-For',
};

/** Every value of one header, by its lowercased name (rawHeaders keeps each line). */
function values(rawHeaders: readonly string[], lowerName: string): string[] {
  const found: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === lowerName) found.push(rawHeaders[i + 1]!);
  }
  return found;
}

function quote(value: string): string {
  return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
}

/** The client address `gateway` reports in `rawHeaders`, or why it cannot be read. */
export function readClientAddress(gateway: AddressGateway, rawHeaders: readonly string[]): ClientAddress {
  const name = HEADER[gateway];
  const sent = values(rawHeaders, name.toLowerCase());
  if (sent.length === 0) return unknownAddress(`the check carries no ${name} (AUTH_CHECK_GATEWAY=${gateway} sets it)`);
  if (sent.length > 1) return unknownAddress(`${name} is sent ${sent.length} times: the gateway sends it once`);
  const value = sent[0]!;
  let address: string;
  if (gateway === 'envoy') {
    // Envoy appends its peer's address to the client's list: only the last entry is Envoy's.
    address = value.slice(value.lastIndexOf(',') + 1).trim();
  } else if (value.includes(',')) {
    return unknownAddress(`${name} ${quote(value)} holds a list: ${gateway} sends one address`);
  } else {
    address = value.trim();
  }
  if (ipFamily(address) === null) {
    const what = gateway === 'envoy' ? 'does not end in an IP address' : 'is not exactly one IP address';
    return unknownAddress(`${name} ${quote(value)} ${what}`);
  }
  return knownAddress(address);
}

/** Why a check through AUTH_CHECK_GATEWAY=auto with `scope` parameters has no address. */
export const AUTO_SCOPE_FORM =
  'AUTH_CHECK_GATEWAY=auto cannot tell which gateway sent a check with scope parameters; ' +
  'set AUTH_CHECK_GATEWAY to the gateway in front, whose header then gives the address';
