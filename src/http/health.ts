// Liveness and readiness for orchestrators and load balancers.
// /healthz: the process answers. /readyz: storage answers too (else 503 + Retry-After,
// so a balancer drains this instance while PostgreSQL is away), and the instance is not
// draining before a stop (src/http/drain.ts).
import { Type } from 'typebox';
import type { App } from './types.js';
import { AppError } from '../errors.js';
import type { Drain } from './drain.js';
import type { Store } from '../storage/types.js';
import { noStoreAnswers } from './no-store.js';
import { RETRY_AFTER_SECONDS } from './problem.js';
import { withDeadline } from '../deadline.js';

const Health = Type.Object({ status: Type.String() });
const Ready = Type.Object({ status: Type.String(), storage: Type.String() });

/** The health shapes by their names in the OpenAPI document's components.schemas. */
export const HEALTH_SCHEMAS = { Health, Readiness: Ready };

export interface HealthOptions {
  store: Store;
  /** Longest a readiness probe waits for storage. */
  timeoutMs: number;
  drain: Pick<Drain, 'active'>;
}

export function healthRoutes(app: App, options: HealthOptions): void {
  void app.register(async (plugin) => {
    noStoreAnswers(plugin);
    healthRoutesIn(plugin, options);
  });
}

function healthRoutesIn(app: App, options: HealthOptions): void {
  const tags = ['operations'];
  app.get(
    '/healthz',
    {
      // Nothing here can fail: only a server that is shutting down refuses it.
      config: { rateLimit: false, problems: { 500: null, 503: 'The server is shutting down (SERVICE_UNAVAILABLE)' } },
      schema: { tags, operationId: 'healthz', summary: 'Liveness: the process answers', response: { 200: Health } },
      // One string field, nothing to drop: JSON.stringify writes what fast-json-stringify would,
      // and the answer a start's probes wait for first compiles no serialiser (which builds an
      // Ajv instance of its own).
      serializerCompiler: () => JSON.stringify,
    },
    async () => {
      return { status: 'ok' };
    },
  );

  app.get(
    '/readyz',
    {
      // A failed probe of storage is this answer's 503, never a 500.
      config: {
        rateLimit: false,
        problems: {
          500: null,
          503:
            'Draining before a stop, or shutting down (SERVICE_UNAVAILABLE); or storage unreachable or not ' +
            'writable (STORAGE_UNAVAILABLE)',
        },
      },
      schema: {
        tags,
        operationId: 'readyz',
        summary: 'Readiness: storage answers too (else 503)',
        response: { 200: Ready },
      },
    },
    async () => {
      if (options.drain.active) {
        throw new AppError('SERVICE_UNAVAILABLE', 'the server is shutting down', {
          headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
        });
      }
      try {
        await withDeadline(options.store.ping(), options.timeoutMs, `timed out after ${options.timeoutMs} ms`);
      } catch {
        // Unreachable, or reachable but refusing writes (a read-only file, a standby).
        throw new AppError('STORAGE_UNAVAILABLE', 'storage is not reachable or not writable', {
          headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
        });
      }
      return { status: 'ready', storage: options.store.backend };
    },
  );
}
