// Response headers fitting a JSON API, CORS (off unless origins are configured), and
// server time-outs. The /docs and console pages set their own Content-Security-Policy;
// everything else gets one that allows nothing, since JSON needs nothing.
import cors from '@fastify/cors';
import type { FastifyRequest } from 'fastify';
import type { App } from './types.js';

const API_CSP = "default-src 'none'; frame-ancestors 'none'";

const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
};

// As [name, value] lists once, not per response: this hook runs on every answer.
const PAGE_HEADERS = Object.entries(SECURITY_HEADERS);
const ALL_HEADERS = [...PAGE_HEADERS, ['content-security-policy', API_CSP] as const];

export function installSecurityHeaders(app: App): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    // The /docs and console pages set their own policy (and may set others): theirs stay.
    const headers = reply.hasHeader('content-security-policy') ? PAGE_HEADERS : ALL_HEADERS;
    for (const [name, value] of headers) if (!reply.hasHeader(name)) reply.header(name, value);
    return payload;
  });
}

export function installCors(app: App, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const options = {
    origin: origins.includes('*') ? '*' : [...origins],
    methods: ['GET', 'HEAD', 'POST', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'If-None-Match', 'X-Request-Id'],
    exposedHeaders: [
      'ETag',
      'Location',
      'Retry-After',
      'RateLimit',
      'RateLimit-Policy',
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
