import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { build, mintToken } from '../helpers/app.js';

const POLICY = /^"(token|anonymous)";q=(\d+);w=(\d+)$/;
const STATE = /^"(token|anonymous)";r=(\d+);t=(\d+)$/;

describe('rate limits', () => {
  it('anonymous requests are limited per address, with RateLimit-Policy and RateLimit headers; 429 past it', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT_ANONYMOUS: '3', RATE_LIMIT_WINDOW_S: '60' } });
    const get = (remoteAddress = '10.1.1.1') => app.inject({ method: 'GET', url: '/api/v1/regions', remoteAddress });
    const first = await get();
    assert.equal(first.headers['ratelimit-policy'], '"anonymous";q=3;w=60');
    const m = STATE.exec(String(first.headers.ratelimit));
    assert.ok(m, String(first.headers.ratelimit));
    assert.equal(m[2], '2');
    assert.ok(Number(m[3]) >= 1 && Number(m[3]) <= 60);
    assert.match(String((await get()).headers.ratelimit), /;r=1;/);
    assert.match(String((await get()).headers.ratelimit), /;r=0;/);
    const over = await get();
    assert.equal(over.statusCode, 429);
    assert.equal(over.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(over.json<{ code: string }>().code, 'RATE_LIMITED');
    const retry = Number(over.headers['retry-after']);
    assert.ok(retry >= 1 && retry <= 60);
    assert.match(String(over.headers.ratelimit), /;r=0;t=\d+$/);
    assert.equal((await get('10.1.1.2')).statusCode, 200, 'another address has its own budget');
    assert.equal((await app.inject({ method: 'GET', url: '/healthz', remoteAddress: '10.1.1.1' })).statusCode, 200, 'health is exempt');
  });

  it('authenticated requests are limited per token, not per address', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT: '2', RATE_LIMIT_ANONYMOUS: '100' } });
    const a = await mintToken(app, ['api-tokens:read']);
    const b = await mintToken(app, ['api-tokens:read']);
    const call = (auth: { authorization: string }, remoteAddress: string) => app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: auth, remoteAddress });
    const r1 = await call(a.auth, '10.0.0.1');
    assert.match(String(r1.headers['ratelimit-policy']), POLICY);
    assert.equal(r1.headers['ratelimit-policy'], '"token";q=2;w=60');
    assert.equal((await call(a.auth, '10.0.0.2')).statusCode, 200);
    assert.equal((await call(a.auth, '10.0.0.3')).statusCode, 429, 'the same token from a new address');
    assert.equal((await call(b.auth, '10.0.0.1')).statusCode, 200, 'another token from the same address');
  });

  it('304 answers do not count', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT_ANONYMOUS: '2' } });
    const first = await app.inject({ method: 'GET', url: '/api/v1/images' });
    const etag = String(first.headers.etag);
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/images', headers: { 'if-none-match': etag } });
      assert.equal(res.statusCode, 304);
      assert.match(String(res.headers.ratelimit), /;r=1;/, 'the unit is given back');
    }
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1/images' })).statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1/images' })).statusCode, 429);
  });

  it('RATE_LIMIT=0 and RATE_LIMIT_ANONYMOUS=0 turn limiting off', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT: '0', RATE_LIMIT_ANONYMOUS: '0' } });
    const res = await app.inject({ method: 'GET', url: '/api/v1/plans' });
    assert.equal(res.headers.ratelimit, undefined);
  });
});
