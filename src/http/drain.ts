// The drain before a stop (SHUTDOWN_DRAIN_MS; src/server.ts runs it on SIGTERM/SIGINT).
//
// Why: a request that meets its connection being closed is lost, and nginx never re-sends a
// POST it has already sent: the client gets a 502. Two closes can meet a request that way:
// - the instance closes an idle keep-alive connection as the balancer sends on it;
// - the listening socket closes while a connection the balancer has just opened waits in the
//   kernel's accept queue, its request already sent: the kernel resets it. (Measured: with a
//   new connection per request, one stop in twenty under load reset one.)
// So the drain has two steps, each up to SHUTDOWN_DRAIN_MS:
// 1. Announce: /readyz answers 503, so orchestrators and balancers with active checks stop
//    routing here. Everything else is served as usual, keep-alive included, so a balancer
//    keeps using the connections it holds instead of opening new ones.
// 2. Let go: stop listening (a new connection is refused, which a balancer retries on another
//    instance for any method: nothing was sent) and close the connection of every answer
//    from now on. Idle connections are left to the balancer, which closes them after its
//    keep-alive timeout (shorter than the drain). Once every connection is gone, or the time
//    is up, the app closes.
import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export class Drain {
  #step: 'serving' | 'announcing' | 'letting-go' = 'serving';

  /** From start() on: /readyz answers 503. A drain never ends: it leads to the stop. */
  get active(): boolean {
    return this.#step !== 'serving';
  }

  /** Step 1: announce. */
  start(): void {
    if (this.#step === 'serving') this.#step = 'announcing';
  }

  /**
   * Step 2: stops listening, closes the connection of every answer from now on, and resolves
   * once every connection is gone, or after `maxMs`.
   */
  async letGo(server: net.Server, maxMs: number): Promise<void> {
    this.#step = 'letting-go';
    // Not http.Server's close(), which also destroys idle connections: an idle one may be the
    // balancer's, about to carry a request. net.Server's calls back once every connection ended.
    const ended = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
    const timer = new AbortController();
    await Promise.race([ended, sleep(maxMs, undefined, { signal: timer.signal }).catch(() => undefined)]);
    timer.abort();
  }

  /**
   * Node's response class for the server: while letting go, each answer closes its connection.
   * Decided when the answer's head is written, not when its request arrived, so a request in
   * flight when the step began closes its connection too.
   */
  readonly ServerResponse: typeof http.ServerResponse = responseClass(() => this.#step === 'letting-go');
}

function responseClass(closing: () => boolean): typeof http.ServerResponse {
  class DrainAwareResponse<
    Request extends http.IncomingMessage = http.IncomingMessage,
  > extends http.ServerResponse<Request> {}
  // Every head goes through writeHead (an implicit one too: Node's _implicitHeader calls it).
  // Unset keep-alive makes Node send `Connection: close` and close the socket after the answer.
  DrainAwareResponse.prototype.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    if (closing()) this.shouldKeepAlive = false;
    return http.ServerResponse.prototype.writeHead.apply(this, args as Parameters<http.ServerResponse['writeHead']>);
  } as http.ServerResponse['writeHead'];
  return DrainAwareResponse;
}
