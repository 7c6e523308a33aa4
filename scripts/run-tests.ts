// `npm test`: starts a throwaway PostgreSQL (unless TEST_DATABASE_URL is set), runs every
// test/**/*.test.ts and packages/client/test/**/*.test.ts with node:test through tsx, then
// removes the server. The PostgreSQL half of the suite therefore always runs; if the server
// cannot start, the run fails.
//   npm test                          all tests
//   npm test -- test/config.test.ts   some files (or directories)
//   npm test -- packages/client/test  the @infracat/client package's tests (also in a full run)
//   npm run test:reliability          test/reliability/ with long settings
//   npm run test:container            test/container/: the image, built and run with podman as root
//                                     (minutes; left out of a run that names no files)
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres, type PostgresServer } from '../test/helpers/embedded-pg.js';
import { bundleInto } from './lib/bundle.mjs';

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...findTests(full));
    else if (entry.name.endsWith('.test.ts')) out.push(full);
  }
  return out.sort();
}

const args = process.argv.slice(2);
const files = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
const tests =
  files.length > 0
    ? files.flatMap((f) => (statSync(f).isDirectory() ? findTests(f) : [f]))
    : [
        ...findTests('test').filter((f) => !f.startsWith(path.join('test', 'container') + path.sep)),
        ...findTests(path.join('packages', 'client', 'test')),
      ];

// The console's assets, fresh from web/ (the browser tests and the / route serve them).
const web = spawnSync(process.execPath, ['scripts/build-web.mjs'], { stdio: 'inherit' });
if (web.status !== 0) process.exit(web.status ?? 1);

// The command the tests run as a child process (test/helpers/process.ts): built from src/ as
// it ships (scripts/lib/bundle.mjs), so each of the suite's hundreds of runs starts in a
// tenth of a second instead of the two seconds tsx takes to load src/.
const cli = await bundleInto(path.resolve('.test-build/cli'));

let server: PostgresServer | undefined;
const env: NodeJS.ProcessEnv = { ...process.env, INFRACAT_TEST_CLI: cli };
if (env.TEST_DATABASE_URL === undefined || env.TEST_DATABASE_URL === '') {
  const started = Date.now();
  server = await startEmbeddedPostgres();
  env.TEST_DATABASE_URL = server.url;
  // Test names then say which server the PostgreSQL half ran on (test/helpers/backends.ts).
  env.TEST_DATABASE_SERVER = 'embedded';
  process.stdout.write(`test harness: PostgreSQL started on 127.0.0.1:${server.port} in ${Date.now() - started} ms\n`);
} else {
  process.stdout.write('test harness: using TEST_DATABASE_URL\n');
}

const cleanup = async (): Promise<void> => {
  await server?.destroy();
  server = undefined;
};
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...flags, ...tests], {
  stdio: 'inherit',
  env,
});
const code: number = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
await cleanup();
process.exit(code);
