// Second half of `npm run build`: the built command in dist/cli/ (scripts/lib/bundle.mjs:
// the bundle dist/cli/infracat.cjs, the launcher dist/cli/main.js, which `npm start` and the
// `infracat` bin run). tsc has type-checked and emitted dist/ before this; its dist/cli/ is
// replaced. The build ends by starting and stopping the server once, which writes the
// launcher's code cache.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { clearTimeout, setTimeout } from 'node:timers';
import path from 'node:path';
import { bundleInto } from './lib/bundle.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const BUNDLE = path.join(ROOT, 'dist/cli/infracat.cjs');
const LAUNCHER = await bundleInto(path.join(ROOT, 'dist/cli'));

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
