// What a forward-auth check is asked about: the original request's method and path, read
// only from what the configured gateway itself sets (AUTH_CHECK_GATEWAY), never guessed.
//
//   nginx    X-Original-Method + X-Original-URI (proxy_set_header replaces client copies)
//   traefik  X-Forwarded-Method + X-Forwarded-Uri (ForwardAuth sets them itself)
//   envoy    /api/v1/auth/check/<original path>, with the original method (path_prefix)
//   auto     whichever of the three the check arrives in
//
// A gateway that passes the client's other headers through (Traefik without
// authRequestHeaders does) lets a client add the other family, or a second copy of a
// header: in every mode a check that carries both families, half of one, a header twice
// (in any spelling), or any family header alongside the path form is refused, so no
// client-sent header can change what is checked.
import { normalisePath } from './path.js';
import { HTTP_METHODS, isHttpMethod } from '../http/methods.js';

export const GATEWAYS = ['auto', 'nginx', 'traefik', 'envoy'] as const;
export type Gateway = (typeof GATEWAYS)[number];

interface Family {
  gateway: 'nginx' | 'traefik';
  method: string;
  uri: string;
}

// Header names as gateways spell them (for messages); compared case-insensitively.
const FAMILIES: readonly Family[] = [
  { gateway: 'nginx', method: 'X-Original-Method', uri: 'X-Original-URI' },
  { gateway: 'traefik', method: 'X-Forwarded-Method', uri: 'X-Forwarded-Uri' },
];
const NAMES = new Set(FAMILIES.flatMap((f) => [f.method.toLowerCase(), f.uri.toLowerCase()]));

/** What a check asks about, and which gateway's form it came in (whose client-address header to read). */
export type Target =
  { ok: true; method: string; path: string; via: 'nginx' | 'traefik' | 'envoy' } | { ok: false; reason: string };

function refuse(reason: string): Target {
  return { ok: false, reason };
}

function label(f: Family): string {
  return `${f.method} / ${f.uri}`;
}

/** Every value each family header was sent with, by lowercased name (rawHeaders keeps each line). */
function familyHeaders(rawHeaders: readonly string[]): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (!NAMES.has(name)) continue;
    const values = found.get(name) ?? [];
    values.push(rawHeaders[i + 1]!);
    found.set(name, values);
  }
  return found;
}

function present(found: Map<string, string[]>): Family[] {
  return FAMILIES.filter((f) => found.has(f.method.toLowerCase()) || found.has(f.uri.toLowerCase()));
}

/** Shown in a problem detail: short, and clearly quoted. */
function quote(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 37)}...` : value);
}

function checkMethod(method: string, source: string): Target | null {
  return isHttpMethod(method)
    ? null
    : refuse(`${source} ${quote(method)} is not one HTTP method name (${HTTP_METHODS.join(', ')})`);
}

function target(
  via: 'nginx' | 'traefik' | 'envoy',
  method: string,
  uri: string,
  methodSource: string,
  uriSource: string,
): Target {
  const bad = checkMethod(method, methodSource);
  if (bad !== null) return bad;
  const path = normalisePath(uri);
  return path.ok ? { ok: true, method, path: path.path, via } : refuse(`${uriSource} ${path.reason}`);
}

/**
 * The header form, `/api/v1/auth/check` with the original method and URI in headers.
 * `rawHeaders` is the request's header lines as received (name, value, name, value...).
 */
export function readForwardedHeaders(gateway: Gateway, rawHeaders: readonly string[]): Target {
  if (gateway === 'envoy') {
    return refuse(
      'AUTH_CHECK_GATEWAY=envoy reads only the path form /api/v1/auth/check/<original path>, not forwarded headers',
    );
  }
  const found = familyHeaders(rawHeaders);
  const families = present(found);
  if (families.length > 1) {
    return refuse(
      `the check carries both ${label(FAMILIES[0]!)} (nginx) and ${label(FAMILIES[1]!)} (Traefik) headers: ` +
        'the gateway sends one family, so the other came from the client',
    );
  }
  const family = families[0];
  if (family === undefined) {
    const wanted =
      gateway === 'auto' ? FAMILIES.map(label).join(' or ') : label(FAMILIES.find((f) => f.gateway === gateway)!);
    return refuse(`say what to check: scope query parameters, or ${wanted} headers`);
  }
  if (gateway !== 'auto' && family.gateway !== gateway) {
    const expected = FAMILIES.find((f) => f.gateway === gateway)!;
    return refuse(`AUTH_CHECK_GATEWAY=${gateway} reads only ${label(expected)}; this check carries ${label(family)}`);
  }
  const values: string[] = [];
  for (const name of [family.method, family.uri]) {
    const sent = found.get(name.toLowerCase()) ?? [];
    const other = name === family.method ? family.uri : family.method;
    if (sent.length === 0)
      return refuse(`${other} without ${name}: the gateway sends both, and neither is ever assumed`);
    if (sent.length > 1) return refuse(`${name} is sent ${sent.length} times: the gateway sends it once`);
    values.push(sent[0]!);
  }
  return target(family.gateway, values[0]!, values[1]!, family.method, family.uri);
}

/**
 * The path form (Envoy's path_prefix): `/api/v1/auth/check<original target>` with the
 * original method. `original` is the raw request target after the prefix.
 */
export function readPathForm(
  gateway: Gateway,
  rawHeaders: readonly string[],
  method: string,
  original: string,
): Target {
  if (gateway === 'nginx' || gateway === 'traefik') {
    const family = FAMILIES.find((f) => f.gateway === gateway)!;
    return refuse(`AUTH_CHECK_GATEWAY=${gateway} reads ${label(family)} at /api/v1/auth/check, not the path form`);
  }
  const families = present(familyHeaders(rawHeaders));
  if (families.length > 0) {
    return refuse(
      'the path form takes the original path from the URL; ' +
        `it must not carry ${families.map(label).join(' or ')} headers`,
    );
  }
  return target('envoy', method, original, 'the method', 'the original path');
}
