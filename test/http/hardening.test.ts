// What a production JSON API owes its clients: security headers, CORS only where
// configured, no caching of token data, and time-outs against slow clients.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { build, mintToken } from '../helpers/app.js';

describe('hardening', () => {
  it('security headers on JSON answers and on errors', async (t) => {
    const { app } = await build(t);
    for (const url of ['/api/v1/plans', '/nope', '/api/v1/api-tokens']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(res.headers['x-frame-options'], 'DENY', url);
      assert.equal(res.headers['referrer-policy'], 'no-referrer', url);
      assert.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'", url);
      assert.equal(res.headers['cross-origin-resource-policy'], 'same-origin', url);
      assert.match(String(res.headers['strict-transport-security']), /max-age=\d+/);
      assert.equal(res.headers['x-powered-by'], undefined);
    }
  });

  it('Cache-Control: no-store on everything carrying token data', async (t) => {
    const { app } = await build(t);
    const tok = await mintToken(app, ['api-tokens:write']);
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: tok.auth,
      payload: { name: 'x', scopes: ['apps:read'] },
    });
    const id = created.json<{ id: string }>().id;
    const calls = [
      created,
      await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: tok.auth }),
      await app.inject({ method: 'GET', url: `/api/v1/api-tokens/${id}`, headers: tok.auth }),
      await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: tok.auth }),
      await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens/introspect',
        headers: tok.auth,
        payload: { token: tok.secret },
      }),
      await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=api-tokens:read', headers: tok.auth }),
      await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${id}`, headers: tok.auth }),
      await app.inject({ method: 'GET', url: '/api/v1/api-tokens' }),
    ];
    for (const res of calls)
      assert.equal(res.headers['cache-control'], 'no-store', `${res.statusCode} ${res.body.slice(0, 60)}`);
  });

  it('CORS is off by default', async (t) => {
    const { app } = await build(t);
    const pre = await app.inject({
      method: 'OPTIONS',
      url: '/api/v1/plans',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    });
    assert.equal(pre.headers['access-control-allow-origin'], undefined);
    const get = await app.inject({ method: 'GET', url: '/api/v1/plans', headers: { origin: 'https://evil.example' } });
    assert.equal(get.headers['access-control-allow-origin'], undefined);
  });

  it('CORS allows exactly the configured origins', async (t) => {
    const { app } = await build(t, { env: { CORS_ORIGINS: 'https://console.example.com, http://localhost:5173' } });
    const pre = await app.inject({
      method: 'OPTIONS',
      url: '/api/v1/api-tokens',
      headers: {
        origin: 'https://console.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    assert.equal(pre.statusCode, 204);
    assert.equal(pre.headers['access-control-allow-origin'], 'https://console.example.com');
    assert.match(String(pre.headers['access-control-allow-headers']), /Authorization/);
    assert.match(String(pre.headers['access-control-allow-methods']), /POST/);
    const get = await app.inject({ method: 'GET', url: '/api/v1/plans', headers: { origin: 'http://localhost:5173' } });
    assert.equal(get.headers['access-control-allow-origin'], 'http://localhost:5173');
    assert.match(String(get.headers['access-control-expose-headers']), /RateLimit/);
    const other = await app.inject({
      method: 'GET',
      url: '/api/v1/plans',
      headers: { origin: 'https://evil.example' },
    });
    assert.notEqual(other.headers['access-control-allow-origin'], 'https://evil.example');
  });

  it('a client that trickles its headers is cut off after HEADERS_TIMEOUT_MS', async (t) => {
    const { app } = await build(t, { env: { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '2000' } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    assert.equal(app.server.headersTimeout, 1000);
    assert.equal(app.server.requestTimeout, 2000);
    assert.equal(app.server.keepAliveTimeout, 65000, 'KEEP_ALIVE_TIMEOUT_MS default');
    const { port } = app.server.address() as { port: number };
    const socket = net.connect(port, '127.0.0.1');
    t.after(() => socket.destroy());
    await new Promise<void>((r) => socket.once('connect', () => r()));
    const started = Date.now();
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const timer = setInterval(() => socket.write('X-Slow: 1\r\n'), 200);
    const response = await new Promise<string>((resolve) => {
      let data = '';
      socket.on('data', (c: Buffer) => (data += c.toString()));
      socket.on('close', () => resolve(data));
    });
    clearInterval(timer);
    const elapsed = Date.now() - started;
    assert.ok(elapsed < 5000, `closed after ${elapsed} ms`);
    assert.match(response, /^HTTP\/1\.1 408/);
  });
});
