// One access-log line per request ("request completed" with method, scrubbed URL,
// status and time) instead of Fastify's two; the "incoming" line only at debug.
// ACCESS_LOG=errors keeps only the lines of answers >= 400 (a busy read path's lines cost
// throughput). The URL is scrubbed of anything shaped like a token (src/redact.ts).
// Fastify calls requestCompleted() once per answer: the answer is also counted there for
// the metrics (src/http/metrics.ts), instead of in an onResponse hook of its own.
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { redactSecrets } from '../redact.js';
import type { HttpTraffic } from './metrics.js';

/** What one access line says. */
export interface Completed {
  /** From requestIdFrom() (src/logging.ts). */
  requestId: string;
  method: string;
  url: string;
  /** The peer's address (undefined once the socket is gone: left out of the line). */
  remoteAddress: string | undefined;
  status: number;
  /** Milliseconds since the request arrived. */
  ms: number;
}

/** A line's response_time_ms: milliseconds to two decimals. */
const roundMs = (ms: number): number => Math.round(ms * 100) / 100;

export class AccessLog {
  private readonly logger: Logger;

  constructor(
    logger: Logger,
    private readonly mode: 'all' | 'errors' = 'all',
  ) {
    // The line's fields are known and its URL is scrubbed here, so the redaction and
    // serialisers meant for hand-written log calls are left out: a child logger without
    // them writes the same line for a seventh less of a request's CPU (BENCHMARKS.md).
    const asIs = (value: unknown) => value;
    this.logger = logger.child({}, { redact: { paths: [] }, serializers: { req: asIs, res: asIs } });
  }

  /** Whether an answer with this status gets a line. */
  wants(status: number): boolean {
    return (this.mode === 'all' || status >= 400) && this.logger.isLevelEnabled('info');
  }

  /** Writes the "request completed" line (the caller asked wants() first). */
  write(c: Completed): void {
    this.logger.info(
      {
        request_id: c.requestId,
        req: { method: c.method, url: redactSecrets(c.url), remote_address: c.remoteAddress },
        res: { status_code: c.status },
        response_time_ms: roundMs(c.ms),
      },
      'request completed',
    );
  }
}

export class RequestLog extends LogController {
  constructor(
    private readonly access: AccessLog,
    private readonly traffic: HttpTraffic,
  ) {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    this.traffic.record(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime);
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
