// One access-log line per request ("request completed" with method, scrubbed URL,
// status and time) instead of Fastify's two; the "incoming" line only at debug.
// Serialisers in src/logging.ts decide what of the request may appear. ACCESS_LOG=errors
// keeps only the lines of answers >= 400 (a busy read path's lines cost throughput).
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

export class RequestLog extends LogController {
  /** 'errors': no line for answers below 400 (errors and refusals are always logged). */
  constructor(private readonly mode: 'all' | 'errors' = 'all') {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (!error && this.mode === 'errors' && reply.statusCode < 400) return;
    const fields = { req: request, res: reply, response_time_ms: Math.round(reply.elapsedTime * 100) / 100 };
    if (error) reply.log.error({ ...fields, err: error }, 'request errored');
    else reply.log.info(fields, 'request completed');
  }
}
