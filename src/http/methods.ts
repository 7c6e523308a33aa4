// The HTTP request methods, listed once: what a forwarded request or a gateway rule may
// name (src/gateway), what the forward-auth check answers, and where a 405 looks for the
// methods a path does allow (src/http/problem.ts).

/** RFC 9110's methods and PATCH (RFC 5789). */
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/**
 * The methods a route of this server can answer: none answers TRACE (it would echo a
 * request's credentials back), and Node hands CONNECT to its 'connect' event, never to
 * the router.
 */
export const ROUTED_METHODS = HTTP_METHODS.filter((m) => m !== 'TRACE' && m !== 'CONNECT');

export function isHttpMethod(name: string): name is HttpMethod {
  return (HTTP_METHODS as readonly string[]).includes(name);
}
