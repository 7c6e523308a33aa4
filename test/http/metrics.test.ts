import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { parseExposition, value } from '../helpers/prometheus.js';

describe('Prometheus metrics', () => {
  it('exposes requests, latency, verifications, cache, last-used flushes, catalog and process metrics', async (t) => {
    const { app } = await build(t, { env: { LAST_USED_FLUSH_MS: '600000' } });
    const tok = await mintToken(app, ['api-tokens:read']);
    for (let i = 0; i < 3; i++)
      await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: tok.auth });
    await app.inject({
      method: 'GET',
      url: '/api/v1/api-tokens/current',
      headers: { authorization: `Bearer ${generateSecret('icat')}` },
    });
    await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: { authorization: 'Bearer junk' } });
    await app.inject({ method: 'GET', url: '/api/v1/plans' });
    await app.inject({ method: 'GET', url: '/nope' });
    await app.infracat.tokens.lastUsed.flush();

    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const e = parseExposition(res.body);
    assert.equal(e.types.get('infracat_http_requests_total'), 'counter');
    assert.equal(e.types.get('infracat_http_request_duration_seconds'), 'histogram');
    assert.equal(
      value(e, 'infracat_http_requests_total', { method: 'GET', route: '/api/v1/api-tokens/current', status: '200' }),
      3,
    );
    assert.equal(value(e, 'infracat_http_requests_total', { route: '/api/v1/api-tokens/current', status: '401' }), 2);
    assert.equal(value(e, 'infracat_http_requests_total', { route: '/api/v1/plans', status: '200' }), 1);
    assert.equal(value(e, 'infracat_http_requests_total', { status: '404' }), 1);
    assert.equal(value(e, 'infracat_http_request_duration_seconds_count', { route: '/api/v1/plans' }), 1);
    assert.equal(value(e, 'infracat_http_request_duration_seconds_bucket', { route: '/api/v1/plans', le: '+Inf' }), 1);
    // Buckets are cumulative: never falling with le, ending at the count; the sum is the time spent.
    const current = { route: '/api/v1/api-tokens/current', status: '200' };
    const buckets = e.samples
      .filter((s) => s.name === 'infracat_http_request_duration_seconds_bucket')
      .filter((s) => s.labels.route === current.route && s.labels.status === current.status)
      .map((s) => [Number(s.labels.le), s.value] as const)
      .sort((a, b) => a[0] - b[0]);
    assert.equal(buckets.length, 14);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]![1] >= buckets[i - 1]![1], `le ${buckets[i]![0]}`);
    assert.equal(buckets.at(-1)![1], 3);
    const sum = value(e, 'infracat_http_request_duration_seconds_sum', current) ?? NaN;
    assert.ok(sum > 0 && sum < 60, `sum ${sum}`);
    assert.equal(value(e, 'infracat_token_verifications_total', { outcome: 'ok' }), 3);
    assert.equal(value(e, 'infracat_token_verifications_total', { outcome: 'unknown' }), 1);
    assert.equal(value(e, 'infracat_token_verifications_total', { outcome: 'format' }), 1);
    assert.equal(value(e, 'infracat_token_cache_hits_total'), 2);
    assert.equal(value(e, 'infracat_token_cache_misses_total'), 2);
    assert.equal(value(e, 'infracat_last_used_flushes_total'), 1);
    assert.equal(value(e, 'infracat_last_used_rows_total'), 1);
    assert.equal(value(e, 'infracat_catalog_version'), 1);
    const age = value(e, 'infracat_catalog_snapshot_age_seconds');
    assert.ok(age !== undefined && age >= 0 && age < 60);
    assert.equal(value(e, 'infracat_storage_errors_total'), 0);
    assert.equal(value(e, 'infracat_fleet_instances'), 1, 'alone on its database');
    assert.equal(value(e, 'infracat_fleet_heartbeat_failures_total'), 0);
    assert.ok(value(e, 'process_cpu_user_seconds_total') !== undefined);
    assert.ok(value(e, 'nodejs_heap_size_used_bytes') !== undefined);
    for (const s of e.samples) assert.ok(!JSON.stringify(s).includes(tok.secret));
  });

  it('counts storage errors', async (t) => {
    const { app, store } = await build(t);
    const tok = await mintToken(app, ['api-tokens:read']);
    await store.close();
    const res = await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: tok.auth });
    assert.equal(res.statusCode, 503);
    const e = parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body);
    assert.equal(value(e, 'infracat_http_requests_total', { route: '/api/v1/api-tokens', status: '503' }), 1);
    assert.equal(value(e, 'infracat_storage_errors_total'), 1);
  });

  it('access is configurable: loopback (default) refuses other addresses; off answers 404', async (t) => {
    const loop = await build(t);
    assert.equal(
      (await loop.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.2.3.4' })).statusCode,
      404,
    );
    assert.equal(
      (await loop.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode,
      200,
    );
    const pub = await build(t, { env: { METRICS_ACCESS: 'public' } });
    assert.equal((await pub.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.2.3.4' })).statusCode, 200);
    const off = await build(t, { env: { METRICS_ACCESS: 'off' } });
    assert.equal((await off.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
  });
});

describe('storage queries metric', () => {
  it('catalog reads and cached verifications send nothing to storage', async (t) => {
    const { app } = await build(t, {
      env: { CATALOG_REFRESH_MS: '600000', LAST_USED_FLUSH_MS: '600000', INSTANCE_HEARTBEAT_MS: '60000' },
    });
    const tok = await mintToken(app, ['apps:read']);
    // Caches the token.
    await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read', headers: tok.auth });
    const read = async () =>
      value(
        parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body),
        'infracat_storage_queries_total',
      )!;
    const before = await read();
    for (let i = 0; i < 25; i++) {
      await app.inject({ method: 'GET', url: '/api/v1/plans' });
      await app.inject({ method: 'GET', url: '/api/v1/regions/nyc3', headers: tok.auth });
      await app.inject({ method: 'GET', url: '/api/v1/auth/check?scope=apps:read', headers: tok.auth });
    }
    assert.equal(await read(), before);
    await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(await read(), before + 1, 'the counter does count');
  });
});
