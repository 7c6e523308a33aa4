// The bundle's stand-ins for modules that dependencies load but a start does not use
// (scripts/lib/lazy-requires.mjs): a dependency's require() of http2, https or dns, or of a
// package a rule names for that dependency, loads nothing until the module is used, and then
// behaves as the module itself. Bundled here with esbuild as scripts/bundle.mjs bundles,
// from packages under node_modules/.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { build } from 'esbuild';
import { LAZY_REQUIRES, lazyRequires, type LazyRequire } from '../../scripts/lib/lazy-requires.mjs';
import { tempDir } from '../helpers/sqlite.js';

/**
 * Bundles `entry` (with `dependency` as node_modules/dep/index.js, and `packages` as
 * node_modules/NAME/index.js) under `rules`, and runs it; its stdout as JSON.
 */
async function bundleAndRun(
  t: TestContext,
  dependency: string,
  entry: string,
  { packages = {}, rules = LAZY_REQUIRES }: { packages?: Record<string, string>; rules?: readonly LazyRequire[] } = {},
): Promise<unknown> {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  for (const [name, source] of Object.entries({ ...packages, dep: dependency })) {
    mkdirSync(path.join(tmp.dir, 'node_modules', name), { recursive: true });
    writeFileSync(path.join(tmp.dir, 'node_modules', name, 'index.js'), source);
  }
  writeFileSync(path.join(tmp.dir, 'entry.js'), entry);
  const outfile = path.join(tmp.dir, 'out.cjs');
  await build({
    entryPoints: [path.join(tmp.dir, 'entry.js')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    plugins: [lazyRequires(rules)],
    logLevel: 'error',
  });
  const res = spawnSync(process.execPath, [outfile], { encoding: 'utf8' });
  assert.equal(res.status, 0, res.stderr);
  return JSON.parse(res.stdout);
}

const loaded = `(name) => process.moduleLoadList.includes('NativeModule ' + name)`;

describe('lazy requires in the bundle (scripts/lib/lazy-requires.mjs)', () => {
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
  it("a package a rule names loads at the named dependency's first use of it; others get it at once", async (t) => {
    const out = await bundleAndRun(
      t,
      `const pkg = require('pkg');
module.exports = { pkg };`,
      `const { pkg } = require('dep');
const before = globalThis.pkgLoads ?? 0;
const answer = pkg.answer();
const after = globalThis.pkgLoads;
const direct = require('other');
process.stdout.write(JSON.stringify({ before, answer, after, direct, stringify: 'answer' in pkg }));`,
      {
        packages: {
          pkg: `globalThis.pkgLoads = (globalThis.pkgLoads ?? 0) + 1;
module.exports = { answer: () => 42 };`,
          other: `module.exports = require('pkg').answer() + globalThis.pkgLoads;`,
        },
        rules: [{ module: /^pkg$/, importer: `${path.sep}node_modules${path.sep}dep${path.sep}` }],
      },
    );
    // Loaded once in all: by the stand-in at its first use, then shared with 'other'.
    assert.deepEqual(out, { before: 0, answer: 42, after: 1, direct: 43, stringify: true });
  });

  it('the YAML library is one of them, for @fastify/swagger alone', () => {
    const yaml = LAZY_REQUIRES.find((r) => r.module.test('yaml'));
    assert.ok(yaml, 'a rule for yaml');
    assert.ok(yaml.importer.includes(`@fastify${path.sep}swagger`));
  });
});
