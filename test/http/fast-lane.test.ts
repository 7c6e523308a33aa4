// The fast lane (src/http/fast-lane.ts) answers the catalog lists' plain GETs on a
// listening server exactly as the full path does (app.inject() always takes the full path),
// and leaves everything else to it with nothing counted.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { build, mintToken, type Built } from '../helpers/app.js';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { parseExposition, value } from '../helpers/prometheus.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/** A request over a real socket; `headers` as name, value, ... (a name may repeat). */
function send(port: number, path: string, headers: string[] = [], method = 'GET', body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // A header list replaces Node's defaults, Host included.
    const all = ['host', `127.0.0.1:${port}`, ...headers];
    const req = http.request({ host: '127.0.0.1', port, path, method, headers: all, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A listening app. Its peers (this test, app.inject()) are loopback, trusted as a proxy
 * unless `env` says otherwise: the request id a test sends is taken by both paths, so their
 * answers compare header for header and their lines are found by it.
 */
async function listening(t: TestContext, env: Record<string, string> = {}): Promise<Built & { port: number }> {
  const built = await build(t, { env: { RATE_LIMIT_ANONYMOUS: '1000', TRUST_PROXY: '127.0.0.1', ...env } });
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, port: (built.app.server.address() as AddressInfo).port };
}

// What only one of the two ways adds (the socket's framing) or what is fresh per request.
const OWN = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'ratelimit']);

/** The headers that must match, with RateLimit's remaining count read apart. */
function comparable(headers: Answer['headers']): { rest: Record<string, unknown>; remaining: number | null } {
  const rest = Object.fromEntries(Object.entries(headers).filter(([k]) => !OWN.has(k)));
  const state = headers.ratelimit;
  const m = typeof state === 'string' ? /;r=(\d+);/.exec(state) : null;
  return { rest, remaining: m === null ? null : Number(m[1]) };
}

/**
 * The request over the socket, then the same through app.inject(): same status, headers
 * (the request id is sent, so echoed by both) and body, counted against the same window.
 */
async function sameAsFullPath(b: Built & { port: number }, path: string, headers: Record<string, string> = {}) {
  const sent = { 'x-request-id': 'lane-test', ...headers };
  const viaSocket = await send(b.port, path, Object.entries(sent).flat());
  const full = await b.app.inject({ method: 'GET', url: path, headers: sent });
  assert.equal(viaSocket.status, full.statusCode, path);
  assert.equal(viaSocket.body, full.body, path);
  const a = comparable(viaSocket.headers);
  const c = comparable(full.headers);
  assert.deepEqual(a.rest, c.rest, path);
  // One window for both (a 304 gives its unit back).
  if (a.remaining !== null) assert.equal(c.remaining, a.remaining - (full.statusCode === 304 ? 0 : 1), path);
  else assert.equal(c.remaining, null);
  return viaSocket;
}

test('a plain catalog GET is answered by the lane, header for header as the full path answers it', async (t) => {
  const b = await listening(t);
  const { lane } = b.app.infracat;
  for (const kind of ['images', 'plans', 'regions']) {
    const before = lane.served;
    const answer = await sameAsFullPath(b, `/api/v1/${kind}`);
    assert.equal(answer.status, 200);
    assert.equal(lane.served, before + 1, `${kind}: served by the lane`);
    assert.ok((JSON.parse(answer.body) as unknown[]).length > 0);
  }
  // A request id the full path would not echo is replaced there and here alike.
  const minted = await send(b.port, '/api/v1/plans', ['x-request-id', 'bad id with spaces']);
  assert.match(String(minted.headers['x-request-id']), /^[0-9a-f-]{36}$/);
});

