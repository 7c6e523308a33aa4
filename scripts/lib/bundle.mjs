// The built command, laid out in a directory two levels below the package root (so the
// bundle's paths relative to its own location, ../../catalog/default.yaml, ../../dist/web/,
// hold): the bundle of the server and CLI (src/cli/main.ts and all it imports, dependencies
// included) as DIR/infracat.cjs, the launcher (scripts/launcher.cjs) as DIR/main.js, and
// DIR/package.json saying CommonJS, for the launcher. Anything else in DIR is removed (tsc's
// ES modules in dist/cli/, which the bundle replaces).
//
// Used by scripts/bundle.mjs (dist/cli/, what `npm start` and the `infracat` bin run) and by
// scripts/run-tests.ts (.test-build/cli/, the command the tests run as a child process).
//
// Why one file: loading ~400 separate modules (TypeBox alone is ~300 ES modules) was most
// of the cold start (BENCHMARKS.md). Why CommonJS wrapped in a function: the launcher
// compiles it with V8's code cache, which Node 20 offers for scripts, not for ES modules.
//
// Left out of the bundle, loaded from node_modules at run time:
// - native addons (*.node), and better-sqlite3-napi, the SQLite driver of Node 22+, chosen at
//   run time (src/storage/sqlite/driver.ts; better-sqlite3's own JavaScript is bundled);
// - @fastify/swagger-ui: serves Swagger UI's files from its own package directory;
// - pg-native: pg's optional native binding, not installed.
//
// Modules that dependencies load at start for paths a start never takes (Fastify's HTTP/2
// and HTTPS servers and its host-name lookup, prom-client's Pushgateway, @fastify/swagger's
// YAML output) are loaded on first use instead (lazy-requires.mjs).
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { lazyRequires } from './lazy-requires.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Builds the command into `dir` (see above); resolves with the launcher's path, DIR/main.js. */
export async function bundleInto(dir) {
  const bundle = path.join(dir, 'infracat.cjs');
  const launcher = path.join(dir, 'main.js');
  mkdirSync(dir, { recursive: true });
  const { metafile } = await build({
    entryPoints: [path.join(ROOT, 'src/cli/main.ts')],
    outfile: bundle,
    allowOverwrite: true,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: true,
    external: ['*.node', 'better-sqlite3-napi', '@fastify/swagger-ui', 'pg-native'],
    // One function expression with the parameters Node gives a CommonJS module (the launcher
    // calls it); strict, as the ES modules it is made of were. import.meta.url: this file's.
    banner: {
      js:
        "(function (exports, require, module, __filename, __dirname) {\n'use strict';\n" +
        "const __infracatModuleUrl = require('node:url').pathToFileURL(__filename).href;",
    },
    footer: { js: '})' },
    define: { 'import.meta.url': '__infracatModuleUrl' },
    metafile: true,
    plugins: [lazyRequires()],
    logLevel: 'warning',
  });
  // The launcher runs the bundle as a script, where Node 20 has no import() but behind a flag:
  // what the bundle leaves out is loaded with require().
  for (const [file, { imports }] of Object.entries(metafile.inputs)) {
    const dynamic = imports.find((i) => i.kind === 'dynamic-import' && i.external);
    if (dynamic) throw new Error(`${file}: import('${dynamic.path}') of a module left out of the bundle; require() it`);
  }
  // esbuild writes code in ASCII (its default charset) but copies comments as they are, and
  // one character beyond Latin-1 in a comment makes V8 hold the whole 3 MB source at two
  // bytes a character: 3 MB more memory for the life of the process. In comments only, so
  // the code and the source map's mappings stay as they were.
  const source = readFileSync(bundle, 'utf8');
  writeFileSync(
    bundle,
    source.replace(/[^\0-\x7f]/gu, (c) => `\\u{${c.codePointAt(0).toString(16)}}`),
  );
  const kept = new Set(['infracat.cjs', 'infracat.cjs.map']);
  for (const name of readdirSync(dir)) {
    if (!kept.has(name)) rmSync(path.join(dir, name), { force: true });
  }
  writeFileSync(path.join(dir, 'package.json'), '{ "type": "commonjs" }\n');
  copyFileSync(path.join(ROOT, 'scripts/launcher.cjs'), launcher);
  chmodSync(launcher, 0o755);
  return launcher;
}
