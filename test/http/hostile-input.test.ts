// The hostile maximum of every input a client controls (bodies, query strings, headers,
// paths) and of the data one account can make infracat hold (tokens up to
// TOKEN_MAX_STORED, accounts, a long audit trail), each request sent four times at once to
// a listening instance on SQLite (whose reads hold the event loop): every answer is a 4xx
// or a 2xx, problems stay small, and meanwhile /healthz keeps answering within
// LIVENESS_BOUND_MS. Catalog documents have their own cases in test/catalog/bounded.test.ts.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { request } from 'undici';
import { BODY_LIMIT_BYTES } from '../../src/app.js';
import { AUDIT_ACTIONS } from '../../src/audit/events.js';
import { loadConfig } from '../../src/config.js';
import { maxStoredTokens } from '../../src/tokens/limits.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { ACCOUNTS, API_TOKENS, AUDIT_EVENTS } from '../../src/storage/tables.js';
import type { AccountRecord, AuditEventRecord, TokenRecord } from '../../src/storage/types.js';
import { newId } from '../../src/tokens/ids.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { insertRows } from '../helpers/raw-sql.js';
import { LIVENESS_BOUND_MS, whileWorking } from '../helpers/liveness.js';

interface Hostile {
  name: string;
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Sent without the test's token. */
  anonymous?: boolean;
}

// The largest body every route takes, and header and URL sizes just under Node's 16 KiB.
const BODY = BODY_LIMIT_BYTES - 64;
const URL_ROOM = 15_000;
const json = { 'content-type': 'application/json' };
const form = { 'content-type': 'application/x-www-form-urlencoded' };
const repeat = (unit: string, room: number): string => unit.repeat(Math.floor(room / unit.length));
const manyKeys = (room: number): string =>
  JSON.stringify(Object.fromEntries(Array.from({ length: Math.floor(room / 10) }, (_, i) => [`k${i}`, 1])));

