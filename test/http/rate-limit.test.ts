import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import type { App } from '../../src/http/types.js';
import { installRateLimit } from '../../src/http/rate-limit.js';
import { build, mintToken } from '../helpers/app.js';

const POLICY = /^"(token|anonymous)";q=(\d+);w=(\d+)$/;
const STATE = /^"(token|anonymous)";r=(\d+);t=(\d+)$/;

describe('rate limits', () => {
  it(
    'anonymous requests are limited per address, with RateLimit-Policy and RateLimit headers; 429 past ' + 'it',
    async (t) => {
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
      assert.equal(
        (await app.inject({ method: 'GET', url: '/healthz', remoteAddress: '10.1.1.1' })).statusCode,
        200,
        'health is exempt',
      );
    },
  );

  it(
    'an anonymous client is counted as failed authentications count it: IPv6 by its /64, IPv4-mapped as ' + 'IPv4',
    async (t) => {
      const { app } = await build(t, { env: { RATE_LIMIT_ANONYMOUS: '5', RATE_LIMIT_WINDOW_S: '600' } });
      const status = async (remoteAddress: string) =>
        (await app.inject({ method: 'GET', url: '/api/v1/regions', remoteAddress })).statusCode;
      // 20 addresses of one /64, each written its own way: 5 get through, as from one address.
      const admitted = [];
      for (let i = 1; i <= 20; i++) {
        const spellings = [
          `2001:db8:1:2::${i.toString(16)}`,
          `2001:DB8:1:2:${i}:0:0:1`,
          `2001:0db8:0001:0002:ffff:${i}::`,
        ];
        if ((await status(spellings[i % 3]!)) === 200) admitted.push(i);
      }
      assert.equal(admitted.length, 5, `admitted ${admitted.join(',')} of 20 addresses of 2001:db8:1:2::/64`);
      assert.equal(await status('2001:db8:1:2::fe%eth0'), 429, 'a zone id does not make another key');
      assert.equal(await status('2001:db8:1:3::1'), 200, 'the next /64 has its own budget');
      // IPv4, and the same address written IPv4-mapped (a dual-stack socket's spelling), share one.
      for (let i = 0; i < 5; i++) assert.equal(await status(i % 2 === 0 ? '10.4.4.4' : '::ffff:10.4.4.4'), 200);
      assert.equal(await status('::ffff:a04:404'), 429, 'the mapped address in hex is the same client');
      assert.equal(await status('10.4.4.4'), 429);
      assert.equal(await status('10.4.4.5'), 200, 'IPv4 addresses are counted one by one');
    },
  );

  it('authenticated requests are limited per token, not per address', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT: '2', RATE_LIMIT_ANONYMOUS: '100' } });
    const a = await mintToken(app, ['api-tokens:read']);
    const b = await mintToken(app, ['api-tokens:read']);
    const call = (auth: { authorization: string }, remoteAddress: string) =>
      app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: auth, remoteAddress });
    const r1 = await call(a.auth, '10.0.0.1');
    const [tokenPolicy, accountPolicy] = String(r1.headers['ratelimit-policy']).split(', ');
    assert.match(tokenPolicy!, POLICY);
    assert.equal(tokenPolicy, '"token";q=2;w=60');
    assert.equal(accountPolicy, '"account";q=20;w=60', "and the account's (RATE_LIMIT_ACCOUNT unset: 10 x RATE_LIMIT)");
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

  it(
    'operational routes and the forward-auth check are exempt (config.rateLimit false); paths beside them are ' + 'not',
    async (t) => {
      const { app } = await build(t, { env: { RATE_LIMIT: '1', RATE_LIMIT_ANONYMOUS: '1' } });
      const tok = await mintToken(app, ['apps:read']);
      const exempt: { method?: 'GET' | 'POST'; url: string; headers?: Record<string, string> }[] = [
        { url: '/healthz' },
        { url: '/readyz' },
        { url: '/metrics' },
        { url: '/docs/' },
        { url: '/docs/json' },
        { url: '/' },
        { url: '/console/console.css' },
        { url: '/api/v1/auth/check?scope=apps:read' },
        { url: '/api/v1/auth/check?scope=apps:read', headers: tok.auth },
        { method: 'POST', url: '/api/v1/auth/check?scope=apps:read', headers: tok.auth },
        { url: '/api/v1/auth/check/apps/1', headers: tok.auth },
      ];
      for (const request of exempt) {
        for (let i = 0; i < 3; i++) {
          const res = await app.inject({
            method: request.method ?? 'GET',
            url: request.url,
            headers: request.headers ?? {},
            remoteAddress: '127.0.0.1',
          });
          assert.notEqual(res.statusCode, 429, `${request.url} ${res.body}`);
          assert.equal(res.headers['ratelimit-policy'], undefined, request.url);
        }
      }
      // Neither the address's nor the token's budget was touched.
      assert.equal((await app.inject({ url: '/api/v1/plans', remoteAddress: '127.0.0.1' })).statusCode, 200);
      assert.equal((await app.inject({ url: '/api/v1/plans', headers: tok.auth })).statusCode, 200);
      // Unknown paths that merely start like an exempt one are counted like any other.
      for (const url of ['/docsx', '/api/v1/auth/checkx', '/healthzz']) {
        const remoteAddress = `10.9.9.${url.length}`;
        const first = await app.inject({ url, remoteAddress });
        assert.equal(first.statusCode, 404, url);
        assert.equal(first.headers['ratelimit-policy'], '"anonymous";q=1;w=60', url);
        assert.equal((await app.inject({ url, remoteAddress })).statusCode, 429, url);
      }
    },
  );

  it('tracks a bounded number of windows: past maxKeys the least recently used is forgotten', async (t) => {
    const app = Fastify() as unknown as App;
    t.after(() => app.close());
    app.decorateRequest('token', null);
    installRateLimit(app, { quotas: { token: 0, account: 0, anonymous: 1 }, windowS: 60, maxKeys: 2 });
    app.get('/x', async () => 'ok');
    const status = async (remoteAddress: string) => (await app.inject({ url: '/x', remoteAddress })).statusCode;
    assert.equal(await status('10.0.0.1'), 200);
    assert.equal(await status('10.0.0.1'), 429, 'the budget of one is spent');
    assert.equal(await status('10.0.0.2'), 200);
    assert.equal(await status('10.0.0.3'), 200);
    assert.equal(await status('10.0.0.1'), 200, 'two newer addresses pushed the first out: a fresh window');
    assert.equal(await status('10.0.0.3'), 429, 'a tracked address keeps its count');
  });

  it('RATE_LIMIT=0 and RATE_LIMIT_ANONYMOUS=0 turn limiting off', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT: '0', RATE_LIMIT_ANONYMOUS: '0' } });
    const res = await app.inject({ method: 'GET', url: '/api/v1/plans' });
    assert.equal(res.headers.ratelimit, undefined);
  });
});