test("a client's X-Request-Id is replaced by the lane as by the full path; a trusted proxy's taken", async (t) => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  for (const trust of ['false', '10.0.0.0/8']) {
    const b = await listening(t, { TRUST_PROXY: trust });
    const viaSocket = await send(b.port, '/api/v1/plans', ['x-request-id', 'chosen-by-client']);
    const full = await b.app.inject({ url: '/api/v1/plans', headers: { 'x-request-id': 'chosen-by-client' } });
    assert.equal(b.app.infracat.lane.served, 1, `TRUST_PROXY=${trust}: the lane answered`);
    for (const res of [viaSocket.headers, full.headers]) assert.match(String(res['x-request-id']), UUID, trust);
    assert.notEqual(viaSocket.headers['x-request-id'], full.headers['x-request-id'], 'each its own');
  }
  const b = await listening(t, { TRUST_PROXY: '127.0.0.0/8' });
  const viaSocket = await send(b.port, '/api/v1/plans', ['x-request-id', 'from-the-proxy']);
  const full = await b.app.inject({ url: '/api/v1/plans', headers: { 'x-request-id': 'from-the-proxy' } });
  assert.equal(b.app.infracat.lane.served, 1);
  assert.equal(viaSocket.headers['x-request-id'], 'from-the-proxy');
  assert.equal(full.headers['x-request-id'], 'from-the-proxy');
});

test('a valid cached token is answered by the lane, counted once as a verification and a use', async (t) => {
  const b = await listening(t);
  const { lane, tokens } = b.app.infracat;
  const token = await mintToken(b.app, ['plans:read']);
  // The first use loads the token into the verification cache (the full path does that).
  await send(b.port, '/api/v1/plans', ['authorization', token.auth.authorization]);
  tokens.lastUsed.forget(token.id);
  const served = lane.served;
  const verified = tokens.service.verifications.ok;
  const hits = tokens.cache.hits;
  const answer = await send(b.port, '/api/v1/plans', ['authorization', token.auth.authorization]);
  assert.equal(answer.status, 200);
  assert.equal(lane.served, served + 1);
  assert.equal(tokens.service.verifications.ok, verified + 1);
  assert.equal(tokens.cache.hits, hits + 1);
  assert.match(String(answer.headers['ratelimit-policy']), /^"token";/);
  assert.notEqual(tokens.lastUsed.pending(token.id), undefined, 'the use is recorded for last_used_at');
  await sameAsFullPath(b, '/api/v1/plans', token.auth);
});

