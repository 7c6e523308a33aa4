// Adversarial tests of the limits: the failed-authentication limiter (a shared
// address, floods of fakes), revalidations over the rate limit, TRUST_PROXY, what counts
// as loopback for /metrics, and who may read the SQLite files.
import assert from 'node:assert/strict';
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { ConfigError } from '../../src/config-error.js';
import { loadConfig } from '../../src/config.js';
import { trustProxyWarning } from '../../src/http/trust-proxy.js';
import { isLoopback } from '../../src/http/metrics.js';
import { createLogger } from '../../src/logging.js';
import { startServer } from '../../src/server.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import type { Store, TokenRecord } from '../../src/storage/types.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, LogCapture, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { serve } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

const mode = (file: string): string => (statSync(file).mode & 0o777).toString(8);

/**
 * Records how many storage lookups by hash overlap. Not a mock: the real store answers.
 * The yield first makes SQLite's synchronous read take a turn of the event loop, as a
 * PostgreSQL round trip does, so lookups that would overlap on a network can be seen.
 */
function probeLookups(store: Store): { calls: number; inFlight: number; maxInFlight: number; reset(): void } {
  const tokens = store.tokens as { findByHash(hash: string): Promise<TokenRecord | null> };
  const real = tokens.findByHash.bind(tokens);
  const probe = {
    calls: 0,
    inFlight: 0,
    maxInFlight: 0,
    reset() {
      probe.calls = 0;
      probe.maxInFlight = probe.inFlight;
    },
  };
  tokens.findByHash = async (hash) => {
    probe.calls += 1;
    probe.inFlight += 1;
    probe.maxInFlight = Math.max(probe.maxInFlight, probe.inFlight);
    try {
      await new Promise<void>((resolve) => setImmediate(resolve));
      return await real(hash);
    } finally {
      probe.inFlight -= 1;
    }
  };
  return probe;
}

const fake = (): string => `Bearer ${generateSecret('icat')}`;
const QUIET = {
  LAST_USED_FLUSH_MS: '600000',
  CATALOG_REFRESH_MS: '600000',
  INSTANCE_HEARTBEAT_MS: '60000',
  RATE_LIMIT: '0',
  RATE_LIMIT_ANONYMOUS: '0',
};

