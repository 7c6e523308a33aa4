// Builds the web console into dist/web: one minified ES module bundle (web/src/main.ts),
// the stylesheet, the page and its icon. Run by `npm run build` (so by `npm install`/`npm ci`
// through `prepare`) and before every `npm test`. Plain JavaScript so it needs no loader.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist', 'web');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const started = Date.now();
await build({
  absWorkingDir: root,
  entryPoints: [
    { in: 'web/src/main.ts', out: 'console' },
    { in: 'web/console.css', out: 'console' },
  ],
  outdir: out,
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome120', 'firefox120', 'safari17'],
  legalComments: 'none',
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) copyFileSync(path.join(root, 'web', file), path.join(out, file));
process.stdout.write(`web console built into dist/web in ${Date.now() - started} ms\n`);