test('everything but the plain case goes the full way, unchanged, with nothing counted by the lane', async (t) => {
  const b = await listening(t);
  const { lane, tokens } = b.app.infracat;
  const etag = String((await send(b.port, '/api/v1/plans')).headers.etag);
  const other = await mintToken(b.app, ['apps:read']);
  const cases: [string, Record<string, string>][] = [
    ['/api/v1/plans?min_vcpus=2', {}],
    ['/api/v1/plans?region=nowhere', {}],
    ['/api/v1/plans', { 'if-none-match': etag }],
    ['/api/v1/plans/', {}],
    ['/api/v1//plans', {}],
    ['/API/v1/plans', {}],
    ['/api/v1/plans', { authorization: 'Bearer icat_notatoken' }],
    ['/api/v1/plans', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['/api/v1/plans', other.auth],
    ['/api/v1/plans?access_token=x', {}],
  ];
  for (const [path, headers] of cases) {
    const served = lane.served;
    const verifications = { ...tokens.service.verifications };
    await sameAsFullPath(b, path, headers);
    assert.equal(lane.served, served, `${path} ${JSON.stringify(headers)}: not the lane's`);
    // The full path counted each verification once per request it made (two: socket, inject).
    for (const [outcome, n] of Object.entries(tokens.service.verifications)) {
      const before = verifications[outcome as keyof typeof verifications];
      assert.ok(n - before === 0 || n - before === 2, `${outcome} counted once per request`);
    }
  }
  // HEAD, a body on a GET, two Authorization headers: the full path's answers.
  const served = lane.served;
  assert.equal((await send(b.port, '/api/v1/plans', [], 'HEAD')).status, 200);
  const withBody = await send(
    b.port,
    '/api/v1/plans',
    ['content-type', 'application/json', 'content-length', '2'],
    'GET',
    '{}',
  );
  assert.equal(withBody.status, (await b.app.inject({ url: '/api/v1/plans', payload: {} })).statusCode);
  // Two Host headers: which one did a proxy act on? The full path's 400.
  const twoHosts = await send(b.port, '/api/v1/plans', ['host', 'evil.example']);
  assert.equal(twoHosts.status, 400);
  assert.equal(lane.served, served);
  const token = await mintToken(b.app, ['plans:read']);
  await send(b.port, '/api/v1/plans', ['authorization', token.auth.authorization]); // now cached
  assert.equal(lane.served, served, 'a token not yet cached: the full path loads it');
  const twice = await send(b.port, '/api/v1/plans', [
    'authorization',
    token.auth.authorization,
    'authorization',
    token.auth.authorization,
  ]);
  assert.equal(twice.status, 400);
  assert.equal(lane.served, served);
});

test('over the rate limit the lane steps aside: the full path refuses with its 429', async (t) => {
  const b = await listening(t, { RATE_LIMIT_ANONYMOUS: '3' });
  const { lane } = b.app.infracat;
  const states = [];
  for (let i = 0; i < 3; i++) {
    const answer = await send(b.port, '/api/v1/plans');
    assert.equal(answer.status, 200);
    states.push(answer.headers.ratelimit);
  }
  assert.equal(lane.served, 3);
  assert.deepEqual(
    states.map((s) => /;r=(\d+);/.exec(String(s))![1]),
    ['2', '1', '0'],
  );
  const refused = await send(b.port, '/api/v1/plans');
  assert.equal(refused.status, 429);
  assert.ok(refused.headers['retry-after'] !== undefined);
  assert.equal(lane.served, 3);
});

test('answers in a row from one route each carry their own request id, token headers and length', async (t) => {
  const b = await listening(t);
  const { lane } = b.app.infracat;
  const first = await send(b.port, '/api/v1/plans', ['x-request-id', 'first-id']);
  const minted = await send(b.port, '/api/v1/plans');
  const again = await send(b.port, '/api/v1/plans', ['x-request-id', 'third-id']);
  assert.equal(lane.served, 3);
  assert.equal(first.headers['x-request-id'], 'first-id');
  assert.match(
    String(minted.headers['x-request-id']),
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  );
  assert.equal(again.headers['x-request-id'], 'third-id');
  // Two tokens' checks in turn: each answer names its own token.
  const a = await mintToken(b.app, ['apps:read'], 'a');
  const c = await mintToken(b.app, ['apps:read'], 'c');
  const check = '/api/v1/auth/check?scope=apps:read';
  for (const token of [a, c, a, c]) {
    const answer = await send(b.port, check, ['authorization', token.auth.authorization]);
    assert.equal(answer.headers['x-token-id'], token.id);
    assert.equal(answer.headers['x-token-name'], token === a ? 'a' : 'c');
    assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.body));
    assert.equal((JSON.parse(answer.body) as { id: string }).id, token.id);
  }
});

test('behind a trusted proxy the lane counts the client address the full path counts', async (t) => {
  const b = await listening(t, { RATE_LIMIT_ANONYMOUS: '2', TRUST_PROXY: '127.0.0.1' });
  const from = (ip: string) => send(b.port, '/api/v1/plans', ['x-forwarded-for', ip]);
  assert.equal((await from('203.0.113.7')).status, 200);
  assert.equal((await from('203.0.113.7')).status, 200);
  assert.equal((await from('203.0.113.7')).status, 429);
  assert.equal((await from('203.0.113.8')).status, 200);
  assert.equal(b.app.infracat.lane.served, 3);
  // The full path (app.inject's peer is 127.0.0.1 too) shares the window.
  const full = await b.app.inject({ url: '/api/v1/plans', headers: { 'x-forwarded-for': '203.0.113.8' } });
  assert.equal(full.statusCode, 200);
  assert.equal((await from('203.0.113.8')).status, 429);
});

