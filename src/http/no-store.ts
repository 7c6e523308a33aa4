// Answers no cache may keep: token metadata and secrets, forward-auth decisions, health
// and metrics (true only now). A plugin whose every answer is such adds this hook:
//   plugin.addHook('onRequest', noStore)
// Set before the handler runs, so the plugin's errors (401, 503, ...) carry it too.
import type { FastifyReply, FastifyRequest } from 'fastify';

export async function noStore(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header('cache-control', 'no-store');
}
