// Shared by the A/B scripts (startup-profile.mjs, throughput-ab.mjs): building a git
// revision as it was built then, a free port, a median.
import { execFileSync, execSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** A directory holding a build (cli/main.js) as is; a git revision built into .bench/builds/REV/dist. */
export function buildDir(arg) {
  if (existsSync(path.join(arg, 'cli/main.js'))) return arg;
  const rev = execFileSync('git', ['rev-parse', '--short', arg], { cwd: ROOT, encoding: 'utf8' }).trim();
  // Inside the checkout, so the build resolves this checkout's node_modules.
  const dir = path.join(ROOT, '.bench/builds', rev);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execSync(`git archive ${rev} src scripts catalog package.json tsconfig.json tsconfig.build.json | tar -x -C ${dir}`, { cwd: ROOT });
  execFileSync(path.join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  if (existsSync(path.join(dir, 'scripts/bundle.mjs'))) execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: dir, stdio: 'inherit' });
  process.stdout.write(`built ${arg} (${rev}) in ${path.relative(process.cwd(), dir)}/dist\n`);
  return path.join(dir, 'dist');
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
