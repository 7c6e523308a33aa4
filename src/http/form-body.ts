// Form-encoded bodies (application/x-www-form-urlencoded), as OAuth endpoints take them:
// introspection (RFC 7662) and the token exchange (RFC 8693). The bytes are read as UTF-8
// exactly or refused (body-encoding.ts), like every body. A name sent once is a string; a
// name sent more than once is the list of its values, never silently its last one: a route
// whose schema expects one value refuses it, and one that allows a list (the exchange's
// `audience`) reads it.
import type { FastifyRequest } from 'fastify';
import { readTextBody } from './body-encoding.js';
import type { App } from './types.js';

export type FormBody = Record<string, string | string[]>;

export function parseFormBody(request: FastifyRequest, body: Buffer): FormBody {
  const values = new Map<string, string | string[]>();
  for (const [name, value] of new URLSearchParams(readTextBody(request, body, 'BAD_REQUEST'))) {
    const seen = values.get(name);
    // In place: a body of one name repeated thousands of times stays linear.
    if (seen === undefined) values.set(name, value);
    else if (Array.isArray(seen)) seen.push(value);
    else values.set(name, [seen, value]);
  }
  // Own properties (fromEntries defines them), so `__proto__` is a name like any other.
  return Object.fromEntries(values);
}

/** Adds the form parser to a plugin's routes. */
export function acceptForms(app: App): void {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'buffer' },
    (request, body: Buffer, done) => {
      let parsed: FormBody;
      try {
        parsed = parseFormBody(request, body);
      } catch (err) {
        done(err as Error, undefined);
        return;
      }
      done(null, parsed);
    },
  );
}