for (const backend of backends()) {
  describe(
    `failed-authentication limiter on ${backend.name}: a valid token is never refused because others ` + 'failed',
    () => {
      it(
        'past the limit from one address (a shared NAT), valid tokens from it answer 200, cached or never seen; ' +
          'failures answer 429',
        async (t) => {
          const db = await backend.fresh(t);
          const { app } = await build(t, {
            store: db.open(),
            env: { ...QUIET, DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_S: '60' },
          });
          const seen = await mintToken(app, ['api-tokens:read', 'apps:read']);
          const unseen = await mintToken(app, ['api-tokens:read']);
          const gateway = await mintToken(app, ['apps:read']);
          const narrow = await mintToken(app, ['images:read']);
          const NAT = '203.0.113.7';
          const current = (authorization: string) =>
            app.inject({
              method: 'GET',
              url: '/api/v1/api-tokens/current',
              remoteAddress: NAT,
              headers: { authorization },
            });
          assert.equal((await current(seen.auth.authorization)).statusCode, 200, 'now in the verification cache');

          for (let i = 0; i < 3; i++)
            assert.equal((await current(fake())).statusCode, 401, `failure ${i + 1} of 3 is a plain 401`);
          const refused = await current(fake());
          assert.equal(refused.statusCode, 429, 'the address has used up its failures');
          assert.equal(refused.headers['content-type'], PROBLEM_TYPE);
          assert.equal(refused.json<{ code: string }>().code, 'RATE_LIMITED');
          const retry = Number(refused.headers['retry-after']);
          assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);

          const cached = await current(seen.auth.authorization);
          assert.equal(cached.statusCode, 200, 'a cached valid token');
          assert.equal(cached.json<{ id: string }>().id, seen.id);
          const cache = app.infracat.tokens.cache;
          const misses = cache.misses;
          const uncached = await current(unseen.auth.authorization);
          assert.equal(cache.misses, misses + 1, 'this one was not in memory: storage answered it');
          assert.equal(uncached.statusCode, 200, 'a valid token never seen before');
          assert.equal(uncached.json<{ id: string }>().id, unseen.id);
          const check = await app.inject({
            method: 'GET',
            url: '/api/v1/auth/check?scope=apps:read',
            remoteAddress: NAT,
            headers: gateway.auth,
          });
          assert.equal(check.statusCode, 200, 'forward auth from the same address');
          const list = await app.inject({
            method: 'GET',
            url: '/api/v1/api-tokens',
            remoteAddress: NAT,
            headers: narrow.auth,
          });
          assert.equal(list.statusCode, 403, 'a valid token without the scope: 403, not 429');

          for (const bad of [fake(), 'Bearer junk', 'Basic dXNlcjpwYXNz']) {
            const res = await current(bad);
            assert.equal(res.statusCode, 429, `${bad.slice(0, 12)}: failures keep answering 429`);
            assert.ok(Number(res.headers['retry-after']) >= 1);
          }
          assert.equal(
            (
              await app.inject({
                method: 'GET',
                url: '/api/v1/api-tokens/current',
                remoteAddress: '203.0.113.8',
                headers: { authorization: fake() },
              })
            ).statusCode,
            401,
            'another address has its own count',
          );
        },
      );

      it(
        'a concurrent flood of distinct well-formed fakes from an address past the limit runs one lookup at a ' +
          'time; repeating them costs no lookup',
        async (t) => {
          const db = await backend.fresh(t);
          const store = db.open();
          const probe = probeLookups(store);
          const { app } = await build(t, { store, env: { ...QUIET, DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '3' } });
          const valid = await mintToken(app, ['api-tokens:read']);
          const from = (authorization: string, remoteAddress = '198.51.100.9') =>
            app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', remoteAddress, headers: { authorization } });
          for (let i = 0; i < 3; i++) assert.equal((await from(fake())).statusCode, 401);

          probe.reset();
          const fakes = Array.from({ length: 40 }, fake);
          const answers = await Promise.all([
            ...fakes.slice(0, 20).map((f) => from(f)),
            from(valid.auth.authorization),
            ...fakes.slice(20).map((f) => from(f)),
          ]);
          assert.equal(answers[20]!.statusCode, 200, 'the valid token (not cached) got its turn and was answered');
          assert.deepEqual(
            [...answers.slice(0, 20), ...answers.slice(21)].map((r) => r.statusCode),
            fakes.map(() => 429),
          );
          assert.equal(probe.maxInFlight, 1, 'one storage lookup in flight at a time for this address');
          assert.equal(probe.calls, 41, 'each distinct hash looked up once');

          probe.reset();
          const queries = store.stats.queries;
          const repeats = await Promise.all(fakes.map((f) => from(f)));
          assert.deepEqual(
            repeats.map((r) => r.statusCode),
            fakes.map(() => 429),
          );
          assert.equal(probe.calls, 0, 'fakes found unknown are remembered');
          assert.equal(store.stats.queries, queries, 'no storage query at all');
          assert.equal((await from(valid.auth.authorization)).statusCode, 200);
        },
      );

      it(
        'rotating through the addresses of one IPv6 /64 (or writing IPv4 as IPv4-mapped) does not dodge the ' + 'count',
        async (t) => {
          const db = await backend.fresh(t);
          const { app } = await build(t, {
            store: db.open(),
            env: { ...QUIET, DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '3' },
          });
          const valid = await mintToken(app, ['api-tokens:read']);
          const from = (remoteAddress: string, authorization = fake()) =>
            app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', remoteAddress, headers: { authorization } });
          const codes = [];
          for (const ip of [
            '2001:db8:1:2::1',
            '2001:db8:1:2::2',
            '2001:db8:1:2:aaaa::3',
            '2001:db8:1:2:ffff:ffff:ffff:ffff',
          ])
            codes.push((await from(ip)).statusCode);
          assert.deepEqual(codes, [401, 401, 401, 429]);
          assert.equal(
            (await from('2001:db8:1:2::99', valid.auth.authorization)).statusCode,
            200,
            'a valid token from the same /64',
          );
          assert.equal((await from('2001:db8:1:3::1')).statusCode, 401, 'the next /64 has its own count');
          for (let i = 0; i < 3; i++) assert.equal((await from('192.0.2.50')).statusCode, 401);
          assert.equal((await from('::ffff:192.0.2.50')).statusCode, 429, 'the same IPv4 client, written IPv4-mapped');
        },
      );

      it(
        'a concurrent flood from a fresh address runs no more lookups at once than the failures it has ' + 'left',
        async (t) => {
          const db = await backend.fresh(t);
          const store = db.open();
          const probe = probeLookups(store);
          const { app } = await build(t, { store, env: { ...QUIET, DATABASE_URL: db.url, AUTH_FAILURE_LIMIT: '5' } });
          probe.reset();
          const answers = await Promise.all(
            Array.from({ length: 40 }, () =>
              app.inject({
                method: 'GET',
                url: '/api/v1/api-tokens/current',
                remoteAddress: '192.0.2.44',
                headers: { authorization: fake() },
              }),
            ),
          );
          assert.ok(probe.maxInFlight <= 5, `at most 5 lookups at once, saw ${probe.maxInFlight}`);
          const codes = answers.map((r) => r.statusCode);
          assert.equal(codes.filter((c) => c === 401).length, 5, 'the first five failures are 401');
          assert.equal(codes.filter((c) => c === 429).length, 35, 'every failure past the limit is 429');
        },
      );
    },
  );
}