test('the lane counts an IPv6 client by its /64 (IPv4-mapped as IPv4), as the full path does', async (t) => {
  const b = await listening(t, { RATE_LIMIT_ANONYMOUS: '3', TRUST_PROXY: '127.0.0.1' });
  const from = (ip: string) => send(b.port, '/api/v1/plans', ['x-forwarded-for', ip]);
  const statuses = [];
  for (let i = 1; i <= 10; i++) statuses.push((await from(`2001:db8:7:7::${i}`)).status);
  assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429], 'one budget for the /64');
  assert.equal(b.app.infracat.lane.served, 3);
  assert.equal((await from('2001:db8:7:8::1')).status, 200, 'the next /64 has its own');
  // The full path shares the window: one unit left of the next /64's after the lane's first.
  const full = (ip: string) => b.app.inject({ url: '/api/v1/plans', headers: { 'x-forwarded-for': ip } });
  assert.equal((await full('2001:db8:7:8:ffff::2')).statusCode, 200);
  assert.equal((await from('2001:db8:7:8::3')).status, 200);
  assert.equal((await full('2001:db8:7:8::4')).statusCode, 429);
  assert.equal((await from('2001:db8:7:8::5')).status, 429);
  // An IPv4 client and its IPv4-mapped spelling share one budget too.
  assert.equal((await from('192.0.2.9')).status, 200);
  assert.equal((await from('::ffff:192.0.2.9')).status, 200);
  assert.equal((await full('::ffff:c000:209')).statusCode, 200);
  assert.equal((await from('192.0.2.9')).status, 429);
});

