// The console's page and assets as the server sends them (the browser tests drive the page).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CONSOLE_CSP } from '../../src/console/routes.js';
import { build } from '../helpers/app.js';

describe('web console routes', () => {
  it('serves the page with its own strict CSP and the usual security headers', async (t) => {
    const { app } = await build(t);
    const res = await app.inject({ url: '/' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.headers['content-security-policy'], CONSOLE_CSP);
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'none'",
      "require-trusted-types-for 'script'",
    ]) {
      assert.ok(CONSOLE_CSP.split('; ').includes(directive), directive);
    }
    assert.doesNotMatch(CONSOLE_CSP, /unsafe-|https?:|\*/);
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['cross-origin-opener-policy'], 'same-origin');
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.match(res.body, /<script type="module" src="\/console\/console\.js"><\/script>/);
  });

  it('serves each asset with its type and a strong ETag; a match is a 304', async (t) => {
    const { app } = await build(t);
    for (const [url, type] of [
      ['/console/console.js', 'text/javascript; charset=utf-8'],
      ['/console/console.css', 'text/css; charset=utf-8'],
      ['/console/favicon.svg', 'image/svg+xml'],
    ] as const) {
      const res = await app.inject({ url });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.headers['content-type'], type);
      assert.ok(res.body.length > 100, `${url} has content`);
      const etag = res.headers.etag as string;
      assert.match(etag, /^"[\w-]{27}"$/);
      const again = await app.inject({ url, headers: { 'if-none-match': etag } });
      assert.equal(again.statusCode, 304);
      assert.equal(again.body, '');
    }
    // The API's own policy elsewhere is unchanged.
    const api = await app.inject({ url: '/api/v1/plans' });
    assert.equal(api.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
  });

  it('does not count against rate limits', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT_ANONYMOUS: '2' } });
    for (let i = 0; i < 5; i++) assert.equal((await app.inject({ url: '/console/console.js' })).statusCode, 200);
    assert.equal((await app.inject({ url: '/api/v1/plans' })).statusCode, 200);
  });

  it('is not in the OpenAPI document (it is not API)', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<{ paths: Record<string, unknown> }>();
    assert.ok(!('/' in doc.paths));
    assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/console')));
  });

  it('CONSOLE=false: / is a 404 problem', async (t) => {
    const { app } = await build(t, { env: { CONSOLE: 'false' } });
    const res = await app.inject({ url: '/' });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json<{ code: string }>().code, 'NOT_FOUND');
    assert.equal((await app.inject({ url: '/console/console.js' })).statusCode, 404);
  });

  it('assets missing (not built): a 404 saying how to build, and a warning at start', async (t) => {
    const { consoleRoutes } = await import('../../src/console/routes.js');
    const empty = mkdtempSync(path.join(tmpdir(), 'infracat-noweb-'));
    t.after(() => rmSync(empty, { recursive: true, force: true }));
    const { app, logs } = await build(t, {
      env: { CONSOLE: 'false' },
      extend: (a) => consoleRoutes(a, { dir: empty }),
    });
    const res = await app.inject({ url: '/' });
    assert.equal(res.statusCode, 404);
    assert.match(res.json<{ detail: string }>().detail, /npm run build/);
    assert.match(logs.text, /web console assets not found/);
  });
});
