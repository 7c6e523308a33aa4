// Answers no cache may keep: token metadata and secrets, forward-auth decisions, health
// and metrics (true only now). A plugin whose every answer is such adds this hook:
//   plugin.addHook('onRequest', noStore)
// Set before the handler runs, so the plugin's errors (401, 503, ...) carry it too.
import type { onRequestHookHandler } from 'fastify';

/** The header, as name and value, for an answer made outside a route (the fast lane). */
export const NO_STORE = ['cache-control', 'no-store'] as const;

// A callback hook: nothing to wait for (the forward-auth check runs it on every call).
export const noStore: onRequestHookHandler = (_request, reply, done) => {
  reply.header(NO_STORE[0], NO_STORE[1]);
  done();
};