test("the lane's access line and metrics are the full path's", async (t) => {
  const b = await listening(t);
  await send(b.port, '/api/v1/plans', ['x-request-id', 'lane-line']);
  await b.app.inject({ url: '/api/v1/plans', headers: { 'x-request-id': 'full-line' } });
  const line = (id: string) => {
    const found = b.logs.records().filter((r) => r.request_id === id);
    assert.equal(found.length, 1, id);
    return found[0]!;
  };
  const lane = line('lane-line');
  const full = line('full-line');
  assert.deepEqual(Object.keys(lane), Object.keys(full), 'same fields in the same order');
  const strip = (r: Record<string, unknown>) => ({ ...r, time: 0, request_id: 0, response_time_ms: 0 });
  assert.deepEqual(strip(lane), strip(full));
  assert.match(String(lane.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(typeof lane.response_time_ms, 'number');
  const metrics = parseExposition((await b.app.inject({ url: '/metrics' })).body);
  const labels = { method: 'GET', route: '/api/v1/plans', status: '200' };
  assert.equal(value(metrics, 'infracat_http_requests_total', labels), 2);
  assert.equal(value(metrics, 'infracat_http_request_duration_seconds_count', labels), 2);
});

test('with ACCESS_LOG=errors the lane writes no line for its answers', async (t) => {
  const b = await listening(t, { ACCESS_LOG: 'errors' });
  await send(b.port, '/api/v1/plans', ['x-request-id', 'quiet']);
  assert.equal(b.app.infracat.lane.served, 1);
  assert.equal(b.logs.records().filter((r) => r.request_id === 'quiet').length, 0);
});

test('with CORS on, the lane stays shut: the plugin answers every request', async (t) => {
  const b = await listening(t, { CORS_ORIGINS: 'https://console.example' });
  const answer = await send(b.port, '/api/v1/plans', ['origin', 'https://console.example']);
  assert.equal(answer.headers['access-control-allow-origin'], 'https://console.example');
  await send(b.port, '/api/v1/plans');
  assert.equal(b.app.infracat.lane.served, 0);
});

test("in token mode the lane serves only a token holding the kind's read scope", async (t) => {
  const b = await listening(t, { CATALOG_ACCESS: 'token' });
  const { lane } = b.app.infracat;
  assert.equal((await send(b.port, '/api/v1/plans')).status, 401);
  const reader = await mintToken(b.app, ['plans:read']);
  const other = await mintToken(b.app, ['images:read']);
  for (const tk of [reader, other]) await send(b.port, '/api/v1/plans', ['authorization', tk.auth.authorization]);
  const served = lane.served;
  await sameAsFullPath(b, '/api/v1/plans', reader.auth);
  assert.equal(lane.served, served + 1);
  const refused = await sameAsFullPath(b, '/api/v1/plans', other.auth);
  assert.equal(refused.status, 403);
  assert.equal(lane.served, served + 1);
});

// The check's lane: a cached token and plain scope parameters.
test("a forward-auth check with plain scope parameters and a cached token is the lane's", async (t) => {
  const b = await listening(t);
  const { lane } = b.app.infracat;
  const token = await mintToken(b.app, ['apps:read', 'plans:read'], 'ci "deploy" – ü');
  const check = '/api/v1/auth/check?scope=apps:read';
  await send(b.port, check, ['authorization', token.auth.authorization]); // now cached
  let served = lane.served;
  for (const path of [check, `${check}&scope=plans:read`]) {
    const answer = await sameAsFullPath(b, path, token.auth);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-token-id'], token.id);
    assert.equal(answer.headers['cache-control'], 'no-store');
    assert.equal(answer.headers.ratelimit, undefined, 'the check is not rate limited');
    assert.equal(lane.served, ++served, path);
  }
  // Everything else is the full path's: no token, a scope not held, an unknown scope, an
  // encoded or space-separated one, another parameter, the rule table (no scope), a HEAD.
  const cases: [string, Record<string, string>][] = [
    [check, {}],
    ['/api/v1/auth/check?scope=api-tokens:read', token.auth],
    ['/api/v1/auth/check?scope=nothing:read', token.auth],
    ['/api/v1/auth/check?scope=apps%3Aread', token.auth],
    ['/api/v1/auth/check?scope=apps:read+plans:read', token.auth],
    ['/api/v1/auth/check?scope=apps:read&x=1', token.auth],
    ['/api/v1/auth/check?scope=', token.auth],
    ['/api/v1/auth/check', token.auth],
  ];
  for (const [path, headers] of cases) {
    await sameAsFullPath(b, path, headers);
    assert.equal(lane.served, served, `${path}: not the lane's`);
  }
  assert.equal((await send(b.port, check, ['authorization', token.auth.authorization], 'HEAD')).status, 200);
  assert.equal(lane.served, served);
});

test("the lane keeps a check's query read, never its verdict: each token is judged on it anew", async (t) => {
  const b = await listening(t);
  const { lane } = b.app.infracat;
  const apps = await mintToken(b.app, ['apps:read']);
  const plans = await mintToken(b.app, ['plans:read']);
  const both = await mintToken(b.app, ['apps:read', 'plans:read']);
  const check = '/api/v1/auth/check?scope=apps:read';
  for (const token of [apps, plans, both]) await send(b.port, check, ['authorization', token.auth.authorization]);
  const judged = async (token: { id: string; auth: { authorization: string } }, path: string, status: number) => {
    const before = lane.served;
    const answer = await send(b.port, path, ['authorization', token.auth.authorization]);
    assert.equal(answer.status, status, path);
    if (status === 200) assert.equal(answer.headers['x-token-id'], token.id);
    assert.equal(lane.served, before + (status === 200 ? 1 : 0), `${path}: the lane's only when allowed`);
  };
  await judged(apps, check, 200);
  await judged(plans, check, 403);
  await judged(apps, check, 200);
  // More distinct plain queries than the lane keeps (every sequence of the two scopes, up
  // to 8 long: 510), each answered as itself; then the first ones again.
  const sequences: string[][] = [[]];
  for (let n = 1; n <= 8; n++)
    for (const seq of sequences.filter((q) => q.length === n - 1))
      sequences.push([...seq, 'apps:read'], [...seq, 'plans:read']);
  const queries = sequences.slice(1).map((seq) => `/api/v1/auth/check?${seq.map((s) => `scope=${s}`).join('&')}`);
  assert.equal(queries.length, 510);
  for (const path of queries) await judged(both, path, 200);
  await judged(plans, check, 403);
  await judged(apps, check, 200);
  await judged(apps, `${check}&scope=plans:read`, 403);
});

test('at LOG_LEVEL=debug every request takes the full path, which logs it as it comes in', async (t) => {
  const b = await listening(t, { LOG_LEVEL: 'debug' });
  await send(b.port, '/api/v1/plans', ['x-request-id', 'debugged']);
  assert.equal(b.app.infracat.lane.served, 0);
  const lines = b.logs.records().filter((r) => r.request_id === 'debugged');
  assert.deepEqual(
    lines.map((r) => r.msg),
    ['incoming request', 'request completed'],
  );
});

/** GETs over one kept-alive connection, in order; `reused`: whether it was the same one. */
function keptAlive(port: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (path: string, authorization: string) =>
    new Promise<{ status: number; tokenId: unknown; reused: boolean }>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path, agent, headers: { authorization } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, tokenId: res.headers['x-token-id'], reused }));
      });
      const reused = req.reusedSocket;
      req.on('error', reject);
    });
  return { get, close: () => agent.destroy() };
}

