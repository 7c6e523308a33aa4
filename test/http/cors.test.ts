// CORS with CORS_ORIGINS set: a browser client on an allowed origin can make every request
// the API serves and read every header it answers with. The lists here come from the API
// itself (its OpenAPI document and its answers), not from the CORS settings under test, so
// a route, method or header added later is held to the same rule.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { App } from '../../src/http/types.js';
import { build, mintToken } from '../helpers/app.js';

const ORIGIN = 'https://console.example.com';

// What a browser lets a page read without being told (the CORS-safelisted response
// headers), what it sets or reads itself, and what concerns the browser, not the page.
const NOT_FOR_THE_PAGE = new Set([
  'cache-control',
  'content-language',
  'content-length',
  'content-type',
  'expires',
  'last-modified',
  'pragma',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'vary',
  'x-content-type-options',
  'x-frame-options',
  'referrer-policy',
  'content-security-policy',
  'strict-transport-security',
  'cross-origin-resource-policy',
  'cross-origin-opener-policy',
]);

interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components?: { securitySchemes?: Record<string, { type: string; scheme?: string }> };
}
interface Operation {
  parameters?: { in: string; name: string }[];
  requestBody?: unknown;
  responses?: Record<string, { headers?: Record<string, unknown> }>;
}

/** The /api/v1 operations of the OpenAPI document; the forward-auth check is for gateways and answers no preflight. */
async function operations(app: App): Promise<{ path: string; method: string; op: Operation }[]> {
  const doc = (await app.inject({ url: '/docs/json' })).json<OpenApi>();
  const found = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!path.startsWith('/api/v1/') || path.startsWith('/api/v1/auth/check')) continue;
    for (const [method, op] of Object.entries(item)) {
      if (typeof op !== 'object' || op.responses === undefined) continue;
      found.push({ path: path.replace(/\{[^}]+\}/g, 'x'), method: method.toUpperCase(), op });
      // Every GET route answers HEAD too.
      if (method === 'get') found.push({ path: path.replace(/\{[^}]+\}/g, 'x'), method: 'HEAD', op });
    }
  }
  return found;
}

/** The request headers the API reads, from its document. */
async function requestHeaders(app: App): Promise<string[]> {
  const doc = (await app.inject({ url: '/docs/json' })).json<OpenApi>();
  const names = new Set<string>(['x-request-id']); // echoed (and logged) when well-formed: src/logging.ts
  const schemes = Object.values(doc.components?.securitySchemes ?? {});
  if (schemes.some((s) => s.type === 'http' && s.scheme === 'bearer')) names.add('authorization');
  for (const { op } of await operations(app)) {
    for (const p of op.parameters ?? []) if (p.in === 'header') names.add(p.name.toLowerCase());
    if (op.requestBody !== undefined) names.add('content-type');
    const statuses = Object.keys(op.responses ?? {});
    if (statuses.includes('304')) names.add('if-none-match');
    if (statuses.includes('412') || statuses.includes('428')) names.add('if-match');
  }
  return [...names].sort();
}

