// Every item of a paged list, following `Link: <...>; rel="next"` from page to page as a
// client of the API does: over real HTTP (fetchAll) or through app.inject().
import assert from 'node:assert/strict';
import type { App } from '../../src/http/types.js';
import { nextLink } from './audit-http.js';

export async function fetchAll<T>(base: string, path: string, headers: Record<string, string>): Promise<T[]> {
  const out: T[] = [];
  let next: string | null = path;
  while (next !== null) {
    const res: Response = await fetch(`${base}${next}`, { headers });
    assert.equal(res.status, 200, `${next}: ${res.status}`);
    out.push(...((await res.json()) as T[]));
    next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1] ?? null;
  }
  return out;
}

/** One page of a list through app.inject(): its bare array and the next page's link. */
export async function injectPage<T>(
  app: App,
  auth: Record<string, string>,
  url: string,
): Promise<{ items: T[]; next: string | null }> {
  const res = await app.inject({ method: 'GET', url, headers: auth });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  const items = res.json<T[]>();
  assert.ok(Array.isArray(items), 'the body is a bare array');
  return { items, next: nextLink(res.headers.link) };
}

/** Every item of a list through app.inject(), following Link; `between` runs after each page. */
export async function injectWalk<T>(
  app: App,
  auth: Record<string, string>,
  url: string,
  between?: () => Promise<void>,
): Promise<T[]> {
  const out: T[] = [];
  let next: string | null = url;
  for (let pages = 0; next !== null; pages++) {
    assert.ok(pages < 1000, 'the pages end');
    const got: { items: T[]; next: string | null } = await injectPage<T>(app, auth, next);
    out.push(...got.items);
    next = got.next;
    await between?.();
  }
  return out;
}
