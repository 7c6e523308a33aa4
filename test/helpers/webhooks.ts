// Webhook receivers for tests: a real node:http server on 127.0.0.1 (or another loopback
// address, a host of its own for infracat's per-host limit) that records every
// request and answers as the test says (a status, a delay, no answer at all), and what
// the tests share: a fixed encryption key, the env that lets infracat deliver to them,
// and verification with the standardwebhooks package (an independent implementation).
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';

/** A WEBHOOK_ENCRYPTION_KEYS value for tests (32 bytes in base64). */
export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');

/** The settings under which infracat delivers to a receiver on 127.0.0.1 quickly. */
export const RECEIVER_ENV: Record<string, string> = {
  WEBHOOK_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEY,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_POLL_MS: '100',
  WEBHOOK_RETRY_DELAYS_S: '1',
};

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** How the receiver answers the n-th request (from 0): a status, or `hang` (never answer). */
export type Answer =
  number | 'hang' | { status: number; delayMs?: number; body?: string; headers?: Record<string, string> };

export interface Receiver {
  url: string;
  received: Received[];
  /** The requests it holds now (received, not yet answered). */
  readonly inFlight: number;
  /** The most requests it held at once. */
  readonly maxInFlight: number;
  /** Sets how each later request is answered. */
  answer(how: (request: Received, index: number) => Answer): void;
  /** Stops listening (connections refused) until listen() again on the same port. */
  close(): Promise<void>;
  listen(): Promise<void>;
}

/** A receiver listening on `host` (a loopback address: 127.0.0.2 and up are hosts of their own on Linux). */
export async function receiver(t: TestContext, path = '/hook', host = '127.0.0.1'): Promise<Receiver> {
  let how: (request: Received, index: number) => Answer = () => 204;
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  const flight = { now: 0, max: 0 };
  let server: Server | undefined;
  let port = 0;
  const start = async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        flight.now += 1;
        flight.max = Math.max(flight.max, flight.now);
        res.once('close', () => (flight.now -= 1));
        const request = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        received.push(request);
        const answer = how(request, received.length - 1);
        if (answer === 'hang') {
          hanging.add(res);
          return;
        }
        const {
          status,
          delayMs = 0,
          body = '',
          headers = {},
        } = typeof answer === 'number' ? { status: answer } : answer;
        setTimeout(() => {
          res.writeHead(status, headers);
          res.end(body);
        }, delayMs);
      });
    });
    server.listen(port, host);
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  };
  const close = async () => {
    if (server === undefined) return;
    for (const res of hanging) res.destroy();
    hanging.clear();
    server.closeAllConnections();
    const s = server;
    server = undefined;
    await new Promise((r) => s.close(r));
  };
  await start();
  t.after(close);
  return {
    url: `http://${host}:${port}${path}`,
    received,
    get inFlight() {
      return flight.now;
    },
    get maxInFlight() {
      return flight.max;
    },
    answer: (fn) => {
      how = fn;
    },
    close,
    listen: start,
  };
}

/** The payload of a request, verified with `secret` by the standardwebhooks package (throws if it does not verify). */
export function verified(
  secret: string,
  request: Received,
): { type: string; timestamp: string; data: Record<string, unknown> } {
  const headers = {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(request.body, headers) as {
    type: string;
    timestamp: string;
    data: Record<string, unknown>;
  };
}