const list = (value: string | string[] | number | undefined): string[] =>
  String(value ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');

describe('CORS for a console on another origin (CORS_ORIGINS)', () => {
  it(
    'a preflight for every method any /api/v1 route serves, with every request header the API reads, is ' + 'allowed',
    async (t) => {
      const { app } = await build(t, { env: { CORS_ORIGINS: ORIGIN } });
      const headers = await requestHeaders(app);
      for (const h of ['authorization', 'content-type', 'if-match', 'if-none-match'])
        assert.ok(headers.includes(h), `${h} is among the headers the document shows the API reads`);
      const ops = await operations(app);
      const methods = new Set(ops.map((o) => o.method));
      for (const m of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) assert.ok(methods.has(m), `${m} is served`);
      for (const { path, method } of ops) {
        const pre = await app.inject({
          method: 'OPTIONS',
          url: path,
          headers: {
            origin: ORIGIN,
            'access-control-request-method': method,
            'access-control-request-headers': headers.join(','),
          },
        });
        const what = `${method} ${path}`;
        assert.equal(pre.statusCode, 204, `${what}: ${pre.body}`);
        assert.equal(pre.headers['access-control-allow-origin'], ORIGIN, what);
        assert.ok(list(pre.headers['access-control-allow-methods']).includes(method.toLowerCase()), `${what}: method`);
        const allowed = list(pre.headers['access-control-allow-headers']);
        for (const h of headers) assert.ok(allowed.includes(h), `${what}: ${h} not in ${allowed.join(', ')}`);
      }
    },
  );

  it('the catalog can be applied from the console: PUT with If-Match, preflight and request', async (t) => {
    const { app } = await build(t, { env: { CORS_ORIGINS: ORIGIN } });
    const operator = await mintToken(app, ['catalog:write']);
    const pre = await app.inject({
      method: 'OPTIONS',
      url: '/api/v1/catalog',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'PUT',
        'access-control-request-headers': 'authorization,content-type,if-match',
      },
    });
    assert.equal(pre.statusCode, 204);
    assert.ok(list(pre.headers['access-control-allow-methods']).includes('put'));
    assert.deepEqual(
      ['authorization', 'content-type', 'if-match'].filter(
        (h) => !list(pre.headers['access-control-allow-headers']).includes(h),
      ),
      [],
    );
    const current = await app.inject({ url: '/api/v1/catalog', headers: { ...operator.auth, origin: ORIGIN } });
    assert.equal(current.statusCode, 200, current.body);
    const put = await app.inject({
      method: 'PUT',
      url: '/api/v1/catalog',
      headers: {
        ...operator.auth,
        origin: ORIGIN,
        'content-type': 'application/json',
        'if-match': String(current.headers.etag),
      },
      payload: current.body,
    });
    assert.equal(put.statusCode, 200, put.body);
    assert.equal(put.headers['access-control-allow-origin'], ORIGIN);
    assert.ok(list(put.headers['access-control-expose-headers']).includes('etag'));
  });

  it('every header the API answers with, beyond what a browser shows a page anyway, is exposed', async (t) => {
    const { app } = await build(t, { env: { CORS_ORIGINS: ORIGIN, RATE_LIMIT_ANONYMOUS: '2' } });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    const from = { origin: ORIGIN };
    // The headers the document declares, and those of a sample of real answers.
    const declared = new Set<string>();
    for (const { op } of await operations(app))
      for (const r of Object.values(op.responses ?? {}))
        for (const h of Object.keys(r.headers ?? {})) declared.add(h.toLowerCase());
    const answers = [
      // From an address of their own, whose anonymous budget of 2 the third one is over.
      await app.inject({ url: '/api/v1/plans', headers: from, remoteAddress: '10.9.9.9' }),
      await app.inject({ url: '/api/v1/plans', headers: from, remoteAddress: '10.9.9.9' }),
      await app.inject({ url: '/api/v1/plans', headers: from, remoteAddress: '10.9.9.9' }), // 429: Retry-After
      await app.inject({ url: '/api/v1/api-tokens?per_page=1', headers: { ...admin.auth, ...from } }), // Link
      await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...admin.auth, ...from },
        payload: { name: 'second', scopes: ['apps:read'] },
      }), // 201: Location
      await app.inject({ url: '/api/v1/api-tokens', headers: { authorization: 'Bearer nope', ...from } }), // 401
      await app.inject({ method: 'DELETE', url: '/api/v1/plans', headers: { ...admin.auth, ...from } }), // 405: Allow
      await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...admin.auth, ...from, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        payload: '{}',
      }), // 415: Accept-Encoding
    ];
    const seen = new Set(declared);
    for (const res of answers) for (const h of Object.keys(res.headers)) seen.add(h.toLowerCase());
    for (const h of ['retry-after', 'link', 'location', 'www-authenticate', 'allow', 'accept-encoding', 'etag'])
      assert.ok(seen.has(h), `the sample answers carry ${h}`);
    const needed = [...seen].filter((h) => !NOT_FOR_THE_PAGE.has(h) && !h.startsWith('access-control-')).sort();
    for (const res of answers) {
      assert.equal(res.headers['access-control-allow-origin'], ORIGIN, `${res.statusCode}`);
      const exposed = list(res.headers['access-control-expose-headers']);
      assert.deepEqual(
        needed.filter((h) => !exposed.includes(h)),
        [],
        `${res.statusCode}: not exposed`,
      );
    }
  });
});
