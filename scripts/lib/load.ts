// The fair way to measure a server on this 2-vCPU VM: the server pinned to
// CPU 0, the load generator (Debian's wrk, one thread) pinned to CPU 1, so neither steals
// the other's core; and besides the rate, the server's own CPU time per request (user +
// system time of its process, all threads, divided by the answers it gave), which stays
// steady when the VM's speed drifts. Shared by bench.ts and throughput-ab.ts.
import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const SERVER_CPU = '0';
export const LOAD_CPU = '1';

const WRK_PATHS = ['/usr/bin/wrk', '/usr/local/bin/wrk'];

/** True when this machine can pin (taskset present, at least two CPUs online). */
export function canPin(): boolean {
  try {
    execFileSync('taskset', ['-c', `${SERVER_CPU},${LOAD_CPU}`, 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Debian's wrk, installed with apt-get when missing and allowed (root), as the tests install
 * nginx. Undefined when it cannot be had: the caller falls back to autocannon.
 */
export function ensureWrk(): string | undefined {
  const found = () => WRK_PATHS.find((p) => existsSync(p));
  if (found() !== undefined) return found();
  if (process.getuid?.() !== 0) return undefined;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'wrk'], { env, stdio: 'ignore' });
  try {
    install();
  } catch {
    try {
      execFileSync('apt-get', ['update'], { env, stdio: 'ignore' });
      install();
    } catch {
      return undefined;
    }
  }
  return found();
}

/**
 * The environment a measured server starts with: this one, less NODE_EXTRA_CA_CERTS. Node
 * reads and parses that file at every start, before any JavaScript runs; where it names
 * the system's certificate bundle (144 certificates on the machines here) that alone is
 * 80-100 ms and ~2 MB of every Node process (BENCHMARKS.md), and no server measured here
 * makes a TLS connection. Without it a cold start measures the server, not the machine's
 * certificate settings.
 */
export function serverEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/** `spawn`, the child (and every thread it starts) pinned to the server CPU when `pin`. */
export function spawnServer(command: string, args: string[], options: SpawnOptions, pin: boolean): ChildProcess {
  return pin ? spawn('taskset', ['-c', SERVER_CPU, command, ...args], options) : spawn(command, args, options);
}

/** User + system CPU time of a process and all its threads so far, in microseconds. */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/**
 * CPU time of a process's live threads so far, in ms, from the scheduler's nanosecond
 * counts: for what is too short for cpuMicros()'s clock ticks (a start, 10 ms a tick). A
 * thread that has ended is not counted, so not for long runs.
 */
export function cpuMsPrecise(pid: number): number {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`))
    ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
  return ns / 1e6;
}

/** Resident memory of a process, MB. */
export function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return kb / 1024;
}

function stealTicks(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  return Number(cpu[8] ?? 0);
}

/**
 * Waits (up to 3 s) until the hypervisor has stopped stealing CPU for a quarter second:
 * a run that starts during a steal burst measures the neighbours, not the server.
 */
export async function settle(): Promise<void> {
  for (let i = 0; i < 12; i++) {
    const before = stealTicks();
    await new Promise((r) => setTimeout(r, 250));
    if (stealTicks() - before <= 1) return;
  }
}

const UNIT_MS: Record<string, number> = { us: 1e-3, ms: 1, s: 1000 };
const ms = (text: string): number => {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  return m ? Number(m[1]) * UNIT_MS[m[2]!]! : NaN;
};

export interface Run {
  requests: number;
  rps: number;
  /** Latency percentiles, ms. */
  p50: number;
  p99: number;
  non2xx: number;
  /** Socket errors and timeouts. */
  errors: number;
}

/** Reads wrk's --latency report. */
export function parseWrk(out: string): Run {
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = sock ? sock.slice(1).reduce((n, v) => n + Number(v), 0) : 0;
  return {
    requests,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50: ms(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    p99: ms(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    non2xx,
    errors,
  };
}

/**
 * A wrk Lua script sending `method`, `headers` and `body` (wrk's -H covers headers only);
 * written under `dir`, its path returned.
 */
function wrkScript(dir: string, method: string, headers: Record<string, string>, body?: string): string {
  const file = path.join(dir, `wrk-${Math.random().toString(36).slice(2)}.lua`);
  const lines = [`wrk.method = ${JSON.stringify(method)}`];
  for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  if (body !== undefined) lines.push(`wrk.body = ${JSON.stringify(body)}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/**
 * Drives `url` for `seconds` with `connections` and reads the server's CPU time around it.
 * Returns rps, p50/p99 (ms), non-2xx and socket errors, requests, and cpu_us_per_request.
 * `load.wrk` is wrk's path (pinned to the load CPU when `load.pin`), or undefined for the
 * autocannon fallback.
 */
export interface Load {
  wrk: string | undefined;
  pin: boolean;
}

export interface Drive {
  headers?: Record<string, string>;
  method?: string;
  body?: string;
  seconds: number;
  connections: number;
  /** Where wrk's Lua script for a POST is written. */
  dir: string;
}

export async function drive(
  load: Load,
  pid: number,
  url: string,
  { headers = {}, method = 'GET', body, seconds, connections, dir }: Drive,
): Promise<Run & { cpu_us_per_request: number }> {
  await settle();
  const cpu0 = cpuMicros(pid);
  let run: Run;
  if (load.wrk !== undefined) {
    const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency'];
    if (method !== 'GET' || body !== undefined) args.push('-s', wrkScript(dir, method, headers, body));
    else for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
    args.push(url);
    const wrk = load.wrk;
    const out = await new Promise<string>((resolve, reject) => {
      const child = load.pin ? spawn('taskset', ['-c', LOAD_CPU, wrk, ...args]) : spawn(wrk, args);
      let text = '';
      child.stdout.on('data', (c: Buffer) => (text += c.toString()));
      child.stderr.on('data', (c: Buffer) => (text += c.toString()));
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited ${code}: ${text}`))));
    });
    run = parseWrk(out);
  } else {
    const { default: autocannon } = await import('autocannon');
    const r = await autocannon({
      url,
      connections,
      duration: seconds,
      method: method as 'GET',
      headers,
      ...(body !== undefined ? { body } : {}),
    });
    run = {
      requests: r.requests.total,
      rps: r.requests.average,
      p50: r.latency.p50,
      p99: r.latency.p99,
      non2xx: r.non2xx,
      errors: r.errors + r.timeouts,
    };
  }
  const cpu = cpuMicros(pid) - cpu0;
  return { ...run, cpu_us_per_request: cpu / Math.max(1, run.requests) };
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
