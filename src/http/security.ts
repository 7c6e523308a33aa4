// Response headers fitting a JSON API, CORS (off unless origins are configured), and
// server time-outs. The /docs and console pages set their own Content-Security-Policy;
// everything else gets one that allows nothing, since JSON needs nothing.
import cors from '@fastify/cors';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest, RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import type { App } from './types.js';

const API_CSP = "default-src 'none'; frame-ancestors 'none'";

/**
 * Every answer's security headers, set by the app's first hook (src/http/request-guard.ts) before
 * anything can answer, so errors carry them too. The /docs and console pages set their
 * own Content-Security-Policy afterwards, which replaces this one.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'content-security-policy': API_CSP,
};

export function installCors(app: App, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const options = {
    origin: origins.includes('*') ? '*' : [...origins],
    // Every method an /api/v1 route serves (PATCH: the merge patches of accounts and
    // tokens; PUT: the catalog document), so a console elsewhere can do all the API does.
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    // Every request header the API reads that a page may set: the token, the body's type,
    // the preconditions (If-Match on a catalog PUT, If-None-Match on revalidations) and the
    // caller's request id.
    allowedHeaders: ['Authorization', 'Content-Type', 'If-Match', 'If-None-Match', 'X-Request-Id'],
    // Every answer header a client acts on beyond the safelisted ones. Deprecation, Sunset,
    // Link: a catalog entry's way out (and Link: rel="next" pages); Allow: the methods of
    // a 405; Accept-Encoding: what a 415 for a Content-Encoding takes.
    exposedHeaders: [
      'Accept-Encoding',
      'Allow',
      'Deprecation',
      'ETag',
      'Link',
      'Location',
      'Retry-After',
      'RateLimit',
      'RateLimit-Policy',
      'Sunset',
      'WWW-Authenticate',
      'X-Request-Id',
    ],
    credentials: false,
    maxAge: 600,
  };
  // Only a real preflight (Origin and Access-Control-Request-Method) is answered as one.
  // Any other OPTIONS goes on as if CORS were off: to its route if it has one (the
  // forward-auth check takes every method), else the 404/405 problem, where the plugin's
  // strict mode answered a bare 400 text/plain.
  const preflight = { ...options, preflight: true };
  const plain = { ...options, preflight: false };
  void app.register(cors, {
    delegator: (request: FastifyRequest, callback: (error: Error | null, options: typeof preflight) => void) => {
      const isPreflight =
        request.method === 'OPTIONS' &&
        Boolean(request.headers.origin) &&
        Boolean(request.headers['access-control-request-method']);
      callback(null, isPreflight ? preflight : plain);
    },
  });
}

/** CORS for `origins` (CORS_ORIGINS; none: no CORS), its preflight route rate limited like any other. */
export const crossOrigin = fp<{ origins: readonly string[] }, RawServerDefault, TypeBoxTypeProvider>(
  (app, { origins }, done) => {
    installCors(app, origins);
    done();
  },
  { name: 'infracat-cors', dependencies: ['infracat-auth', 'infracat-rate-limit'] },
);
