// The catalog file module (src/catalog/file.ts: its Ajv validator, and the YAML library the
// CLI needs) loads on first use: a start on a database that has its catalog evaluates none
// of it. Seen through module hooks that report each module loaded from then on
// (test/helpers/load-recorder.mjs): the module loads with the first GET /api/v1/catalog,
// hence not at start. This file imports nothing that imports it.
import assert from 'node:assert/strict';
import { register } from 'node:module';
import path from 'node:path';
import { describe, it } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { build, mintToken } from '../helpers/app.js';
import { cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';
import { sleep, until } from '../helpers/until.js';

const DEFAULT_CATALOG = path.resolve(import.meta.dirname, '../../catalog/default.yaml');

describe('the catalog file module loads on first use', () => {
  it('a start and its catalog GETs do not load it; the first GET /api/v1/catalog does, and answers', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const file = tmp.file('infracat.sqlite');
    // The database made and its catalog applied by the command, in another process.
    const env = { DATABASE_URL: `sqlite:${file}` };
    const migrated = await cli(['migrate'], { env });
    assert.equal(migrated.code, 0, migrated.stderr);
    const applied = await cli(['catalog', 'apply', DEFAULT_CATALOG], { env });
    assert.equal(applied.code, 0, applied.stderr);

    const loaded: string[] = [];
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (url: string) => loaded.push(url));
    port1.unref();
    register(new URL('../helpers/load-recorder.mjs', import.meta.url), {
      data: { port: port2 },
      transferList: [port2],
    });
    const isCatalogFile = (url: string) => url.endsWith('/src/catalog/file.ts');

    const { app } = await build(t, { store: new SqliteStore({ path: file, busyTimeoutMs: 2000 }) });
    const plans = await app.inject({ method: 'GET', url: '/api/v1/plans' });
    assert.equal(plans.statusCode, 200);
    assert.ok(plans.json<unknown[]>().length > 0, 'the applied catalog is served');
    // A static import would have loaded it before the hooks (with the app's modules), a
    // dynamic one at start would be reported by now.
    await sleep(200);
    assert.equal(loaded.filter(isCatalogFile).length, 0, 'not loaded by the start or the catalog GETs');

    const reader = await mintToken(app, ['catalog:read']);
    const doc = await app.inject({ method: 'GET', url: '/api/v1/catalog', headers: reader.auth });
    assert.equal(doc.statusCode, 200, doc.body);
    assert.ok(doc.json<{ plans: unknown[] }>().plans.length > 0);
    // Reported from the hooks' thread: it may take a moment to arrive.
    await until(() => loaded.some(isCatalogFile), 'src/catalog/file.ts loaded by the catalog document route');
  });
});
