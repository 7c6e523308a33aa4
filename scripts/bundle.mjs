// Second half of `npm run build`: bundles the server and CLI (src/cli/main.ts and all it
// imports, dependencies included) into the one file dist/cli/infracat.cjs, and puts the
// launcher (scripts/launcher.cjs) at dist/cli/main.js, which `npm start` and the
// `infracat` bin run. tsc has type-checked and emitted dist/ before this; its
// dist/cli/main.js is replaced.
//
// Why one file: loading ~400 separate modules (TypeBox alone is ~300 ES modules) was most
// of the cold start (BENCHMARKS.md). Why CommonJS wrapped in a function: the launcher
// compiles it with V8's code cache, which Node 20 offers for scripts, not for ES modules.
// The build ends by starting and stopping the server once, which writes that cache.
//
// Left out of the bundle, loaded from node_modules at run time:
// - better-sqlite3(-napi): native addons, chosen at run time (src/storage/sqlite/driver.ts);
// - @fastify/swagger-ui: serves Swagger UI's files from its own package directory;
// - pg-native: pg's optional native binding, not installed.
//
// Node's own modules that dependencies load at start for paths infracat never takes
// (Fastify's HTTP/2 and HTTPS servers and its host-name lookup, prom-client's Pushgateway)
// are loaded on first use instead (scripts/lib/lazy-builtins.mjs).
//
// The bundle stays at dist/cli/ so paths relative to a module two levels below the
// package root (../../catalog/default.yaml) still hold. dist/cli/ gets its own package.json
// saying CommonJS, for the launcher (scripts/launcher.cjs); tsc's ES modules there, which
// the bundle replaces, are removed.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { clearTimeout, setTimeout } from 'node:timers';
import path from 'node:path';
import { build } from 'esbuild';
import { lazyBuiltins } from './lib/lazy-builtins.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const BUNDLE = path.join(ROOT, 'dist/cli/infracat.cjs');
const LAUNCHER = path.join(ROOT, 'dist/cli/main.js');

const { metafile } = await build({
  entryPoints: [path.join(ROOT, 'src/cli/main.ts')],
  outfile: BUNDLE,
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: true,
  external: ['better-sqlite3', 'better-sqlite3-napi', '@fastify/swagger-ui', 'pg-native'],
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
  plugins: [lazyBuiltins],
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
const source = readFileSync(BUNDLE, 'utf8');
writeFileSync(
  BUNDLE,
  source.replace(/[^\0-\x7f]/gu, (c) => `\\u{${c.codePointAt(0).toString(16)}}`),
);
const kept = new Set(['infracat.cjs', 'infracat.cjs.map']);
for (const name of readdirSync(path.dirname(BUNDLE))) {
  if (!kept.has(name)) rmSync(path.join(path.dirname(BUNDLE), name), { force: true });
}
writeFileSync(path.join(path.dirname(BUNDLE), 'package.json'), '{ "type": "commonjs" }\n');
copyFileSync(path.join(ROOT, 'scripts/launcher.cjs'), LAUNCHER);
chmodSync(LAUNCHER, 0o755);
rmSync(`${BUNDLE}.cache`, { force: true });

// Every module of the bundle is evaluated at load, so this catches a dependency that
// does not survive bundling.
// It must also print the package's version (found by the bundle from its own location).
const printed = execFileSync(process.execPath, [LAUNCHER, '--version'], { encoding: 'utf8' }).trim();
const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
if (printed !== version) throw new Error(`the bundle's --version printed '${printed}', not '${version}'`);

// The code cache of a whole start and stop: `--version` above wrote one of its own run,
// which would stay (a cache V8 accepts is never rewritten), so it goes first.
rmSync(`${BUNDLE}.cache`, { force: true });
const dir = mkdtempSync(path.join(tmpdir(), 'infracat-build-'));
try {
  const server = spawn(process.execPath, [LAUNCHER, 'serve'], {
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: `sqlite:${path.join(dir, 'warm-up.sqlite')}`,
      PORT: '0',
      HOST: '127.0.0.1',
      BOOTSTRAP_ADMIN_TOKEN: 'false',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  server.stdout.setEncoding('utf8');
  server.stdout.on('data', (chunk) => {
    out += chunk;
    if (out.includes('"infracat listening"')) server.kill('SIGTERM');
  });
  const stuck = setTimeout(() => server.kill('SIGKILL'), 60_000);
  const [code] = await once(server, 'exit');
  clearTimeout(stuck);
  if (code !== 0) throw new Error(`the warm-up start of the bundle failed (exit ${code}):\n${out}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
