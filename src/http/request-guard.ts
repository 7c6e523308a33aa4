// What every request meets first, in one callback hook (it runs on every request and
// finds nothing wrong with almost all of them; each hook, and each async one most,
// costs a catalog GET measurably): the headers every answer carries, then the refusals
// that hold whatever the route: shutting down, broken framing, an abusive or
// credential-carrying query string. After CORS, so a browser can read these refusals.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../errors.js';
import { queryCredentialProblem } from './auth.js';
import { RETRY_AFTER_SECONDS } from './problem.js';
import { protocolProblem, queryProblem } from './protocol.js';
import { SECURITY_HEADERS } from './security.js';

export const requestGuard = fp<Record<never, never>, RawServerDefault, TypeBoxTypeProvider>(
  (app, _options, registered) => {
    let closing = false;
    app.addHook('preClose', (done) => {
      closing = true;
      done();
    });
    app.addHook('onRequest', (request, reply, done) => {
      reply.headers(SECURITY_HEADERS).header('x-request-id', request.id);
      if (closing) {
        reply.header('connection', 'close');
        done(
          new AppError('SERVICE_UNAVAILABLE', 'the server is shutting down', {
            headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
          }),
        );
        return;
      }
      const query = request.query;
      done(protocolProblem(request.raw) ?? queryProblem(query) ?? queryCredentialProblem(query) ?? undefined);
    });
    registered();
  },
  { name: 'infracat-request-guard', dependencies: ['infracat-cors'] },
);
