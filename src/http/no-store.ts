// Answers no cache may keep: token metadata and secrets, forward-auth decisions, health
// and metrics (true only now). A plugin whose every answer is such adds this hook:
//   plugin.addHook('onRequest', noStore)
// Set before the handler runs, so the plugin's errors (401, 503, ...) carry it too.
import type { onRequestHookHandler } from 'fastify';

// A callback hook: nothing to wait for (the forward-auth check runs it on every call).
export const noStore: onRequestHookHandler = (_request, reply, done) => {
  reply.header('cache-control', 'no-store');
  done();
};
