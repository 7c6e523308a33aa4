// pino JSON logs. No log line may carry a credential: request headers are never
// serialised, URLs (as they arrived, percent-encoded or not) and errors are scrubbed of
// anything shaped like a token, and the redact list is a last line of defence for
// hand-written log calls.
//
// Lines go to stdout in batches (src/logging-sink.ts): written when 4 KiB are pending, at
// least every 250 ms, and all of them on a graceful stop (and on any exit Node runs its
// exit handlers for). A kill -9 or a crash of the machine loses what was pending: at most
// those 4 KiB (about 15 access lines) and 250 ms. One write system call per line became
// one per ~14.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import pino, { type DestinationStream, type LevelWithSilent, type Logger } from 'pino';
import { trustedPeer, type TrustProxy } from './http/trust-proxy.js';
import { LineSink } from './logging-sink.js';
import { holdsSecret, redactDeep, redactSecrets } from './redact.js';

export { redactSecrets } from './redact.js';

// Exact paths only: wildcard paths cost on every line, and the serialisers below never
// emit headers anyway.
const REDACT_PATHS = [
  'authorization',
  'token',
  'secret',
  'password',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
];

interface LoggedRequest {
  method?: string;
  url?: string;
  ip?: string;
}

export function createLogger(level: LevelWithSilent, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'infracat' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      formatters: { level: (label) => ({ level: label }) },
      serializers: {
        req: (req: LoggedRequest | IncomingMessage) => ({
          method: req.method,
          url: redactSecrets(req.url ?? ''),
          remote_address: 'socket' in req ? req.socket.remoteAddress : req.ip,
        }),
        res: (res: { statusCode?: number }) => ({ status_code: res.statusCode }),
        // Every field of an error, not only message and stack: a validation error carries
        // the client's field names, an AppError its extras (error lines are rare: no cost).
        err: (err: Error) => redactDeep(pino.stdSerializers.err(err)),
      },
    },
    destination ?? stdout(),
  );
}

let stdoutSink: LineSink | undefined;
/** The one sink of the process's stdout, shared by every logger writing there. */
function stdout(): LineSink {
  stdoutSink ??= new LineSink(1);
  return stdoutSink;
}

// Accept a proxy's X-Request-Id only if it is short and plain, so it can't forge log
// structure or smuggle data, and doesn't look like a secret (it is echoed in a header,
// every problem body and every log line of the request); otherwise mint one.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) && !holdsSecret(header) ? header : randomUUID();
}

/**
 * Each request's id under TRUST_PROXY (Fastify's genReqId): the X-Request-Id sent by a
 * trusted proxy (the connection's peer), as requestIdFrom() accepts it, so that the
 * proxy's and infracat's logs name a request alike; from any other peer, one of
 * infracat's own. A client's own id is never taken: it names the request's audit events
 * and log lines, and a client could give them another request's id.
 */
export function requestIdOf(trust: TrustProxy): (req: IncomingMessage) => string {
  if (trust === false) return () => randomUUID();
  const trusted = trustedPeer(trust);
  return (req) => (trusted(req) ? requestIdFrom(req.headers['x-request-id']) : randomUUID());
}
