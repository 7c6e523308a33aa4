// Where a webhook may deliver: an https URL whose host resolves to public addresses only
// (addresses.ts). Checked when a webhook is created or its URL changed (a refusal is a 422
// naming why), and again at every delivery on the address the socket really connects to:
// the connection's DNS lookup is ours (guardedLookup), so a name that resolved to a public
// address at creation and to a private one later (DNS rebinding) is refused then.
// WEBHOOK_ALLOW_PRIVATE_TARGETS=true lifts all of it (http, private and loopback targets):
// for development and tests on one machine.
import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { refusedAddress } from './addresses.js';

/** A resolved address of a host name. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has (the system resolver by default; tests give their own). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (getaddrinfo, as any client of this machine would connect). */
export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

/** The longest URL a webhook may have. */
export const URL_MAX = 2048;
/** How long the check of a new URL waits for its name to resolve. */
const RESOLVE_TIMEOUT_MS = 3000;

export interface TargetPolicy {
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS. */
  allowPrivate: boolean;
  resolve: Resolver;
}

/** The host of a URL without IPv6 brackets. */
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/** Why `text` cannot be a webhook URL by its form alone, or the URL. */
export function parseTargetUrl(text: string, allowPrivate: boolean): { url: URL } | { error: string } {
  if (text.length > URL_MAX) return { error: `must be at most ${URL_MAX} characters` };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { error: 'is not an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:'))
    return {
      error: allowPrivate
        ? 'must be an http or https URL'
        : 'must be an https URL (http is refused: the body would travel in clear)',
    };
  if (url.username !== '' || url.password !== '')
    return { error: 'must not carry a user name or password: receivers verify the signature instead' };
  if (url.hash !== '') return { error: 'must not have a fragment (#...): it is never sent' };
  if (bareHost(url) === '') return { error: 'must name a host' };
  return { url };
}

/** The problem with delivering to `address`, or null when it may be delivered to. */
export function addressProblem(address: string, host: string): string | null {
  const why = refusedAddress(address);
  if (why === null) return null;
  return host === address
    ? `${address} is not a public address (${why})`
    : `${host} resolves to ${address}, which is not a public address (${why})`;
}

/**
 * Why a new or changed webhook URL is refused (the 422's detail), or null: its form, and
 * (unless private targets are allowed) every address its host has now.
 */
export async function targetProblem(text: string, policy: TargetPolicy): Promise<string | null> {
  const parsed = parseTargetUrl(text, policy.allowPrivate);
  if ('error' in parsed) return parsed.error;
  if (policy.allowPrivate) return null;
  const host = bareHost(parsed.url);
  if (isIP(host) !== 0) return addressProblem(host, host);
  let addresses: ResolvedAddress[];
  try {
    addresses = await withTimeout(policy.resolve(host), RESOLVE_TIMEOUT_MS);
  } catch {
    return `${host} does not resolve (no address found in ${RESOLVE_TIMEOUT_MS / 1000} s)`;
  }
  if (addresses.length === 0) return `${host} does not resolve`;
  for (const { address } of addresses) {
    const problem = addressProblem(address, host);
    if (problem !== null) return problem;
  }
  return null;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/** A delivery refused for where it would go: a failed attempt with this error, never a connection. */
export class RefusedTargetError extends Error {
  readonly code = 'WEBHOOK_TARGET_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'RefusedTargetError';
  }
}

/**
 * The `lookup` of a delivery's socket: the resolver's addresses, refused whole when any
 * of them is not public (unless private targets are allowed), so the socket can only
 * connect to an address that was checked. Node calls it with `all: true` when it may try
 * several addresses (happy eyeballs), with one address wanted otherwise.
 */
export function guardedLookup(policy: TargetPolicy): LookupFunction {
  return (hostname, options, callback) => {
    const all = typeof options === 'object' && options.all === true;
    const family = typeof options === 'object' ? options.family : options;
    policy.resolve(hostname).then(
      (found) => {
        const wanted = family === 4 || family === 6 ? found.filter((a) => a.family === family) : found;
        if (wanted.length === 0) {
          callback(
            Object.assign(new Error(`${hostname} has no ${family === 6 ? 'IPv6' : 'IPv4'} address`), {
              code: 'ENOTFOUND',
            }),
            '',
            0,
          );
          return;
        }
        if (!policy.allowPrivate) {
          for (const { address } of wanted) {
            const problem = addressProblem(address, hostname);
            if (problem !== null) {
              callback(new RefusedTargetError(problem), '', 0);
              return;
            }
          }
        }
        if (all) (callback as unknown as (err: null, addresses: ResolvedAddress[]) => void)(null, wanted);
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (err: unknown) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
}
