// Driving the audit trail over HTTP (test/audit/*): an app on a fresh database of one
// backend with an operator token, customer accounts with their own tokens made through
// the API, and the trail as a token reads it (every page, following Link).
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { AuditEvent } from '../../src/audit/schemas.js';
import type { App } from '../../src/http/types.js';
import type { Backend } from './backends.js';
import { build, mintToken } from './app.js';

export const OPERATOR_SCOPES = ['accounts:write', 'api-tokens:write', 'apps:write', 'audit-events:read'];

export type Auth = { authorization: string };

export async function auditApp(
  backend: Backend,
  t: TestContext,
  options: { env?: Record<string, string>; now?: () => number } = {},
) {
  const db = await backend.fresh(t);
  const built = await build(t, {
    store: db.open(),
    env: { DATABASE_URL: db.url, RATE_LIMIT: '0', ...options.env },
    ...(options.now !== undefined ? { now: options.now } : {}),
  });
  const operator = await mintToken(built.app, OPERATOR_SCOPES, 'operator');
  return { ...built, db, operator };
}

/** A customer account made over the API, with a token holding `scopes` minted into it by the operator. */
export async function customer(app: App, operatorAuth: Auth, scopes: string[], name = 'Acme') {
  const made = await app.inject({ method: 'POST', url: '/api/v1/accounts', headers: operatorAuth, payload: { name } });
  assert.equal(made.statusCode, 201, made.body);
  const account = made.json<{ id: string; name: string }>();
  const res = await app.inject({
    method: 'POST',
    url: `/api/v1/accounts/${account.id}/api-tokens`,
    headers: operatorAuth,
    payload: { name: `${name} admin`, scopes },
  });
  assert.equal(res.statusCode, 201, res.body);
  const token = res.json<{ id: string; name: string; token: string }>();
  return { account, token, auth: { authorization: `Bearer ${token.token}` } };
}

/** The next page's path from a Link header, or null when there is none. */
export function nextLink(link: string | string[] | number | undefined): string | null {
  if (link === undefined) return null;
  assert.equal(typeof link, 'string', 'one Link header');
  const m = /^<([^>]+)>; rel="next"$/.exec(link as string);
  assert.ok(m, `a Link header of one rel="next" reference: ${String(link)}`);
  return m[1]!;
}

/** One page: its events and the path of the next one (null on the last). */
export async function page(app: App, auth: Auth, url: string): Promise<{ events: AuditEvent[]; next: string | null }> {
  const res = await app.inject({ method: 'GET', url, headers: auth });
  assert.equal(res.statusCode, 200, res.body);
  return { events: res.json<AuditEvent[]>(), next: nextLink(res.headers.link) };
}

/** Every event `auth` may read with `query`, following Link from page to page. */
export async function allEvents(app: App, auth: Auth, query = ''): Promise<AuditEvent[]> {
  const out: AuditEvent[] = [];
  let url: string | null = `/api/v1/audit-events${query}`;
  for (let pages = 0; url !== null; pages++) {
    assert.ok(pages < 1000, 'the pages end');
    const { events, next } = await page(app, auth, url);
    out.push(...events);
    url = next;
  }
  return out;
}