describe('TRUST_PROXY: a client must not choose its own address', () => {
  async function started(t: TestContext, trustProxy: string): Promise<LogCapture> {
    const tmp = tempDir();
    const logs = new LogCapture();
    const config = loadConfig({
      DATABASE_URL: `sqlite:${tmp.file()}`,
      PORT: '0',
      BOOTSTRAP_ADMIN_TOKEN: 'false',
      TRUST_PROXY: trustProxy,
      LOG_LEVEL: 'info',
    });
    const server = await startServer(config, createLogger('info', logs));
    t.after(async () => {
      await server.close();
      tmp.remove();
    });
    return logs;
  }
  const warnings = (logs: LogCapture) =>
    logs.records().filter((r) => r.level === 'warn' && /TRUST_PROXY/.test(String(r.msg)));

  for (const value of ['true', '0.0.0.0/1', '10.0.0.1,::/1', '::ffff:0:0/96']) {
    it(
      `TRUST_PROXY=${value}: one warning at start that any client can pick its address, recommending the list of ` +
        'proxies',
      async (t) => {
        const logs = await started(t, value);
        const found = warnings(logs);
        assert.equal(found.length, 1, logs.text);
        assert.match(String(found[0]!.msg), /X-Forwarded-For/);
        assert.match(String(found[0]!.msg), /any client/i);
        assert.match(String(found[0]!.msg), /list of (your )?prox/i);
      },
    );
  }

  it('a list of proxy addresses/CIDRs, even a whole private network: no warning', async (t) => {
    assert.deepEqual(
      warnings(await started(t, '10.0.0.1,192.168.0.0/16,10.0.0.0/8,fc00::/7,::ffff:10.0.0.0/104,2001:db8::7')),
      [],
    );
    assert.equal(trustProxyWarning(false), null);
  });

  it(
    'a list the proxy matcher would refuse at start (/0, bad prefix, not an address) is refused by the config, ' +
      'naming TRUST_PROXY',
    () => {
      for (const value of [
        '0.0.0.0/0',
        '::/0',
        '10.0.0.0/33',
        '::1/129',
        '1.2.3',
        '10.0.0.1/',
        '10.0.0.0/+8',
        '10.0.0.0/255.0.0.0',
        'proxy.internal',
        '10.0.0.1,,x',
      ]) {
        assert.throws(
          () => loadConfig({ TRUST_PROXY: value }),
          (err: Error) => err instanceof ConfigError && /^invalid TRUST_PROXY/.test(err.message),
          value,
        );
      }
    },
  );

  it(
    'the list form: X-Forwarded-For from a peer that is not a listed proxy is ignored, so the limiter cannot be ' +
      'dodged',
    async (t) => {
      const { app } = await build(t, {
        env: { TRUST_PROXY: '10.0.0.1', AUTH_FAILURE_LIMIT: '3', RATE_LIMIT_ANONYMOUS: '0' },
      });
      const send = (remoteAddress: string, xff: string) =>
        app.inject({
          method: 'GET',
          url: '/api/v1/api-tokens/current',
          remoteAddress,
          headers: { authorization: fake(), 'x-forwarded-for': xff },
        });
      const codes = [];
      for (let i = 0; i < 5; i++) codes.push((await send('10.0.0.66', `198.51.100.${i}`)).statusCode);
      assert.deepEqual(codes, [401, 401, 401, 429, 429], 'counted against the real peer, whatever it claims');
      // Through the listed proxy, the forwarded client is counted, and only it.
      for (let i = 0; i < 3; i++) assert.equal((await send('10.0.0.1', '192.0.2.1')).statusCode, 401);
      assert.equal((await send('10.0.0.1', '192.0.2.1')).statusCode, 429);
      assert.equal((await send('10.0.0.1', '192.0.2.2')).statusCode, 401, 'another client behind the same proxy');
    },
  );
});

