// What each gateway sends to the forward-auth check for a given client request, modelled
// on its source (Traefik pkg/middlewares/auth/forward.go, Envoy's ext_authz HTTP client,
// nginx's proxy module), plus the header spoofs a client can add. The spoofing suites
// send these check requests byte for byte (test/helpers/raw-http.ts).
import { nginxCheckHeaders } from './forward-auth-doc.js';

export type Header = readonly [string, string];

export interface ClientRequest {
  method: string;
  /** The request target as the client wrote it. */
  target: string;
  headers: readonly Header[];
}

export type CheckRequest = ClientRequest;

export const CHECK_PATH = '/api/v1/auth/check';
export const CLIENT_ADDRESS = '203.0.113.7';

// RFC 9110 7.6.1 hop-by-hop headers: every proxy consumes them, with the ones named in Connection.
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

function withoutHopByHop(headers: readonly Header[]): Header[] {
  const nominated = headers
    .filter(([n]) => n.toLowerCase() === 'connection')
    .flatMap(([, v]) => v.split(',').map((x) => x.trim().toLowerCase()));
  return headers.filter(([n]) => !HOP_BY_HOP.includes(n.toLowerCase()) && !nominated.includes(n.toLowerCase()));
}

/**
 * nginx with the documented check location: every `proxy_set_header` name replaces all
 * client copies (any case); an empty value sends nothing; client headers with `_` are
 * dropped (underscores_in_headers off); the subrequest has no query string and no body.
 */
let nginxSet: [string, string][] | undefined;

export function viaNginx(client: ClientRequest): CheckRequest {
  const set = (nginxSet ??= nginxCheckHeaders());
  const names = new Set(set.map(([n]) => n.toLowerCase()));
  const expand = (value: string): string => {
    const v = value.replace(/^"(.*)"$/, '$1');
    if (v === '$request_uri') return client.target;
    if (v === '$request_method') return client.method;
    if (v === '$proxy_add_x_forwarded_for' || v === '$remote_addr') return CLIENT_ADDRESS;
    if (v.startsWith('$')) throw new Error(`the nginx model does not know ${v}`);
    return v;
  };
  const own = set.map(([n, v]) => [n, expand(v)] as const).filter(([, v]) => v !== '');
  const passed = withoutHopByHop(client.headers).filter(([n]) => !names.has(n.toLowerCase()) && !n.includes('_'));
  return { method: 'GET', target: CHECK_PATH, headers: [...passed, ...own] };
}

/** Go's textproto.CanonicalMIMEHeaderKey, for the token names used here. */
function goCanonical(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase());
}

const TRAEFIK_MANAGED = [
  'X-Forwarded-Proto',
  'X-Forwarded-Scheme',
  'X-Forwarded-For',
  'X-Forwarded-Host',
  'X-Forwarded-Port',
  'X-Forwarded-Server',
  'X-Forwarded-Uri',
  'X-Forwarded-Method',
  'X-Forwarded-Prefix',
  'X-Forwarded-Tls-Client-Cert',
  'X-Forwarded-Tls-Client-Cert-Info',
  'X-Scheme',
  'X-Real-Ip',
];

export interface TraefikOptions {
  /** Unset: every client header is copied (Traefik's default). */
  authRequestHeaders?: readonly string[] | undefined;
  /** false deletes client X-Forwarded-* (also `_` spellings); unset (older Traefik) only replaces the five it sets. */
  trustForwardHeader?: false | undefined;
}

/**
 * Traefik ForwardAuth: a GET to `address` with the client's headers (Go canonicalises
 * names and keeps repeats), hop-by-hop ones removed, then X-Forwarded-For/-Method/-Proto/
 * -Host/-Uri set (replacing any client copy) from the request it guards.
 */
