// The document and the router agree: every method and path the server answers is
// described in /api/v1/openapi.json, and every operation there is answered, with every
// optional endpoint on (secret scanning, the console, CORS). The few routes left out are
// listed below, each with the reason.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { RouteOptions } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { signingKey, writeKeyFile } from '../helpers/secret-scanning.js';
import { tempDir } from '../helpers/sqlite.js';

// Served, not described, and why.
const UNDOCUMENTED: Record<string, string> = {
  'GET /api/v1/openapi.json': 'the document itself: where clients get the description, not part of it',
  'GET /docs': 'the interactive reference, an HTML page for people (Swagger UI over this document)',
  'GET /docs/{path}': "the reference page's assets (scripts, styles) and its own copy of the document",
  'GET /metrics': "Prometheus text for the operator's scraper (METRICS_ACCESS), not part of the API",
  'GET /': 'the web console, an HTML page for people (CONSOLE)',
  'GET /console/console.js': "the console's script",
  'GET /console/console.css': "the console's style sheet",
  'GET /console/favicon.svg': "the console's icon",
  // With CORS_ORIGINS set, @fastify/cors answers the preflight of every path (a browser's
  // question about the real request, which is what the document describes).
  'OPTIONS {path}': 'CORS preflight of any path: answered by @fastify/cors for browsers',
};

/** `:id` -> `{id}`, a trailing `*` -> `{path}` (as the document names them). */
const asDocumented = (url: string): string => url.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{path}');

describe('OpenAPI document and router', () => {
  it('describe the same methods and paths', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const file = tmp.file();
    const store = new SqliteStore({ path: file, busyTimeoutMs: 1000 });
    await store.migrate();
    const app = buildApp({
      config: loadConfig({
        DATABASE_URL: `sqlite:${file}`,
        BOOTSTRAP_ADMIN_TOKEN: 'false',
        SECRET_SCANNING_KEYS_FILE: writeKeyFile(join(tmp.dir, 'keys.json'), [signingKey()]),
        CORS_ORIGINS: 'https://console.example',
      }),
      store,
      logger: createLogger('silent'),
    });
    t.after(() => app.close());
    // Every route is declared in a plugin, loaded at ready(): a hook added now sees them all.
    const routes: RouteOptions[] = [];
    app.addHook('onRoute', (route) => {
      routes.push(route);
    });
    await app.ready();

    const served = new Set<string>();
    for (const route of routes) {
      for (const method of [route.method].flat()) {
        // HEAD is answered for every GET (Fastify's HEAD route of it): GET's answer without
        // the body (RFC 9110), described by the GET operation.
        if (method === 'HEAD') continue;
        served.add(`${method} ${asDocumented(route.url)}`);
      }
    }
    const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, unknown>>;
    }>();
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.keys(item)
          .filter((m) => m !== 'head')
          .map((m) => `${m.toUpperCase()} ${path}`),
      ),
    );
    const missing = [...served].filter((r) => !documented.has(r) && !(r in UNDOCUMENTED));
    assert.deepEqual(missing, [], 'answered, not in the document');
    const phantom = [...documented].filter((r) => !served.has(r));
    assert.deepEqual(phantom, [], 'in the document, not answered');
    const stale = Object.keys(UNDOCUMENTED).filter((r) => !served.has(r) || documented.has(r));
    assert.deepEqual(stale, [], 'listed as undocumented, but not served or documented after all');
  });
});
