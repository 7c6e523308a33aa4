import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AccessLog } from '../../src/http/request-log.js';
import { createLogger, redactSecrets } from '../../src/logging.js';
import { build, LogCapture } from '../helpers/app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SECRET = 'icat_4Rk9zQ2mXc7LpW1vB8nT5yH3jD6fG0sAeKq2Zx';

// app.inject()'s peer is 127.0.0.1: trusted as a proxy with this setting.
const BEHIND_PROXY = { TRUST_PROXY: '127.0.0.1' };

describe('request ids and logs', () => {
  it("a trusted proxy's well-formed X-Request-Id is used, echoed and logged", async (t) => {
    const { app, logs } = await build(t, { env: BEHIND_PROXY });
    const res = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'lb-7f3a.42:9_x' } });
    assert.equal(res.headers['x-request-id'], 'lb-7f3a.42:9_x');
    const line = logs.records().find((r) => r.msg === 'request completed');
    assert.equal(line?.request_id, 'lb-7f3a.42:9_x');
    assert.deepEqual(line?.req, { method: 'GET', url: '/healthz', remote_address: '127.0.0.1' });
    assert.deepEqual(line?.res, { status_code: 200 });
    assert.equal(typeof line?.response_time_ms, 'number');
  });

  it("a client's X-Request-Id is never taken: without TRUST_PROXY, or from a peer it does not cover", async (t) => {
    for (const [env, remoteAddress] of [
      [{}, '127.0.0.1'],
      [{ TRUST_PROXY: 'false' }, '127.0.0.1'],
      [{ TRUST_PROXY: '10.0.0.0/8' }, '192.0.2.7'],
      [{ TRUST_PROXY: '10.0.0.0/8' }, '::ffff:192.0.2.7'],
    ] as const) {
      const { app, logs } = await build(t, { env });
      const res = await app.inject({ url: '/healthz', remoteAddress, headers: { 'x-request-id': 'chosen-by-client' } });
      const id = res.headers['x-request-id'] as string;
      const what = `${JSON.stringify(env)} from ${remoteAddress}`;
      assert.match(id, UUID, what);
      const line = logs.records().find((r) => r.msg === 'request completed');
      assert.equal(line?.request_id, id, what);
      assert.ok(!logs.text.includes('chosen-by-client'), what);
    }
    // The peer, never a forwarded address, is what must be trusted.
    const { app } = await build(t, { env: { TRUST_PROXY: '10.0.0.0/8' } });
    const spoofed = await app.inject({
      url: '/healthz',
      remoteAddress: '192.0.2.7',
      headers: { 'x-request-id': 'chosen-by-client', 'x-forwarded-for': '10.0.0.1' },
    });
    assert.match(spoofed.headers['x-request-id'] as string, UUID);
    const proxied = await app.inject({
      url: '/healthz',
      remoteAddress: '::ffff:10.0.0.1',
      headers: { 'x-request-id': 'from-the-proxy' },
    });
    assert.equal(proxied.headers['x-request-id'], 'from-the-proxy', 'an IPv4-mapped peer in the range');
  });

  it("a missing or malformed X-Request-Id, even a trusted proxy's, is replaced by a generated UUID", async (t) => {
    const { app } = await build(t, { env: BEHIND_PROXY });
    const ids = new Set<string>();
    for (const header of [undefined, '', 'has spaces', 'x'.repeat(129), 'a\u00e9b', '{"inject":1}']) {
      const res = await app.inject({
        method: 'GET',
        url: '/healthz',
        headers: header === undefined ? {} : { 'x-request-id': header },
      });
      const id = res.headers['x-request-id'] as string;
      assert.match(id, UUID, `header ${JSON.stringify(header)}`);
      ids.add(id);
    }
    assert.equal(ids.size, 6, 'each request gets its own id');
  });

  it('a hostile X-Request-Id never reaches the access line, which quotes the id as it is', async (t) => {
    const { app, logs } = await build(t, { env: BEHIND_PROXY });
    for (const header of ['a"b', 'a\\b', '","level":"fatal', '</script>', 'a\u2028b']) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/plans', headers: { 'x-request-id': header } });
      assert.equal(res.statusCode, 200);
      const id = res.headers['x-request-id'] as string;
      assert.match(id, UUID, `header ${JSON.stringify(header)}`);
      // records() parses every line: one broken by the raw quoting would throw here.
      const line = logs.records().find((r) => r.msg === 'request completed' && r.request_id === id);
      assert.equal(line?.level, 'info', `the access line of ${JSON.stringify(header)}`);
    }
    assert.ok(!logs.text.includes('fatal'));
  });

  it('errors carry the request id in the header and the problem body', async (t) => {
    const { app } = await build(t, { env: BEHIND_PROXY });
    const res = await app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'abc' } });
    assert.equal(res.headers['x-request-id'], 'abc');
    assert.equal(res.json<{ request_id: string }>().request_id, 'abc');
  });

  it('the Authorization header and token secrets never reach a log line', async (t) => {
    const { app, logs } = await build(t, { env: { LOG_LEVEL: 'trace' } });
    await app.inject({ method: 'GET', url: '/healthz', headers: { authorization: `Bearer ${SECRET}` } });
    await app.inject({
      method: 'GET',
      url: `/nope?access_token=${SECRET}&x=1`,
      headers: { authorization: 'Basic dXNlcjpwYXNz' },
    });
    await app.inject({ method: 'GET', url: `/nope/${SECRET}` });
    await app.inject({
      method: 'POST',
      url: '/healthz',
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
      payload: `{"token":"${SECRET}"}`,
    });
    assert.ok(logs.lines.length >= 8, 'trace logging produced lines');
    for (const needle of [SECRET, SECRET.slice(5), 'dXNlcjpwYXNz']) {
      assert.ok(!logs.text.includes(needle), `log contains ${needle}`);
    }
    assert.ok(logs.text.includes('access_token=[REDACTED]'));
    assert.ok(logs.text.includes('/nope/icat_[REDACTED]'));
  });

  it('ACCESS_LOG=errors: no line for answers below 400, a line for every error', async (t) => {
    const { app, logs } = await build(t, { env: { ACCESS_LOG: 'errors', ...BEHIND_PROXY } });
    assert.equal((await app.inject({ url: '/api/v1/plans', headers: { 'x-request-id': 'quiet-ok' } })).statusCode, 200);
    assert.equal((await app.inject({ url: '/api/v1/nope', headers: { 'x-request-id': 'loud-404' } })).statusCode, 404);
    assert.equal(
      (await app.inject({ url: '/api/v1/api-tokens', headers: { 'x-request-id': 'loud-401' } })).statusCode,
      401,
    );
    const completed = logs
      .records()
      .filter((r) => r.msg === 'request completed')
      .map((r) => r.request_id);
    assert.deepEqual(completed, ['loud-404', 'loud-401']);
  });

  it('log timestamps are RFC 3339 UTC and follow the clock', async () => {
    const capture = new LogCapture();
    const logger = createLogger('info', capture);
    logger.info('first');
    await new Promise((r) => setTimeout(r, 5));
    logger.info('second');
    const times = capture.records().map((r) => String(r.time));
    assert.equal(times.length, 2);
    for (const time of times) {
      assert.match(time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.ok(Math.abs(Date.parse(time) - Date.now()) < 1000, time);
    }
    assert.ok(Date.parse(times[1]!) > Date.parse(times[0]!), 'a later millisecond, a later time');
  });

  it('redactSecrets scrubs token-shaped strings, bearer credentials and secret parameters', () => {
    assert.equal(redactSecrets(`x ${SECRET} y`), 'x icat_[REDACTED] y');
    assert.equal(redactSecrets('Authorization: Bearer abc.def'), 'Authorization: Bearer [REDACTED]');
    assert.equal(redactSecrets('/p?token=abc&key=k&ok=1'), '/p?token=[REDACTED]&key=[REDACTED]&ok=1');
    assert.equal(
      redactSecrets('/api/v1/api-tokens/tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H'),
      '/api/v1/api-tokens/tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H',
      'ids stay readable',
    );
    // Each pattern alone, and all at once (the quick pre-checks must not skip any).
    assert.equal(redactSecrets(`/p/${SECRET}`), '/p/icat_[REDACTED]');
    assert.equal(redactSecrets('basic\tdXNlcjpwYXNz'), 'basic\t[REDACTED]');
    assert.equal(redactSecrets('/p?secret=s'), '/p?secret=[REDACTED]');
    assert.equal(
      redactSecrets(`Bearer b ${SECRET} /p?x=1&password=p`),
      'Bearer [REDACTED] icat_[REDACTED] /p?x=1&password=[REDACTED]',
    );
    assert.equal(redactSecrets('/api/v1/plans'), '/api/v1/plans');
  });

  it('each access line has its own URL and address, scrubbed, whatever the line before had', () => {
    const capture = new LogCapture();
    const logger = createLogger('info', capture);
    const access = new AccessLog(logger);
    const sent: [string, string | undefined][] = [
      ['/api/v1/plans', '10.0.0.1'],
      ['/api/v1/plans', '10.0.0.1'],
      [`/nope/${SECRET}`, undefined],
      ['/api/v1/plans', '10.0.0.2'],
      ['/api/v1/regions?token=abc', '10.0.0.2'],
      ['/api/v1/plans', undefined],
      ['/api/v1/plans', '"quoted"\\'],
      ['/api/v1/plans?q="x\\\n</', '10.0.0.3'],
    ];
    for (const [url, remoteAddress] of sent) {
      access.write({ requestId: 'r1', method: 'GET', url, remoteAddress, status: 200, ms: 1.234 });
    }
    logger.flush();
    const reqs = capture.records().map((r) => r.req);
    assert.deepEqual(
      reqs,
      sent.map(([url, remoteAddress]) => ({
        method: 'GET',
        url: redactSecrets(url),
        ...(remoteAddress === undefined ? {} : { remote_address: remoteAddress }),
      })),
    );
    assert.ok(!capture.text.includes(SECRET.slice(5)));
    assert.equal(capture.records()[0]!.response_time_ms, 1.23);
  });
});
