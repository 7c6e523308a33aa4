// The built command, laid out in a directory two levels below the package root (so the
// bundle's paths relative to its own location, ../../catalog/default.yaml, ../../dist/web/,
// hold): src/cli/main.ts and all it imports, dependencies included, bundled into one
// CommonJS file, DIR/main.js (with the entry's shebang), and DIR/package.json saying
// CommonJS. Anything else in DIR is removed (tsc's ES modules in dist/cli/, which the bundle
// replaces).
//
// Used by scripts/bundle.mjs (dist/cli/, what `npm start` and the `infracat` bin run) and by
// scripts/run-tests.ts (.test-build/cli/, the command the tests run as a child process).
//
// Why one file: loading ~400 separate modules (TypeBox alone is ~300 ES modules) is most
// of a cold start (BENCHMARKS.md). Why CommonJS: several bundled dependencies are CommonJS
// and use require() and __dirname as such.
//
// Left out of the bundle, loaded from node_modules at run time:
// - native addons (*.node), and better-sqlite3-napi, the SQLite driver of Node 22+, chosen at
//   run time (src/storage/sqlite/driver.ts; better-sqlite3's own JavaScript is bundled);
// - @fastify/swagger-ui: serves Swagger UI's files from its own package directory;
// - pg-native: pg's optional native binding, not installed.
import { chmodSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Builds the command into `dir` (see above); resolves with its path, DIR/main.js. */
export async function bundleInto(dir) {
  const main = path.join(dir, 'main.js');
  mkdirSync(dir, { recursive: true });
  const kept = new Set(['main.js', 'main.js.map']);
  for (const name of readdirSync(dir)) {
    if (!kept.has(name)) rmSync(path.join(dir, name), { recursive: true, force: true });
  }
  writeFileSync(path.join(dir, 'package.json'), '{ "type": "commonjs" }\n');
  await build({
    entryPoints: [path.join(ROOT, 'src/cli/main.ts')],
    outfile: main,
    allowOverwrite: true,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: true,
    external: ['*.node', 'better-sqlite3-napi', '@fastify/swagger-ui', 'pg-native'],
    // Strict, as the ES modules it is made of were; import.meta.url: this file's.
    banner: { js: "'use strict';\nconst __infracatModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
    define: { 'import.meta.url': '__infracatModuleUrl' },
    logLevel: 'warning',
  });
  chmodSync(main, 0o755);
  return main;
}
