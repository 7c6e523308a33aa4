// HTTP/1.1 rules Node leaves to the application, or enforces with a bare answer of its
// own (no body, no request id, no log line), checked first on every request (by the app's
// first hook, src/http/request-guard.ts) so that they are answered as problems like everything else:
// - Host (RFC 9112 section 3.2): an HTTP/1.1 request without one, or with more than one,
//   is a 400. Node answers a missing Host itself unless `requireHostHeader` is off
//   (src/http/instance.ts turns it off so the check lands here), and keeps the first of several.
// - Expect (RFC 9110 section 10.1.1): an expectation other than 100-continue cannot be
//   met: 417. Node answers it with a bare 417 unless someone listens for it.
// And one of the query string's size: no route takes more than a handful of parameter
// names, and validating thousands of unknown ones (each an error) cost ~2 us apiece.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../errors.js';
import { repeatedHeader } from './headers.js';
import type { App } from './types.js';

/** Different query parameter names a request may use (a repeated name counts once). */
const MAX_QUERY_NAMES = 100;

export function queryProblem(query: unknown): AppError | null {
  let names = 0;
  for (const _ in query as object) {
    if (++names > MAX_QUERY_NAMES)
      return new AppError('INVALID_QUERY', `too many query parameters: at most ${MAX_QUERY_NAMES} different names`);
  }
  return null;
}

function isHttp11(req: IncomingMessage): boolean {
  return req.httpVersionMajor === 1 && req.httpVersionMinor >= 1;
}

/** The problem with the request's framing headers, or null. */
export function protocolProblem(req: IncomingMessage): AppError | null {
  if (isHttp11(req)) {
    if (req.headers.host === undefined) return new AppError('BAD_REQUEST', 'an HTTP/1.1 request needs a Host header');
    if (repeatedHeader(req.rawHeaders, 'host')) {
      return new AppError('BAD_REQUEST', 'send exactly one Host header');
    }
    const expect = req.headers.expect;
    if (expect !== undefined && !expect.split(',').every((e) => e.trim().toLowerCase() === '100-continue')) {
      return new AppError('EXPECTATION_FAILED', 'only the expectation 100-continue is supported');
    }
  }
  return null;
}

/** Routes the expectations Node would answer itself to the app (see the top of this file). */
export function installExpectationHandling(app: App): void {
  // Hand unmet expectations to the router, where the hook below answers them; and
  // promise to read a body (100 Continue, what Node does unasked) only to a request that
  // passes (`Expect: 100-continue, foo` reaches Node as a 100-continue).
  app.server.on('checkExpectation', (req: IncomingMessage, res) => app.server.emit('request', req, res));
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (protocolProblem(req) === null) res.writeContinue();
    app.server.emit('request', req, res);
  });
}

/** The expectation handling above, as a plugin. */
export const expectations = fp<Record<never, never>, RawServerDefault, TypeBoxTypeProvider>(
  (app, _options, done) => {
    installExpectationHandling(app);
    done();
  },
  { name: 'infracat-expectations' },
);
