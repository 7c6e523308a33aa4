// Answers no cache may keep: token metadata and secrets, forward-auth decisions, health
// and metrics (true only now). A plugin whose every answer is such calls
//   noStoreAnswers(plugin)
// The header is set before the handler runs, so the plugin's errors (401, 503, ...) carry it
// too; each of its routes says so in its config (`noStore`), which the OpenAPI document reads.
import type { onRequestHookHandler } from 'fastify';
import type { App } from './types.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Every answer of the route carries `Cache-Control: no-store` (set by the noStore hook). */
    noStore?: boolean;
  }
}

// A callback hook: nothing to wait for (the forward-auth check runs it on every call).
export const noStore: onRequestHookHandler = (_request, reply, done) => {
  reply.header('cache-control', 'no-store');
  done();
};

/** Every answer of the routes `plugin` declares from now on is no-store, and their config says so. */
export function noStoreAnswers(plugin: App): void {
  plugin.addHook('onRequest', noStore);
  plugin.addHook('onRoute', (route) => {
    route.config = { ...route.config, noStore: true };
  });
}
