// Running the real `infracat` command (and fixtures) as child processes.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { after } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const CLI = path.join(ROOT, 'src/cli/main.ts');
// Absolute, so children started in another working directory still find tsx.
const TSX = import.meta.resolve('tsx');

// Every child still running when a test file's tests are done is killed: a test that
// fails between starting a server and stopping it would otherwise leave the server
// holding the file's process open, and the run would hang instead of reporting.
const running = new Set<ChildProcessWithoutNullStreams>();
after(() => {
  for (const proc of running) proc.kill('SIGKILL');
});

export interface Child {
  proc: ChildProcessWithoutNullStreams;
  stdout: string[];
  stderr: string[];
  /** Resolves with the first stdout/stderr line matching `re`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function runTs(
  script: string,
  args: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Child {
  return run(process.execPath, ['--import', TSX, script, ...args], options);
}

function run(
  command: string,
  args: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string },
): Child {
  const env: Record<string, string | undefined> = { ...process.env, ...options.env };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  const proc = spawn(command, args, { cwd: options.cwd ?? ROOT, env });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  const stdout: string[] = [];
  const stderr: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  const feed = (sink: string[]) => {
    let partial = '';
    return (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        sink.push(line);
        for (const w of [...waiters])
          if (w.re.test(line)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(line);
          }
      }
    };
  };
  proc.stdout.on('data', feed(stdout));
  proc.stderr.on('data', feed(stderr));
  const exited = once(proc, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  return {
    proc,
    stdout,
    stderr,
    exited,
    waitFor(re, timeoutMs = 20_000) {
      const seen = [...stdout, ...stderr].find((l) => re.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(`timed out waiting for ${re}; stdout:\n${stdout.join('\n')}\nstderr:\n${stderr.join('\n')}`),
            ),
          timeoutMs,
        );
        const w = {
          re,
          resolve: (l: string) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        waiters.push(w);
        void exited.then(() => {
          if (waiters.includes(w)) {
            clearTimeout(timer);
            reject(new Error(`process exited before ${re}; stderr:\n${stderr.join('\n')}`));
          }
        });
      });
    },
  };
}

/**
 * `infracat` with `args`: under `npm test` the command built from src/ as it ships
 * (INFRACAT_TEST_CLI, scripts/run-tests.ts), else src/cli/main.ts through tsx.
 */
export function runCli(
  args: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Child {
  const built = process.env.INFRACAT_TEST_CLI;
  return built ? run(process.execPath, [built, ...args], options) : runTs(CLI, args, options);
}

/** Runs a CLI command to completion. */
export async function cli(
  args: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = runCli(args, options);
  const { code } = await child.exited;
  return { code, stdout: child.stdout.join('\n'), stderr: child.stderr.join('\n') };
}

/** Starts `infracat serve` on a free port and resolves with its base URL once it listens. */
export async function serve(
  env: Record<string, string | undefined>,
  cwd?: string,
): Promise<{ child: Child; url: string }> {
  const child = runCli(['serve'], { env: { PORT: '0', LOG_LEVEL: 'info', ...env }, ...(cwd ? { cwd } : {}) });
  let line: string;
  try {
    line = await child.waitFor(/"msg":"infracat listening"/);
  } catch (err) {
    child.proc.kill('SIGKILL'); // never leave a server behind to hold the test process open
    throw err;
  }
  const url = (JSON.parse(line) as { url: string }).url;
  return { child, url };
}
