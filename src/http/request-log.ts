// One access-log line per request ("request completed" with method, scrubbed URL,
// status and time) instead of Fastify's two; the "incoming" line only at debug.
// ACCESS_LOG=errors keeps only the lines of answers >= 400 (a busy read path's lines cost
// throughput).
//
// The line of an answer without error is shaped here, once, as the text pino would write
// for `log.info({ req, res, response_time_ms }, 'request completed')` on the request's
// child logger (the same level, time, bindings and serialised fields, in the same order),
// and handed to the logger's stream: pino's generic path (a child logger per request, the
// serialisers, the redaction pass over every line) cost more CPU than serving the bytes
// (issue #20). Nothing in it can hold a secret but the URL, which is scrubbed as the `req`
// serialiser scrubs it (src/logging.ts). Both the Fastify path (RequestLog below) and the
// fast lane (src/http/fast-lane.ts) write it. A line with an error stays on pino: rare,
// and its error serialiser redacts in depth.
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import pino, { type Logger } from 'pino';
import { redactSecrets } from '../logging.js';

/** What one access line says. */
export interface Completed {
  /** From requestIdFrom() (src/logging.ts). */
  requestId: string;
  method: string;
  url: string;
  /** The peer's address (undefined once the socket is gone: left out, as pino leaves it). */
  remoteAddress: string | undefined;
  status: number;
  /** Milliseconds since the request arrived. */
  ms: number;
}

/** A line's response_time_ms: milliseconds to two decimals. */
const roundMs = (ms: number): number => Math.round(ms * 100) / 100;

export class AccessLog {
  readonly #logger: Logger;
  readonly #stream: { write(line: string): unknown };
  readonly #time: () => string;
  readonly #bindings: string;

  constructor(
    logger: Logger,
    private readonly mode: 'all' | 'errors' = 'all',
  ) {
    this.#logger = logger;
    // pino's own parts of a line, so the shaped line cannot drift from what pino writes.
    const own = logger as unknown as Record<symbol, unknown>;
    this.#stream = own[pino.symbols.streamSym] as { write(line: string): unknown };
    this.#time = own[pino.symbols.timeSym] as () => string;
    this.#bindings = own[pino.symbols.chindingsSym] as string;
  }

  // The last URL's and the last address's JSON, scrubbed: busy clients repeat both (the
  // same list, the same load balancer), and a comparison costs less than the scrubbing.
  #lastUrl = '';
  #lastUrlJson = '""';
  #lastAddress: string | undefined;
  #lastAddressField = '';

  #url(url: string): string {
    if (url !== this.#lastUrl) {
      this.#lastUrl = url;
      this.#lastUrlJson = JSON.stringify(redactSecrets(url));
    }
    return this.#lastUrlJson;
  }

  /** `,"remote_address":...`, or nothing once the socket is gone (as pino leaves it out). */
  #address(address: string | undefined): string {
    if (address !== this.#lastAddress) {
      this.#lastAddress = address;
      this.#lastAddressField = address === undefined ? '' : `,"remote_address":${JSON.stringify(address)}`;
    }
    return this.#lastAddressField;
  }

  /** Whether an answer with this status gets a line. */
  wants(status: number): boolean {
    return (this.mode === 'all' || status >= 400) && this.#logger.isLevelEnabled('info');
  }

  /** Writes the "request completed" line (the caller asked wants() first). */
  write(c: Completed): void {
    // The request id (requestIdFrom(): `A-Z a-z 0-9 . _ : -` or a UUID) and the method (a
    // token Node's parser accepted) hold nothing JSON escapes: quoted as they are.
    this.#stream.write(
      `{"level":"info"${this.#time()}${this.#bindings},"request_id":"${c.requestId}"` +
        `,"req":{"method":"${c.method}","url":${this.#url(c.url)}${this.#address(c.remoteAddress)}}` +
        `,"res":{"status_code":${c.status}},"response_time_ms":${roundMs(c.ms)}` +
        `,"msg":"request completed"}\n`,
    );
  }
}

export class RequestLog extends LogController {
  constructor(private readonly access: AccessLog) {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      const fields = { req: request, res: reply, response_time_ms: roundMs(reply.elapsedTime) };
      reply.log.error({ ...fields, err: error }, 'request errored');
      return;
    }
    if (!this.access.wants(reply.statusCode)) return;
    this.access.write({
      requestId: request.id,
      method: request.method,
      url: request.url,
      remoteAddress: request.socket.remoteAddress,
      status: reply.statusCode,
      ms: reply.elapsedTime,
    });
  }
}
