// The drain before a stop (SHUTDOWN_DRAIN_MS; src/server.ts starts it on SIGTERM/SIGINT).
//
// Why: a balancer keeps idle connections to each instance (nginx `keepalive`). If the
// instance closes one at the moment the balancer sends a request on it, the request is
// lost, and nginx never re-sends a POST it already sent: the client gets a 502. So, while
// draining, the instance
// - answers /readyz 503, so orchestrators and balancers with active checks stop routing here;
// - serves every request as usual, but each answer says `Connection: close`: the balancer
//   drops that connection after the response instead of sending another request on it.
// Connections that get no request meanwhile are closed by the balancer's own idle timeout
// (shorter than the drain). After the drain the server stops listening: a new connection
// is refused, which a balancer retries on another instance for any method (nothing was sent).
import http from 'node:http';

export class Drain {
  #active = false;

  /** True from start() on; it never ends (a drain leads to the stop). */
  get active(): boolean {
    return this.#active;
  }

  start(): void {
    this.#active = true;
  }

  /**
   * Node's response class for the server, closing the connection after each answer written
   * while draining. Decided when the answer's head is written, not when its request arrived:
   * a request that was in flight when the drain began closes its connection too, so no
   * connection goes back to the balancer's pool after the drain began.
   */
  readonly ServerResponse: typeof http.ServerResponse = responseClass(this);
}

function responseClass(drain: Drain): typeof http.ServerResponse {
  class DrainAwareResponse<
    Request extends http.IncomingMessage = http.IncomingMessage,
  > extends http.ServerResponse<Request> {}
  // Every head goes through writeHead (an implicit one too: Node's _implicitHeader calls it).
  // Unset keep-alive makes Node send `Connection: close` and close the socket after the answer.
  DrainAwareResponse.prototype.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    if (drain.active) this.shouldKeepAlive = false;
    return http.ServerResponse.prototype.writeHead.apply(this, args as Parameters<http.ServerResponse['writeHead']>);
  } as http.ServerResponse['writeHead'];
  return DrainAwareResponse;
}