const HOSTILE: Hostile[] = [
  // JSON bodies: nesting, many members, many entries, long strings, on every body shape.
  { name: 'nested arrays', method: 'POST', path: '/api/v1/api-tokens', headers: json, body: repeat('[', BODY) },
  { name: 'nested objects', method: 'POST', path: '/api/v1/api-tokens', headers: json, body: repeat('{"a":', BODY) },
  { name: 'many unknown members', method: 'POST', path: '/api/v1/api-tokens', headers: json, body: manyKeys(BODY) },
  {
    name: 'many scopes',
    method: 'POST',
    path: '/api/v1/api-tokens',
    headers: json,
    body: JSON.stringify({ name: 'x', scopes: Array.from({ length: Math.floor(BODY / 12) }, (_, i) => `r${i}:read`) }),
  },
  {
    name: 'many objects as scopes',
    method: 'POST',
    path: '/api/v1/api-tokens',
    headers: json,
    body: JSON.stringify({ name: 'x', scopes: Array.from({ length: Math.floor(BODY / 3) }, () => ({})) }),
  },
  {
    name: 'a long name of invisible characters',
    method: 'POST',
    path: '/api/v1/api-tokens',
    headers: json,
    body: JSON.stringify({ name: '\u034f'.repeat(Math.floor(BODY / 7)), scopes: ['apps:read'] }),
  },
  {
    name: 'many members in a patch',
    method: 'PATCH',
    path: '/api/v1/api-tokens/tok_x',
    headers: json,
    body: manyKeys(BODY),
  },
  {
    name: 'many members for an account',
    method: 'POST',
    path: '/api/v1/accounts',
    headers: json,
    body: manyKeys(BODY),
  },
  {
    name: 'many members in a rotation',
    method: 'POST',
    path: '/api/v1/api-tokens/tok_x/rotate',
    headers: json,
    body: manyKeys(BODY),
  },
  {
    name: 'a form of many fields',
    method: 'POST',
    path: '/api/v1/api-tokens/introspect',
    headers: form,
    body: repeat('a=1&', BODY),
  },
  {
    name: 'a long form value',
    method: 'POST',
    path: '/api/v1/api-tokens/introspect',
    headers: form,
    body: `token=${'a'.repeat(BODY)}`,
  },
  {
    name: 'a token exchange of many audiences',
    method: 'POST',
    path: '/api/v1/oauth/token',
    headers: form,
    body: `grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&${repeat('audience=a&', BODY - 80)}`,
    anonymous: true,
  },
  {
    name: 'a token exchange of a long scope',
    method: 'POST',
    path: '/api/v1/oauth/token',
    headers: form,
    body: `scope=${repeat('apps:read+', BODY - 10)}`,
    anonymous: true,
  },
  {
    name: 'many leak reports',
    method: 'POST',
    path: '/api/v1/secret-scanning/leaks',
    headers: json,
    body: JSON.stringify(Array.from({ length: Math.floor(BODY / 60) }, () => ({ token: 'x', type: 't', url: 'u' }))),
    anonymous: true,
  },
  // Query strings: many parameters, repeated ones, long values, on every route that reads one.
  { name: 'repeated audit filters', path: `/api/v1/audit-events?${repeat('action=x&', URL_ROOM)}` },
  { name: 'a long audit filter', path: `/api/v1/audit-events?target_id=${'a'.repeat(URL_ROOM)}` },
  { name: 'many audit parameters', path: `/api/v1/audit-events?${repeat('p=1&', URL_ROOM)}` },
  { name: 'repeated catalog filters', path: `/api/v1/plans?${repeat('region=x&', URL_ROOM)}`, anonymous: true },
  { name: 'many catalog parameters', path: `/api/v1/images?${repeat('q=1&', URL_ROOM)}`, anonymous: true },
  { name: 'many scopes to check', path: `/api/v1/auth/check?${repeat('scope=apps:read&', URL_ROOM)}` },
  { name: 'many revision parameters', path: `/api/v1/catalog/revisions?${repeat('per_page=1&', URL_ROOM)}` },
  { name: 'many token list parameters', path: `/api/v1/api-tokens?${repeat('per_page=1&', URL_ROOM)}` },
  // Headers: long lists in the headers the service reads.
  {
    name: 'a long X-Forwarded-For',
    path: '/api/v1/plans',
    headers: { 'x-forwarded-for': repeat('10.0.0.1,', URL_ROOM) },
    anonymous: true,
  },
  {
    name: 'a long If-None-Match',
    path: '/api/v1/plans',
    headers: { 'if-none-match': repeat('"v1",', URL_ROOM) },
    anonymous: true,
  },
  {
    name: 'a long Authorization',
    path: '/api/v1/api-tokens',
    headers: { authorization: `Bearer ${'a'.repeat(URL_ROOM)}` },
  },
  {
    name: 'a long X-Request-Id',
    path: '/api/v1/plans',
    headers: { 'x-request-id': 'a'.repeat(URL_ROOM) },
    anonymous: true,
  },
  // Paths: long segments, many segments, percent-encoding.
  { name: 'a long token id', path: `/api/v1/api-tokens/${'a'.repeat(URL_ROOM)}` },
  { name: 'many empty segments', path: `/api/v1/${'/'.repeat(URL_ROOM)}`, anonymous: true },
  { name: 'percent-encoded plan slug', path: `/api/v1/plans/${repeat('%41', URL_ROOM)}`, anonymous: true },
  { name: 'many forward-auth path segments', path: `/api/v1/auth/check/${repeat('a/', URL_ROOM)}` },
];

// A problem answer stays this small whatever the request held.
const PROBLEM_BYTES = 8 * 1024;

async function listening(t: TestContext, options: Parameters<typeof build>[1] = {}) {
  const built = await build(t, { ...options, env: { TRUST_PROXY: '127.0.0.1', ...options.env } });
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = built.app.server.address() as { port: number };
  return { ...built, base: `http://127.0.0.1:${port}` };
}

/** Sends `path` four times at once while /healthz is watched; every answer a 2xx or 4xx. */
async function fourAtOnce(base: string, path: string, headers: Record<string, string>): Promise<number | undefined> {
  const send = async () => {
    const res = await request(`${base}${path}`, { headers });
    const body = await res.body.text();
    assert.ok(res.statusCode < 500, `${path}: ${res.statusCode} ${body.slice(0, 200)}`);
    return res.statusCode;
  };
  const { result, slowestMs } = await whileWorking(base, () => Promise.all([send(), send(), send(), send()]));
  assert.ok(slowestMs < LIVENESS_BOUND_MS, `${path}: /healthz took ${slowestMs.toFixed(0)} ms meanwhile`);
  return result[0];
}

const T0 = Date.parse('2026-01-01T00:00:00Z');
const DAY = 86_400_000;