describe('revalidations over the rate limit', () => {
  it(
    'anonymous: a matching If-None-Match answers 304 (r=0, no Retry-After) on every catalog route; anything else ' +
      '429',
    async (t) => {
      const { app, store } = await build(t, {
        env: { RATE_LIMIT_ANONYMOUS: '2', CATALOG_REFRESH_MS: '600000', INSTANCE_HEARTBEAT_MS: '60000' },
      });
      const get = (url: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') =>
        app.inject({ method, url, remoteAddress: '10.9.9.9', headers });
      const first = await get('/api/v1/plans');
      const etag = String(first.headers.etag);
      assert.equal((await get('/api/v1/plans')).statusCode, 200);
      assert.equal((await get('/api/v1/plans')).statusCode, 429, 'the limit is used up');
      const queries = store.stats.queries;
      for (const url of [
        '/api/v1/plans',
        '/api/v1/images',
        '/api/v1/regions',
        '/api/v1/regions/nyc3',
        '/api/v1/plans?min_vcpus=2',
      ]) {
        for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
          for (const method of ['GET', 'HEAD'] as const) {
            const res = await get(url, { 'if-none-match': inm }, method);
            assert.equal(res.statusCode, 304, `${method} ${url} If-None-Match: ${inm}`);
            assert.equal(res.headers.etag, etag);
            assert.equal(res.headers['retry-after'], undefined);
            assert.match(
              String(res.headers.ratelimit),
              /^"anonymous";r=0;t=\d+$/,
              'truthful: nothing remains, and the 304 took nothing',
            );
            assert.equal(res.body, '');
          }
        }
      }
      for (const [url, inm] of [
        ['/api/v1/plans', '"stale"'],
        ['/api/v1/regions/nyc3', '"stale"'],
        ['/api/v1/regions/nowhere', etag],
        ['/api/v1/images/nowhere', '*'],
      ] as const) {
        const res = await get(url, { 'if-none-match': inm });
        assert.equal(res.statusCode, 429, `${url} If-None-Match: ${inm}`);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        assert.ok(Number(res.headers['retry-after']) >= 1);
        assert.equal(res.headers.etag, undefined, 'a refusal carries no validator');
        assert.equal(res.headers['cache-control'], undefined, 'and is not cacheable');
      }
      assert.equal(store.stats.queries, queries, 'none of it touched storage');
    },
  );

  it(
    'per token (CATALOG_ACCESS=token): the same, and a token over its limit is still 429 on other routes ' +
      'whatever it sends',
    async (t) => {
      const { app, store } = await build(t, {
        env: {
          RATE_LIMIT: '1',
          CATALOG_ACCESS: 'token',
          CATALOG_REFRESH_MS: '600000',
          LAST_USED_FLUSH_MS: '600000',
          INSTANCE_HEARTBEAT_MS: '60000',
        },
      });
      const tok = await mintToken(app, ['regions:read', 'api-tokens:read']);
      const first = await app.inject({ method: 'GET', url: '/api/v1/regions', headers: tok.auth });
      assert.equal(first.statusCode, 200);
      const etag = String(first.headers.etag);
      const again = await app.inject({
        method: 'GET',
        url: '/api/v1/regions',
        headers: { ...tok.auth, 'if-none-match': etag },
      });
      assert.equal(again.statusCode, 304);
      assert.match(String(again.headers.ratelimit), /^"token";r=0;t=\d+, "account";r=9;t=\d+$/);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/regions', headers: tok.auth })).statusCode, 429);
      const queries = store.stats.queries;
      const tokens = await app.inject({
        method: 'GET',
        url: '/api/v1/api-tokens',
        headers: { ...tok.auth, 'if-none-match': '*' },
      });
      assert.equal(tokens.statusCode, 429, 'If-None-Match opens nothing on routes that do not revalidate');
      assert.equal(store.stats.queries, queries, 'refused before the handler read storage');
    },
  );

  it(
    'fails closed: a route that declares revalidation but answers 200 over the limit is turned into the ' + '429',
    async (t) => {
      const { app } = await build(t, {
        env: { RATE_LIMIT_ANONYMOUS: '1' },
        extend: (a) => {
          a.get('/test/careless', { config: { revalidates: true } }, async (_request, reply) =>
            reply.header('etag', '"x"').header('cache-control', 'public, max-age=60').send({ body: 'full' }),
          );
        },
      });
      assert.equal((await app.inject({ method: 'GET', url: '/test/careless' })).statusCode, 200);
      const res = await app.inject({ method: 'GET', url: '/test/careless', headers: { 'if-none-match': '"y"' } });
      assert.equal(res.statusCode, 429);
      assert.equal(res.json<{ code: string }>().code, 'RATE_LIMITED');
      assert.equal(res.headers.etag, undefined);
      assert.equal(res.headers['cache-control'], undefined);
    },
  );
});

