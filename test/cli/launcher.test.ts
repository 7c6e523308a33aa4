// The built command's launcher (scripts/launcher.cjs, dist/cli/main.js): it runs the bundle
// as Node runs a CommonJS module, with V8's code cache beside it. Tested on a small bundle
// of the same shape (scripts/bundle.mjs), so no build is needed: a cache is written at the
// end of a run that found none, kept while V8 accepts it, replaced when V8 refuses it, and a
// cache that cannot be written changes nothing but speed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { tempDir } from '../helpers/sqlite.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

// What the bundle sees: its own file name, require, the arguments; it ends with an exit
// code of its own.
const BUNDLE = `#!/usr/bin/env node
(function (exports, require, module, __filename, __dirname) {
'use strict';
const { basename } = require('node:path');
const out = { file: basename(__filename), dir: __dirname, args: process.argv.slice(2) };
process.stdout.write(JSON.stringify(out));
process.exitCode = 3;
})`;

// Node's tick objects all die, a full collection runs (as during a start, or V8's idle-time
// collection), then nextTick() runs again: prints V8's state of the property definitions in
// nextTick()'s object literal (needs --allow-natives-syntax --expose-gc).
const TICKS_AFTER_GC = `(function (exports, require, module, __filename, __dirname) {
'use strict';
const noop = () => {};
for (let i = 0; i < 200; i++) process.nextTick(noop);
setImmediate(() => {
  globalThis.gc();
  for (let i = 0; i < 200; i++) process.nextTick(noop);
  setImmediate(() => new Function('f', '%DebugPrint(f)')(process.nextTick));
});
})`;

/** The states V8 prints for nextTick()'s DefineKeyedOwnPropertyInLiteral feedback slots. */
function literalStates(stdout: string): string[] {
  return [...stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]!);
}

function install(t: TestContext, bundle = BUNDLE): { cli: string; cache: string; dir: string } {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const dir = path.join(tmp.dir, 'dist/cli');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, '../../package.json'), '{"type": "module"}\n');
  // As scripts/bundle.mjs lays it out: dist/cli/ is CommonJS in an ES module package.
  writeFileSync(path.join(dir, 'package.json'), '{ "type": "commonjs" }\n');
  copyFileSync(path.join(ROOT, 'scripts/launcher.cjs'), path.join(dir, 'main.js'));
  writeFileSync(path.join(dir, 'infracat.cjs'), bundle);
  return { cli: path.join(dir, 'main.js'), cache: path.join(dir, 'infracat.cjs.cache'), dir };
}

function run(cli: string): { status: number | null; out: unknown; stderr: string } {
  const res = spawnSync(process.execPath, [cli, 'serve', '--port', '1'], { encoding: 'utf8' });
  return { status: res.status, out: res.stdout === '' ? undefined : JSON.parse(res.stdout), stderr: res.stderr };
}

describe('the built command (dist/cli/main.js) and its code cache', () => {
  it('runs the bundle as a CommonJS module with its arguments and exit code; writes the cache once', (t) => {
    const { cli, cache, dir } = install(t);
    const expected = { file: 'infracat.cjs', dir, args: ['serve', '--port', '1'] };
    const first = run(cli);
    assert.deepEqual([first.status, first.out, first.stderr], [3, expected, '']);
    const written = statSync(cache);
    assert.ok(written.size > 0, 'the first run wrote the cache');

    const second = run(cli);
    assert.deepEqual([second.status, second.out], [3, expected]);
    assert.equal(statSync(cache).mtimeMs, written.mtimeMs, 'an accepted cache is kept, not written again');
    assert.deepEqual(
      readdirSync(dir).sort(),
      ['infracat.cjs', 'infracat.cjs.cache', 'main.js', 'package.json'],
      'no partial file',
    );
  });

  it('starts as CommonJS: the launcher is the main module (Node 20 then starts no ES module loader)', (t) => {
    // require.main is the entry point's module when Node's CommonJS loader ran it, and is
    // undefined for an ES module entry point (the launcher of session 14), on every Node.
    const { cli } = install(
      t,
      `(function (exports, require, module, __filename, __dirname) {
process.stdout.write(JSON.stringify(require.main?.filename ?? null));
})`,
    );
    const res = run(cli);
    assert.equal(res.status, 0, res.stderr);
    assert.equal(res.out, cli);
  });

  it('a cache V8 refuses (another Node, other flags, damaged) is replaced at the end of the run', (t) => {
    const { cli, cache } = install(t);
    writeFileSync(cache, 'not a V8 code cache');
    const res = run(cli);
    assert.equal(res.status, 3);
    assert.equal((res.out as { file: string }).file, 'infracat.cjs');
    assert.notEqual(readFileSync(cache, 'utf8'), 'not a V8 code cache');
  });

  it('a cache that cannot be written (here a directory in its place) changes nothing but speed', (t) => {
    const { cli, cache, dir } = install(t);
    mkdirSync(path.join(cache, 'occupied'), { recursive: true });
    const res = run(cli);
    assert.deepEqual([res.status, res.stderr], [3, '']);
    assert.deepEqual((res.out as { args: string[] }).args, ['serve', '--port', '1']);
    assert.deepEqual(
      readdirSync(dir).sort(),
      ['infracat.cjs', 'infracat.cjs.cache', 'main.js', 'package.json'],
      'no partial file',
    );
  });

  it("keeps nextTick()'s object literal monomorphic after a full collection with no tick object alive", (t) => {
    const flags = ['--allow-natives-syntax', '--expose-gc'];
    // The same program run as a plain script, without the launcher: V8 loses the literal's
    // maps in that collection and marks its definitions megamorphic (what the launcher
    // prevents; if a Node release stops doing this, the launcher's kept tick object can go).
    const { dir } = install(t, TICKS_AFTER_GC);
    const plain = path.join(dir, 'plain.cjs');
    writeFileSync(plain, `${TICKS_AFTER_GC}(exports, require, module, __filename, __dirname);`);
    const without = spawnSync(process.execPath, [...flags, plain], { encoding: 'utf8' });
    assert.equal(without.status, 0, without.stderr);
    assert.ok(literalStates(without.stdout).includes('MEGAMORPHIC'), literalStates(without.stdout).join(' '));

    // Twice: the first run compiles the bundle and writes its code cache, the second takes it.
    // Only the first registers a listener (to write the cache at exit), whose closure also kept
    // the launcher's own variables alive; the second must keep the tick object all the same.
    const { cli, cache } = install(t, TICKS_AFTER_GC);
    for (const run of ['without a code cache', 'with the code cache']) {
      const res = spawnSync(process.execPath, [...flags, cli], { encoding: 'utf8' });
      assert.equal(res.status, 0, res.stderr);
      assert.ok(existsSync(cache), `${run}: the cache is there after it`);
      const states = literalStates(res.stdout);
      assert.ok(states.length >= 4, `${run}: nextTick()'s literal defines 4 properties: ${res.stdout.slice(0, 2000)}`);
      assert.deepEqual(new Set(states), new Set(['MONOMORPHIC']), run);
    }
  });
});
