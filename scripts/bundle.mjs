// Second half of `npm run build`: the built command, dist/cli/main.js (scripts/lib/bundle.mjs),
// which `npm start` and the `infracat` bin run. tsc has type-checked and emitted dist/ before
// this; its dist/cli/ is replaced.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleInto } from './lib/bundle.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const MAIN = await bundleInto(path.join(ROOT, 'dist/cli'));

// Every module of the bundle is evaluated at load, so this catches a dependency that
// does not survive bundling. It must also print the package's version (found by the bundle
// from its own location).
const printed = execFileSync(process.execPath, [MAIN, '--version'], { encoding: 'utf8' }).trim();
const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
if (printed !== version) throw new Error(`the bundle's --version printed '${printed}', not '${version}'`);