describe('/metrics with METRICS_ACCESS=loopback', () => {
  it('all of 127.0.0.0/8, ::1 and IPv4-mapped loopback are loopback; nothing else is', () => {
    for (const a of [
      '127.0.0.1',
      '127.0.0.12',
      '127.255.255.254',
      '127.1.2.3',
      '::1',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.2',
      '::ffff:7f00:1',
    ]) {
      assert.equal(isLoopback(a), true, a);
    }
    for (const a of [
      '128.0.0.1',
      '126.255.255.255',
      '::2',
      '::',
      '0.0.0.0',
      '10.0.0.1',
      '::ffff:10.0.0.1',
      '::127.0.0.1',
      '127.0.0.1.evil',
      '127.0.0.01',
      '127.1',
      'localhost',
      '',
      ' 127.0.0.1',
      undefined,
    ]) {
      assert.equal(isLoopback(a), false, String(a));
    }
  });

  it(
    'through the app: 127.0.0.12 and ::ffff:127.0.0.2 are served; other peers, and X-Forwarded-For claims, are ' +
      'not',
    async (t) => {
      const { app } = await build(t, { env: { TRUST_PROXY: 'true' } });
      const from = (remoteAddress: string, headers: Record<string, string> = {}) =>
        app.inject({ method: 'GET', url: '/metrics', remoteAddress, headers });
      assert.equal((await from('127.0.0.12')).statusCode, 200);
      assert.equal((await from('::ffff:127.0.0.2')).statusCode, 200);
      assert.equal((await from('128.0.0.1')).statusCode, 404);
      assert.equal(
        (await from('10.0.0.1', { 'x-forwarded-for': '127.0.0.1' })).statusCode,
        404,
        'the socket peer decides, not a header',
      );
    },
  );

  it(
    'a real server bound to 127.0.0.12 answers a client on 127.0.0.12',
    { skip: process.platform !== 'linux' && 'only Linux routes all of 127.0.0.0/8 to the loopback interface' },
    async (t) => {
      const { app } = await build(t, {
        extend: (a) => a.get('/test/peer', async (request) => ({ peer: request.socket.remoteAddress })),
      });
      await app.listen({ host: '127.0.0.12', port: 0 });
      const { port } = app.server.address() as { port: number };
      const get = (url: string) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          http
            .get({ host: '127.0.0.12', port, path: url, localAddress: '127.0.0.12' }, (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
            })
            .on('error', reject);
        });
      assert.deepEqual(JSON.parse((await get('/test/peer')).body), { peer: '127.0.0.12' });
      const metrics = await get('/metrics');
      assert.equal(metrics.status, 200);
      assert.match(metrics.body, /infracat_http_requests_total/);
    },
  );
});

