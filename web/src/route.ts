// Hash routes, parsed without the DOM: "#/tokens" is a page, "#/accounts/acc_01J..." a page
// with an id. Unit-tested in test/console/logic.test.ts.

export interface Route {
  page: string;
  /** The id after the page ("#/accounts/acc_01J..."), or null. */
  id: string | null;
}

// Ids are the API's own (`acc_` + a ULID): letters, digits and underscores only, so one
// never needs decoding and can go into an API path as it is.
const ROUTE = /^#\/([a-z]+)(?:\/([A-Za-z0-9_]{1,64}))?$/;

/** Whether a fragment is a route at all (the skip link's "#main" is an in-page jump). */
export function isRoute(hash: string): boolean {
  return ROUTE.test(hash);
}

/**
 * The route a fragment names; `fallback` for no fragment, an unknown page, or an id on a
 * page that takes none.
 */
export function parseRoute(
  hash: string,
  pages: Readonly<Record<string, { withId: boolean }>>,
  fallback: string,
): Route {
  const match = ROUTE.exec(hash);
  const page = match?.[1];
  const id = match?.[2] ?? null;
  if (page === undefined || !Object.hasOwn(pages, page)) return { page: fallback, id: null };
  if (id !== null && !pages[page]!.withId) return { page: fallback, id: null };
  return { page, id };
}