export function viaTraefik(client: ClientRequest, options: TraefikOptions = {}): CheckRequest {
  let headers: Header[] = withoutHopByHop(client.headers).map(([n, v]) => [goCanonical(n), v]);
  const own: Header[] = [
    ['X-Forwarded-For', CLIENT_ADDRESS],
    ['X-Forwarded-Method', client.method],
    ['X-Forwarded-Proto', 'http'],
    ['X-Forwarded-Host', 'apps.example'],
    ['X-Forwarded-Uri', client.target],
  ];
  if (options.trustForwardHeader === false) {
    const managed = new Set(TRAEFIK_MANAGED);
    headers = headers.filter(([n]) => !managed.has(goCanonical(n.replaceAll('_', '-'))));
  }
  if (options.authRequestHeaders !== undefined) {
    const allowed = new Set(options.authRequestHeaders.map(goCanonical));
    headers = headers.filter(([n]) => allowed.has(n));
  }
  const replaced = new Set(own.map(([n]) => n));
  headers = headers.filter(([n]) => !replaced.has(n));
  return { method: 'GET', target: CHECK_PATH, headers: [...headers, ...own] };
}

export interface EnvoyOptions {
  pathPrefix: string;
  /** Lowercase names let through besides Envoy's own; 'all' is the worst case. */
  allowedHeaders: readonly string[] | 'all';
}

/**
 * Envoy ext_authz (HTTP service): the original method, path_prefix + the original path
 * (with its query), Authorization and the allowed headers, names lowercased and repeats
 * joined with "," (the check request carries a map), Content-Length 0.
 */
export function viaEnvoy(client: ClientRequest, options: EnvoyOptions): CheckRequest {
  const byName = new Map<string, string[]>();
  for (const [n, v] of withoutHopByHop(client.headers)) {
    const name = n.toLowerCase();
    if (name === 'host' || name === 'content-length') continue;
    if (name !== 'authorization' && options.allowedHeaders !== 'all' && !options.allowedHeaders.includes(name))
      continue;
    byName.set(name, [...(byName.get(name) ?? []), v]);
  }
  const headers: Header[] = [...byName].map(([n, vs]) => [n, vs.join(',')]);
  return {
    method: client.method,
    target: `${options.pathPrefix}${client.target}`,
    headers: [...headers, ['content-length', '0']],
  };
}

export const FAMILIES = [
  ['X-Original-Method', 'X-Original-URI'],
  ['X-Forwarded-Method', 'X-Forwarded-Uri'],
] as const;

/** The ways a client may spell a header name: case and `_` for `-`. */
export function spellings(name: string): string[] {
  const alternating = [...name].map((c, i) => (i % 2 === 0 ? c.toLowerCase() : c.toUpperCase())).join('');
  return [name, name.toLowerCase(), name.toUpperCase(), alternating, name.replaceAll('-', '_')];
}

/**
 * Header sets a client adds to claim `GET /apps/x` (which a read token may do) while
 * the gateway forwards something else: either family, one header or both, repeated,
 * comma-joined, empty, in every spelling, and Connection naming the gateway's headers.
 */
export function spoofs(): Header[][] {
  const out: Header[][] = [];
  const methodValues = ['GET', 'HEAD', 'get', 'GET, GET', 'GET,DELETE', ''];
  const uriValues = ['/apps/x', '/apps', '/apps/x, /apps/y', '/apps/x,/admin', ''];
  for (const [method, uri] of FAMILIES) {
    for (const spelling of [0, 1, 2, 3, 4]) {
      const m = spellings(method)[spelling]!;
      const u = spellings(uri)[spelling]!;
      // Every odd value in the usual spelling; the plain claim in the others.
      for (const v of spelling === 0 ? methodValues : ['GET']) out.push([[m, v]]);
      for (const v of spelling === 0 ? uriValues : ['/apps/x']) out.push([[u, v]]);
      out.push(
        [
          [m, 'GET'],
          [m, 'GET'],
        ],
        [
          [u, '/apps/x'],
          [u, '/apps/x'],
        ],
      );
      out.push([
        [m, 'GET'],
        [u, '/apps/x'],
      ]);
      out.push([
        [m, 'GET'],
        [u, '/apps/x'],
        [u, '/apps/x'],
      ]);
      out.push([
        [m, 'GET'],
        [method, 'GET'],
        [u, '/apps/x'],
        [uri, '/apps/x'],
      ]);
    }
  }
  const all = FAMILIES.flat();
  out.push(all.map((n) => [n, n.endsWith('Method') ? 'GET' : '/apps/x'] as const));
  out.push(
    [['Connection', 'X-Forwarded-Method']],
    [['Connection', 'X-Forwarded-Method, X-Forwarded-Uri']],
    [
      ['Connection', 'X-Original-URI'],
      ['X-Original-Method', 'GET'],
    ],
  );
  return out;
}
