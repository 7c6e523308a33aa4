// The response headers the OpenAPI document describes, each declared once with the name of
// its component: the document lists it under components.headers.<name> and every response
// that carries it refers to it there (src/http/openapi.ts). Route modules declare their own
// (the catalog's validators, the forward-auth identity headers) with responseHeader(); the
// ones every route may carry are here.
import { SECURITY_HEADERS } from './security.js';

/**
 * Carry a header's component name, and that every answer given it carries it, through
 * @fastify/swagger (which copies a response header's keys into its `schema`) to the
 * whole-document pass, which removes them.
 */
export const HEADER_COMPONENT = 'x-infracat-header';
export const HEADER_ALWAYS = 'x-infracat-header-always';

/** A response header as a route's response schema states it (`headers: { Name: doc }`). */
export interface HeaderDoc {
  description: string;
  type: 'string' | 'integer';
  [HEADER_COMPONENT]: string;
  [HEADER_ALWAYS]?: true;
}

/**
 * A response header known in the document as components.headers.<component>. `always`: every
 * answer it is given to carries it (documented as required), not only some.
 */
export function responseHeader(
  component: string,
  description: string,
  type: 'string' | 'integer' = 'string',
  always = false,
): HeaderDoc {
  return { description, type, [HEADER_COMPONENT]: component, ...(always ? { [HEADER_ALWAYS]: true as const } : {}) };
}

/** On every answer, errors included: set by the request guard, or by the problem handler when it did not run. */
export const REQUEST_ID = responseHeader(
  'RequestId',
  'The id of this request, also in the log line and in a problem body (`request_id`)',
  'string',
  true,
);

const value = (name: string): string => `\`${SECURITY_HEADERS[name]}\``;
const always = (component: string, description: string): HeaderDoc =>
  responseHeader(component, description, 'string', true);

/** Set with X-Request-Id on every answer, errors included (src/http/security.ts). */
export const SECURITY = {
  'X-Content-Type-Options': always(
    'ContentTypeOptions',
    `${value('x-content-type-options')}: the body is what Content-Type says`,
  ),
  'X-Frame-Options': always('FrameOptions', `${value('x-frame-options')}: never shown in a frame`),
  'Referrer-Policy': always('ReferrerPolicy', value('referrer-policy')),
  'Cross-Origin-Resource-Policy': always(
    'CrossOriginResourcePolicy',
    `${value('cross-origin-resource-policy')}: other origins' pages cannot embed the answer`,
  ),
  'Strict-Transport-Security': always('StrictTransportSecurity', value('strict-transport-security')),
  'Content-Security-Policy': always(
    'ContentSecurityPolicy',
    `${value('content-security-policy')}: a JSON answer loads nothing`,
  ),
};

/** With CORS_ORIGINS set, on the answers of every route but forward auth's (@fastify/cors). */
export const CORS = {
  Vary: responseHeader(
    'VaryOrigin',
    '`Origin`: the CORS headers depend on the Origin of the request (CORS_ORIGINS lists origins)',
  ),
  'Access-Control-Allow-Origin': responseHeader(
    'AccessControlAllowOrigin',
    "The request's Origin when CORS_ORIGINS allows it (`*` when it allows any)",
  ),
  'Access-Control-Expose-Headers': responseHeader(
    'AccessControlExposeHeaders',
    'The answer headers a page of an allowed origin may read',
  ),
};

export const NO_STORE = responseHeader('NoStore', '`no-store`: no cache keeps the answer');

export const RETRY_AFTER = responseHeader('RetryAfter', 'Seconds to wait before retrying', 'integer');

export const LOCATION = responseHeader('Location', 'The path of the new resource');

export const ACCEPT_ENCODING = responseHeader(
  'AcceptEncoding',
  '`identity`: request bodies must not be compressed (sent when the refused body had a Content-Encoding)',
);

export const NEXT_PAGE = responseHeader(
  'NextPage',
  'Only when another page follows: `<path?...>; rel="next"`, the next page with the same filters and page size ' +
    "(a path, resolved against this request's URL)",
);