describe('SQLite files are readable by the service user only', () => {
  it(
    'a fresh path: the directories infracat creates are 0700, the database and its -wal/-shm 0600, even under ' +
      'umask 000',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const previous = process.umask(0);
      t.after(() => process.umask(previous));
      const file = path.join(tmp.dir, 'a', 'b', 'infracat.sqlite');
      const store = new SqliteStore({ path: file, busyTimeoutMs: 1000 });
      t.after(() => store.close());
      await store.migrate();
      await store.tokens.findByHash('0'.repeat(64));
      for (const dir of [path.join(tmp.dir, 'a'), path.join(tmp.dir, 'a', 'b')]) assert.equal(mode(dir), '700', dir);
      for (const f of [file, `${file}-wal`, `${file}-shm`]) assert.equal(mode(f), '600', f);
    },
  );

  it(
    'an operator-chosen directory keeps its mode; group/world access to the directory or the files is reported ' +
      'at start',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const dir = path.join(tmp.dir, 'shared');
      mkdirSync(dir, { mode: 0o777 });
      chmodSync(dir, 0o777);
      const file = path.join(dir, 'infracat.sqlite');
      closeSync(openSync(file, 'w', 0o644));
      chmodSync(file, 0o644);
      const logs = new LogCapture();
      const config = loadConfig({ DATABASE_URL: `sqlite:${file}`, PORT: '0', BOOTSTRAP_ADMIN_TOKEN: 'false' });
      const server = await startServer(config, createLogger('info', logs));
      t.after(() => server.close());
      assert.equal(mode(dir), '777', "not changed behind the operator's back");
      assert.equal(mode(file), '644');
      const warned = logs
        .records()
        .filter((r) => r.level === 'warn')
        .map((r) => JSON.stringify(r));
      assert.ok(
        warned.some(
          (w) => w.includes(JSON.stringify(file)) && /readable by other local users/.test(w) && /chmod 600/.test(w),
        ),
        warned.join('\n'),
      );
      assert.ok(
        warned.some(
          (w) => w.includes(JSON.stringify(dir)) && /writable by other local users/.test(w) && /chmod 700/.test(w),
        ),
        warned.join('\n'),
      );
    },
  );

  it('a private directory and files: no warning', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const logs = new LogCapture();
    const config = loadConfig({
      DATABASE_URL: `sqlite:${tmp.file('data/infracat.sqlite')}`,
      PORT: '0',
      BOOTSTRAP_ADMIN_TOKEN: 'false',
    });
    const first = await startServer(config, createLogger('info', logs));
    await first.close();
    const second = await startServer(config, createLogger('info', logs));
    await second.close();
    const storageWarnings = logs.records().filter((r) => r.level === 'warn' && /local users/.test(String(r.msg)));
    assert.deepEqual(storageWarnings, []);
  });

  it('infracat serve with no DATABASE_URL: ./data is 0700 and the database files 0600', async (t) => {
    const cwd = tempDir();
    t.after(() => cwd.remove());
    const { child, url } = await serve({ DATABASE_URL: undefined }, cwd.dir);
    t.after(() => child.proc.kill('SIGKILL'));
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    assert.equal(mode(path.join(cwd.dir, 'data')), '700');
    for (const f of ['infracat.sqlite', 'infracat.sqlite-wal', 'infracat.sqlite-shm'])
      assert.equal(mode(path.join(cwd.dir, 'data', f)), '600', f);
  });
});
