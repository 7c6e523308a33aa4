// Second half of `npm run build`: bundles the server and CLI (src/cli/main.ts and all it
// imports, dependencies included) into the one file dist/cli/main.js that `npm start`
// and the `infracat` bin run. tsc has type-checked and emitted dist/ before this; its
// dist/cli/main.js is replaced.
//
// Why: loading ~400 separate modules (TypeBox alone is ~300 ES modules) was most of the
// cold start (BENCHMARKS.md). One file is read and compiled once.
//
// Left out of the bundle, loaded from node_modules at run time:
// - better-sqlite3(-napi): native addons, chosen at run time (src/storage/sqlite/driver.ts);
// - @fastify/swagger-ui: serves Swagger UI's files from its own package directory;
// - pg-native: pg's optional native binding, not installed.
//
// The bundle stays at dist/cli/ so paths relative to a module two levels below the
// package root (../../catalog/default.yaml) still hold.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { build } from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT = path.join(ROOT, 'dist/cli/main.js');

await build({
  entryPoints: [path.join(ROOT, 'src/cli/main.ts')],
  outfile: OUT,
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  external: ['better-sqlite3', 'better-sqlite3-napi', '@fastify/swagger-ui', 'pg-native'],
  // Bundled CommonJS dependencies call require() for Node's built-ins; an ES module has
  // none, so give the bundle one.
  banner: {
    js:
      "import { createRequire as __infracatCreateRequire } from 'node:module';\n" +
      'const require = __infracatCreateRequire(import.meta.url);',
  },
  logLevel: 'warning',
});

// Every module of the bundle is evaluated at load, so this catches a dependency that
// does not survive bundling.
execFileSync(process.execPath, [OUT, '--version'], { stdio: ['ignore', 'ignore', 'inherit'] });
