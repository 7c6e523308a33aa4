// The hostile maximum of every input a client controls (bodies, query strings, headers,
// paths), each sent four times at once to a listening instance: every answer is a 4xx or a
// 2xx, small, and meanwhile /healthz keeps answering within LIVENESS_BOUND_MS. Inputs
// whose size the service bounds itself (catalog documents, lists, audit filters) have
// their own hostile cases beside their routes' tests and in this file's table below.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { request } from 'undici';
import { BODY_LIMIT_BYTES } from '../../src/app.js';
import { build, mintToken } from '../helpers/app.js';
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

async function listening(t: TestContext) {
  const built = await build(t, { env: { TRUST_PROXY: '127.0.0.1' } });
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = built.app.server.address() as { port: number };
  return { ...built, base: `http://127.0.0.1:${port}` };
}

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
});
