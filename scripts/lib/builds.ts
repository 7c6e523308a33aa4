// Shared by the bench and the A/B scripts (startup-profile.ts, throughput-ab.ts): building
// a git revision as it was built then, a free port, starting a server.
import type { ChildProcess } from 'node:child_process';
import { execFileSync, execSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { serverEnv, spawnServer } from './load.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** A directory holding a build (cli/main.js) as is; a git revision built into .bench/builds/REV/dist. */
export function buildDir(arg: string): string {
  if (existsSync(path.join(arg, 'cli/main.js'))) return arg;
  const rev = execFileSync('git', ['rev-parse', '--short', arg], { cwd: ROOT, encoding: 'utf8' }).trim();
  // Inside the checkout, so the build resolves this checkout's node_modules.
  const dir = path.join(ROOT, '.bench/builds', rev);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execSync(`git archive ${rev} src scripts catalog package.json tsconfig.json tsconfig.build.json | tar -x -C ${dir}`, {
    cwd: ROOT,
  });
  execFileSync(path.join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  if (existsSync(path.join(dir, 'scripts/bundle.mjs')))
    execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: dir, stdio: 'inherit' });
  process.stdout.write(`built ${arg} (${rev}) in ${path.relative(process.cwd(), dir)}/dist\n`);
  return path.join(dir, 'dist');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A server that was still running but had not answered when waitUntilUp's time was up. */
export class NoAnswerError extends Error {
  override name = 'NoAnswerError';
}

/**
 * Polls `url` every 5 ms until it answers 2xx; throws if `child` exits first. The cold starts
 * the bench reports end here, so the step is their resolution (20 ms would be up to a tenth
 * of a start, for infracat and C alike).
 */
export async function waitUntilUp(url: string, child: ChildProcess, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode} before ${url} answered`);
    if (Date.now() - started > timeoutMs) throw new NoAnswerError(`${url}: no answer in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * `infracat serve` from a build's cli/main.js as the benchmarks run it (serverEnv()): shipped settings
 * (info access log to a discarded stdout, metrics), rate limits raised so the limiter
 * runs without tripping; pinned to the server CPU when `pin` (lib/load.ts). Resolves once
 * /healthz answers (within `timeoutMs`, waitUntilUp's 20 s by default).
 */
export async function startInfracat(
  cliPath: string,
  databaseUrl: string,
  {
    env = {},
    pin = false,
    nodeArgs = [],
    timeoutMs,
  }: { env?: Record<string, string>; pin?: boolean; nodeArgs?: readonly string[]; timeoutMs?: number } = {},
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawnServer(
    process.execPath,
    [...nodeArgs, cliPath, 'serve'],
    {
      env: serverEnv({
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'info',
        BOOTSTRAP_ADMIN_TOKEN: 'false',
        RATE_LIMIT: '10000000',
        RATE_LIMIT_ANONYMOUS: '10000000',
        ...env,
      }),
      stdio: ['ignore', 'ignore', 'inherit'],
    },
    pin,
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntilUp(`${url}/healthz`, child, timeoutMs);
  } catch (err) {
    child.kill('SIGKILL'); // no server outlives a start that failed
    throw err;
  }
  return { child, url };
}

/** Stops a server started here (SIGTERM: a graceful stop; SIGKILL: at once) and waits for it to exit. */
export function stopServer(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

/** `infracat ARGS` from a build's cli/main.js on the database; its standard output, or a throw naming its stderr. */
export function runCli(cliPath: string, databaseUrl: string, args: string[], env: Record<string, string> = {}): string {
  const r = spawnSync(process.execPath, [cliPath, ...args], {
    env: { ...process.env, ...env, DATABASE_URL: databaseUrl },
    encoding: 'utf8',
    // The diff of a large catalog apply runs to megabytes (the default 1 MiB would kill it).
    maxBuffer: 256 * 2 ** 20,
  });
  if (r.status !== 0)
    throw new Error(`infracat ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.error?.message ?? ''} ${r.stderr}`);
  return r.stdout;
}
