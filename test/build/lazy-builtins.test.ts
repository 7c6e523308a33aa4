// The bundle's stand-ins for Node modules that dependencies load but infracat does not use
// (scripts/lib/lazy-builtins.mjs): a dependency's require() of http2, https or dns loads
// nothing until the module is used, and then behaves as the module itself. Bundled here
// with esbuild as scripts/bundle.mjs bundles, from a package under node_modules/.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { build } from 'esbuild';
import { lazyBuiltins } from '../../scripts/lib/lazy-builtins.mjs';
import { tempDir } from '../helpers/sqlite.js';

/** Bundles `entry` (with `dependency` as node_modules/dep/index.js) and runs it; its stdout as JSON. */
async function bundleAndRun(t: TestContext, dependency: string, entry: string): Promise<unknown> {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  mkdirSync(path.join(tmp.dir, 'node_modules/dep'), { recursive: true });
  writeFileSync(path.join(tmp.dir, 'node_modules/dep/index.js'), dependency);
  writeFileSync(path.join(tmp.dir, 'entry.js'), entry);
  const outfile = path.join(tmp.dir, 'out.cjs');
  await build({
    entryPoints: [path.join(tmp.dir, 'entry.js')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    plugins: [lazyBuiltins],
    logLevel: 'error',
  });
  const res = spawnSync(process.execPath, [outfile], { encoding: 'utf8' });
  assert.equal(res.status, 0, res.stderr);
  return JSON.parse(res.stdout);
}

const loaded = `(name) => process.moduleLoadList.includes('NativeModule ' + name)`;

describe('lazy Node modules in the bundle (scripts/lib/lazy-builtins.mjs)', () => {
  it("a dependency's http2, https and dns load at first use, and then are the modules themselves", async (t) => {
    const out = await bundleAndRun(
      t,
      `const http2 = require('node:http2');
const https = require('https');
const dns = require('node:dns');
module.exports = { http2, https, dns };`,
      `const loaded = ${loaded};
const { http2, https, dns } = require('dep');
const before = ['http2', 'https', 'dns'].filter(loaded);
const status = http2.constants.HTTP_STATUS_OK;
const after = ['http2', 'https', 'dns'].filter(loaded);
process.stdout.write(JSON.stringify({
  before,
  status,
  after,
  same: https.createServer === require('node:https').createServer && dns.lookup === require('node:dns').lookup,
  keys: Object.keys(http2).includes('createSecureServer'),
  has: 'connect' in http2,
}));`,
    );
    assert.deepEqual(out, { before: [], status: 200, after: ['http2'], same: true, keys: true, has: true });
  });

  it('our own code and destructuring requires get the module at once', async (t) => {
    const out = await bundleAndRun(
      t,
      `const { lookup } = require('node:dns');
module.exports = typeof lookup;`,
      `const loaded = ${loaded};
const https = require('node:https');
const kind = require('dep');
process.stdout.write(JSON.stringify({ kind, https: loaded('https'), dns: loaded('dns'), get: typeof https.get }));`,
    );
    assert.deepEqual(out, { kind: 'function', https: true, dns: true, get: 'function' });
  });
});