describe('hostile input: bounded work and small answers', () => {
  it('each hostile maximum, four at once, is a small 2xx/4xx answer while /healthz answers promptly', async (t) => {
    const { app, base } = await listening(t);
    const tok = await mintToken(app, [
      'api-tokens:write',
      'accounts:write',
      'audit-events:read',
      'catalog:write',
      'apps:read',
    ]);
    for (const h of HOSTILE) {
      const send = async () => {
        const res = await request(`${base}${h.path}`, {
          method: h.method ?? 'GET',
          headers: { ...(h.anonymous === true ? {} : tok.auth), ...h.headers },
          ...(h.body === undefined ? {} : { body: h.body }),
        });
        return { status: res.statusCode, body: await res.body.text() };
      };
      const { result, slowestMs } = await whileWorking(base, () => Promise.all([send(), send(), send(), send()]));
      for (const res of result) {
        assert.ok(res.status < 500, `${h.name}: ${res.status} ${res.body.slice(0, 200)}`);
        if (res.status >= 400)
          assert.ok(res.body.length <= PROBLEM_BYTES, `${h.name}: a problem of ${res.body.length} bytes`);
      }
      assert.ok(slowestMs < LIVENESS_BOUND_MS, `${h.name}: /healthz took ${slowestMs.toFixed(0)} ms meanwhile`);
    }
  });

  it('the most data an account can hold: each list and audit filter pages, /healthz prompt', async (t) => {
    const sqlite = backends().find((b) => b.name === 'sqlite')!;
    const db = await sqlite.fresh(t);
    const stored = maxStoredTokens(loadConfig({}));
    // One account's tokens up to the bound, all but a few expired (they are kept, listed and paged).
    const tokens: TokenRecord[] = Array.from({ length: stored }, (_, i) => ({
      id: newId('tok', T0 + i),
      name: `seed ${i}`,
      scopes: ['apps:read'],
      secretHash: i.toString(16).padStart(64, '0'),
      createdAt: T0 + i,
      expiresAt: i < stored - 10 ? T0 + i + 2000 : null,
      lastUsedAt: null,
      lastUsedIp: null,
      accountId: OPERATOR_ACCOUNT_ID,
      previousSecretHash: null,
      previousExpiresAt: null,
      allowedCidrs: null,
      notBefore: null,
      enabled: true,
    }));
    const accounts: AccountRecord[] = Array.from({ length: 20_000 }, (_, i) => ({
      id: newId('acct', T0 + i),
      name: `account ${i}`,
      externalId: `ext-${i}`,
      status: i % 2 === 0 ? 'active' : 'suspended',
      createdAt: T0 + i,
      rateLimit: null,
    }));
    // A trail of 200,000 events over 100 days in the operator's account, one action rare.
    const events: AuditEventRecord[] = Array.from({ length: 200_000 }, (_, i) => ({
      id: newId('evt', T0 + i * 43_200),
      accountId: OPERATOR_ACCOUNT_ID,
      action: i % 1000 === 0 ? 'account.deleted' : AUDIT_ACTIONS[i % 3]!,
      occurredAt: T0 + i * 43_200,
      actorType: 'api_token',
      actorId: tokens[i % 50]!.id,
      actorName: 'seed',
      actorAccountId: OPERATOR_ACCOUNT_ID,
      actorCredential: 'current',
      targetType: 'api_token',
      targetId: tokens[i % stored]!.id,
      targetName: 'seed',
      ip: '203.0.113.7',
      userAgent: 'seed',
      requestId: `req-${i}`,
      details: {},
    }));
    await insertRows(sqlite, db, API_TOKENS, tokens);
    await insertRows(sqlite, db, ACCOUNTS, accounts);
    await insertRows(sqlite, db, AUDIT_EVENTS, events);

    const { app, base } = await listening(t, { store: db.open(), env: { DATABASE_URL: db.url, RATE_LIMIT: '0' } });
    const tok = await mintToken(app, ['api-tokens:read', 'accounts:read', 'audit-events:read']);
    const iso = (ms: number) => new Date(ms).toISOString();
    const reads = [
      '/api/v1/api-tokens?per_page=1000',
      `/api/v1/accounts/${OPERATOR_ACCOUNT_ID}/api-tokens?per_page=1000`,
      '/api/v1/accounts?per_page=1000',
      '/api/v1/accounts?per_page=1000&status=suspended',
      '/api/v1/accounts?external_id=ext-19999',
      '/api/v1/audit-events?per_page=100',
      '/api/v1/audit-events?per_page=100&action=account.deleted',
      `/api/v1/audit-events?per_page=100&target_id=${tokens[stored - 1]!.id}`,
      `/api/v1/audit-events?per_page=100&since=${iso(T0 + 50 * DAY)}&until=${iso(T0 + 51 * DAY)}`,
      `/api/v1/audit-events?per_page=100&action=account.deleted&since=${iso(T0 + 90 * DAY)}`,
    ];
    for (const path of reads) assert.equal(await fourAtOnce(base, path, tok.auth), 200, path);
  });
});
