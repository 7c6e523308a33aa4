// Checks of a request's shape, first on every request, answered as problems like
// everything else: the query string's size (no route takes more than a handful of
// parameter names, and validating thousands of unknown ones, each an error, cost ~2 us
// apiece).
import { AppError } from '../errors.js';
import type { App } from './types.js';

/** Different query parameter names a request may use (a repeated name counts once). */
export const MAX_QUERY_NAMES = 100;

function queryProblem(query: unknown): AppError | null {
  let names = 0;
  for (const _ in query as object) {
    if (++names > MAX_QUERY_NAMES) return new AppError('INVALID_QUERY', `too many query parameters: at most ${MAX_QUERY_NAMES} different names`);
  }
  return null;
}

export function installProtocolChecks(app: App): void {
  // A callback hook, not an async one: it runs on every request, and finds nothing wrong
  // with almost all of them.
  app.addHook('onRequest', (request, _reply, done) => {
    done(queryProblem(request.query) ?? undefined);
  });
}
