// Every item of a paged list over real HTTP, following `Link: <...>; rel="next"` from page
// to page, as a client of the API does.
import assert from 'node:assert/strict';

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
