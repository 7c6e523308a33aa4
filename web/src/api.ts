// The console's only way to the server: the public JSON API under /api/v1, same origin,
// with the signed-in token in the Authorization header (never in a URL).
import type { operations } from '../../packages/client/src/openapi.js';
import { nextPageUrl } from './links.js';
import { ApiError, type Problem } from './problems.js';
import { session } from './session.js';

const PREFIX = '/api/v1';

export async function api<T>(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  token = session.token(),
): Promise<T> {
  return (await apiResponse<T>(method, path, body, token)).data;
}

/** A GET of one page of a paged list: its items, and the next page's path (Link header), if any. */
export async function apiPage<T>(path: string): Promise<{ items: T[]; next: string | null }> {
  const { data, headers, url } = await apiResponse<T[]>('GET', path);
  const next = nextPageUrl(headers.get('link'), url);
  // The link resolves to the same path under /api/v1 (nextPageUrl checks): strip that prefix.
  return { items: data, next: next === null ? null : `${next.pathname.slice(PREFIX.length)}${next.search}` };
}

/** `api()` with the response's headers and the absolute URL that was fetched. */
export async function apiResponse<T>(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  token = session.token(),
): Promise<{ data: T; headers: Headers; url: string }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  // A PATCH is a JSON merge patch (RFC 7396), the media type that says so.
  if (body !== undefined)
    headers['content-type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
  const url = new URL(`${PREFIX}${path}`, location.origin).href;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, { status: 0, title: 'Network error' });
  }
  if (res.status === 204) return { data: undefined as T, headers: res.headers, url };
  const isJson = (res.headers.get('content-type') ?? '').includes('json');
  const data: unknown = isJson ? await res.json().catch(() => null) : null;
  if (res.ok) return { data: data as T, headers: res.headers, url };
  const problem: Problem =
    data !== null && typeof data === 'object'
      ? { ...(data as Problem), status: res.status }
      : { status: res.status, title: res.statusText };
  const retry = Number(res.headers.get('retry-after'));
  throw new ApiError(res.status, problem, res.headers.has('retry-after') && Number.isFinite(retry) ? retry : null);
}

// Wire shapes from the generated OpenAPI types (`npm run gen:client`; a test keeps them
// equal to what the server serves), so the console cannot drift from the API.
export type Json<
  Op extends keyof operations,
  Status extends keyof operations[Op]['responses'],
> = operations[Op]['responses'][Status] extends {
  content: { 'application/json': infer Body };
}
  ? Body
  : never;

export type TokenView = Json<'listApiTokens', 200>[number];
/** The signed-in token, with the account it belongs to. */
export type CurrentToken = Json<'getCurrentApiToken', 200>;
export type Account = Json<'listAccounts', 200>[number];
export type CreatedToken = Json<'createApiToken', 201>;
/** The answer of a rotation: the token with its new secret, as at creation. */
export type RotatedToken = Json<'rotateApiToken', 200>;
export type AuditEvent = Json<'listAuditEvents', 200>[number];
export type ScopeInfo = Json<'listScopes', 200>[number];
export type Image = Json<'listImages', 200>[number];
export type Region = Json<'listRegions', 200>[number];
export type Plan = Json<'listPlans', 200>[number];
export type Webhook = Json<'listWebhooks', 200>[number];
/** A webhook with its signing secret: the answer of a creation or a secret rotation, the only ones that show it. */
export type CreatedWebhook = Json<'createWebhook', 201>;
export type WebhookDelivery = Json<'listWebhookDeliveries', 200>[number];
export type WebhookTestQueued = Json<'testWebhook', 202>;
