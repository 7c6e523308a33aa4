// One access-log line per request ("request completed" with method, scrubbed URL,
// status and time) instead of Fastify's two; the "incoming" line only at debug. The line
// is pre-shaped (accessLog in src/logging.ts); an answer that ended in an error is logged
// through pino with its serialisers, since an error's fields are not known in advance.
// ACCESS_LOG=errors keeps only the lines of answers >= 400.
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { AccessEntry } from '../logging.js';

export class RequestLog extends LogController {
  /** 'errors': no line for answers below 400 (errors and refusals are always logged). */
  constructor(
    private readonly access: (entry: AccessEntry) => void,
    private readonly mode: 'all' | 'errors' = 'all',
  ) {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const ms = Math.round(reply.elapsedTime * 100) / 100;
    if (error) {
      reply.log.error({ req: request, res: reply, response_time_ms: ms, err: error }, 'request errored');
      return;
    }
    if (this.mode === 'errors' && reply.statusCode < 400) return;
    this.access({
      requestId: request.id,
      method: request.method,
      url: request.url,
      remoteAddress: request.socket.remoteAddress,
      status: reply.statusCode,
      ms,
    });
  }
}