test('on one connection the lane hashes a repeated header once, yet judges its token on every request', async (t) => {
  const b = await listening(t);
  const { lane } = b.app.infracat;
  const check = '/api/v1/auth/check?scope=plans:read';
  const a = await mintToken(b.app, ['plans:read'], 'a');
  const other = await mintToken(b.app, ['plans:read'], 'b');
  const narrow = await mintToken(b.app, ['apps:read'], 'narrow');
  const conn = keptAlive(b.port);
  t.after(() => conn.close());
  const first = await conn.get(check, a.auth.authorization); // the full path caches it
  assert.deepEqual([first.status, first.tokenId, first.reused], [200, a.id, false]);
  await conn.get(check, other.auth.authorization);
  await conn.get(check, narrow.auth.authorization);
  const served = lane.served;
  // The same header again, then another token's: each answered as itself.
  assert.deepEqual(await conn.get(check, a.auth.authorization), { status: 200, tokenId: a.id, reused: true });
  assert.deepEqual(await conn.get(check, a.auth.authorization), { status: 200, tokenId: a.id, reused: true });
  assert.deepEqual(await conn.get(check, other.auth.authorization), { status: 200, tokenId: other.id, reused: true });
  assert.deepEqual(await conn.get(check, a.auth.authorization), { status: 200, tokenId: a.id, reused: true });
  assert.equal(lane.served, served + 4);
  // A's secret with one character changed, first or last of its random part, right after A's
  // header on the connection: not A (the checksum no longer matches).
  const secret = a.secret;
  const at = [secret.indexOf('_') + 1, secret.length - 7];
  for (const i of at) {
    const changed = secret.slice(0, i) + (secret[i] === 'x' ? 'y' : 'x') + secret.slice(i + 1);
    assert.equal((await conn.get(check, a.auth.authorization)).status, 200);
    const refused = await conn.get(check, `Bearer ${changed}`);
    assert.deepEqual([refused.status, refused.tokenId, refused.reused], [401, undefined, true], `changed at ${i}`);
  }
  // The scopes are checked on each request: A's remembered header where A lacks the scope,
  // and another token without plans:read.
  assert.equal((await conn.get(check, a.auth.authorization)).status, 200);
  assert.equal((await conn.get('/api/v1/auth/check?scope=apps:read', a.auth.authorization)).status, 403);
  assert.equal((await conn.get(check, narrow.auth.authorization)).status, 403);
  // Deleted while its header is remembered: refused on the very next request.
  assert.equal((await conn.get(check, a.auth.authorization)).status, 200);
  assert.ok(await b.app.infracat.tokens.service.delete(OPERATOR_ACCOUNT_ID, a.id, null, TEST_CONTEXT));
  const gone = await conn.get(check, a.auth.authorization);
  assert.deepEqual([gone.status, gone.reused], [401, true]);
});
