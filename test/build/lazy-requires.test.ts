// The bundle's stand-ins for modules that dependencies load but a start does not use
// (scripts/lib/lazy-requires.mjs): a dependency's require() of http2, https or dns, or of a
// package a rule names for that dependency, loads nothing until the module is used, and then
// behaves as the module itself. Bundled here with esbuild as scripts/bundle.mjs bundles,
// from packages under node_modules/.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { build } from 'esbuild';
import {
  LAZY_REQUIRES,
  lazyRequires,
  NARROW_REQUIRES,
  type LazyRequire,
  type NarrowRequire,
} from '../../scripts/lib/lazy-requires.mjs';
import fastifySemver from '../../scripts/lib/fastify-semver.cjs';
import { tempDir } from '../helpers/sqlite.js';

/**
 * Bundles `entry` (with `dependency` as node_modules/dep/index.js, and `packages` as
 * node_modules/NAME/index.js) under `rules`, and runs it; its stdout as JSON.
 */
async function bundleAndRun(
  t: TestContext,
  dependency: string,
  entry: string,
  {
    packages = {},
    rules = LAZY_REQUIRES,
    narrow = NARROW_REQUIRES,
    resolveDir,
    onBundle,
  }: {
    packages?: Record<string, string>;
    rules?: readonly LazyRequire[];
    narrow?: readonly NarrowRequire[];
    /** Where the entry's own requires resolve from (default: beside it, the packages above). */
    resolveDir?: string;
    /** Sees the bundle's code. */
    onBundle?: (code: string) => void;
  } = {},
): Promise<unknown> {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  // A package's files: index.js, or NAME/FILE.js for a name with a slash after the package's.
  for (const [name, source] of Object.entries({ ...packages, dep: dependency })) {
    const file = /^(@[^/]+\/)?[^/]+\//.test(name) ? `${name}.js` : `${name}/index.js`;
    mkdirSync(path.dirname(path.join(tmp.dir, 'node_modules', file)), { recursive: true });
    writeFileSync(path.join(tmp.dir, 'node_modules', file), source);
  }
  const outfile = path.join(tmp.dir, 'out.cjs');
  await build({
    stdin: { contents: entry, resolveDir: resolveDir ?? tmp.dir, sourcefile: 'entry.js' },
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    plugins: [lazyRequires(rules, narrow)],
    logLevel: 'error',
  });
  onBundle?.(readFileSync(outfile, 'utf8'));
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

  it("a narrowed package: the dependency gets the rule's file, which resolves as the dependency did", async (t) => {
    const shim = tempDir();
    t.after(() => shim.remove());
    const file = path.join(shim.dir, 'narrow.cjs');
    writeFileSync(file, `module.exports = { double: require('pkg/functions/double') };`);
    const out = await bundleAndRun(
      t,
      `const pkg = require('pkg');
module.exports = () => pkg.double(21);`,
      `const run = require('dep');
process.stdout.write(JSON.stringify({ answer: run(), index: globalThis.indexRan ?? false }));`,
      {
        packages: {
          pkg: `globalThis.indexRan = true;
module.exports = { double: require('./functions/double'), other: () => 0 };`,
          'pkg/functions/double': `module.exports = (n) => n * 2;`,
        },
        narrow: [
          {
            module: /^pkg$/,
            importer: `${path.sep}node_modules${path.sep}dep${path.sep}`,
            with: file,
          },
        ],
      },
    );
    assert.deepEqual(out, { answer: 42, index: false });
  });

  it("the file Fastify gets for semver answers satisfies() as semver does, and gt() and coerce() are semver's", () => {
    const semverSatisfies = createRequire(import.meta.url)(
      'semver/functions/satisfies',
    ) as typeof fastifySemver.satisfies;
    const versions = [
      '5.12.8',
      '5.0.0',
      '4.29.1',
      '6.0.0',
      '0.1.2',
      '10.2.3',
      '5.0.0-rc.1',
      'v5.1.2',
      '05.1.2',
      '5.1',
      '',
    ];
    const ranges = ['5.x', '4.x', '0.x', '10.x', '05.x', '5.X', '^5.0.0', '>=4.0.0', '5.x || 6.x', ' 5.x', 'x', ''];
    for (const version of versions)
      for (const range of ranges)
        for (const options of [undefined, { includePrerelease: true }])
          assert.equal(
            fastifySemver.satisfies(version, range, options),
            semverSatisfies(version, range, options),
            `satisfies(${JSON.stringify(version)}, ${JSON.stringify(range)}, ${JSON.stringify(options)})`,
          );
    assert.equal(fastifySemver.gt('5.12.8', '5.0.0'), true);
    assert.equal(fastifySemver.coerce('5.x')?.version, '5.0.0');
  });

  // The one narrowed package of the build: Fastify's plugin version check, with the real
  // Fastify and semver, bundled as the build bundles them.
  it("Fastify's plugin version check takes a matching plugin, refuses another, without semver's index", async (t) => {
    let bundled = '';
    const out = await bundleAndRun(
      t,
      'module.exports = null;',
      `const fastify = require('fastify');
const fp = require('fastify-plugin');
(async () => {
  const ok = fastify();
  await ok.register(fp(async () => undefined, { fastify: '5.x', name: 'matching' })).ready();
  const old = fastify();
  const refused = await old.register(fp(async () => undefined, { fastify: '4.x', name: 'old' })).ready()
    .then(() => 'taken', (err) => err.code);
  process.stdout.write(JSON.stringify({ refused }));
})();`,
      { resolveDir: process.cwd(), onBundle: (code) => (bundled = code) },
    );
    assert.deepEqual(out, { refused: 'FST_ERR_PLUGIN_VERSION_MISMATCH' });
    assert.ok(bundled.includes('node_modules/semver/functions/satisfies.js'), 'semver is in the bundle');
    assert.ok(!bundled.includes('node_modules/semver/index.js'), "but not semver's index");
    assert.ok(NARROW_REQUIRES.some((r) => r.module.test('semver')));
  });

  it('the YAML library is one of them, for @fastify/swagger alone', () => {
    const yaml = LAZY_REQUIRES.find((r) => r.module.test('yaml'));
    assert.ok(yaml, 'a rule for yaml');
    assert.ok(yaml.importer.includes(`@fastify${path.sep}swagger`));
  });

  it("prom-client's OpenTelemetry API is one of them: the default metrics, CPU included, still collect", async (t) => {
    const out = await bundleAndRun(
      t,
      'module.exports = null;',
      `const client = require('prom-client');
const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });
registry.metrics().then((text) => process.stdout.write(JSON.stringify({
  cpu: /^process_cpu_user_seconds_total \\d/m.test(text),
})));`,
      { resolveDir: process.cwd() },
    );
    assert.deepEqual(out, { cpu: true });
    assert.ok(LAZY_REQUIRES.some((r) => r.module.test('@opentelemetry/api') && r.importer.includes('prom-client')));
  });
});
