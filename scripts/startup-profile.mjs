// Cold start and idle RSS of `infracat serve`, for comparing builds in one run:
//
//   node scripts/startup-profile.mjs [BUILD ...]     (default: dist)
//   node scripts/startup-profile.mjs f718008 HEAD   (two revisions, built first)
//
// A BUILD is a directory holding a build (cli/main.js), or a git revision: that
// revision's sources are built as it built them (tsc, and its bundle step if it has
// one) into .bench/builds/REV/. Runs alternate between builds (A B A B ...)
// so a noisy machine slows every build alike. Per run: spawn to the first 200 from
// /healthz (as scripts/bench.ts measures it) and the CPU time used until then, then
// VmRSS after 1 s idle. Prints the
// median, min and max per build and each build's median as a ratio to the first.
//
//   STARTUP_RUNS=9            runs per build
//   STARTUP_DATABASE_URL=...  a PostgreSQL URL instead of a throwaway SQLite file per build
//   STARTUP_IDLE_MS=1000      wait before reading RSS
//
// A first unmeasured start per build seeds its database, like the bench's probe start.
/* global fetch, setTimeout */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildDir, freePort, median } from './lib/builds.mjs';

const RUNS = Number(process.env.STARTUP_RUNS ?? 9);
const IDLE_MS = Number(process.env.STARTUP_IDLE_MS ?? 1000);

const args = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['dist'];
const dists = args.map(buildDir);
const tmp = mkdtempSync(path.join(tmpdir(), 'infracat-startup-'));

// CPU time (user + system) the process has used so far: steadier than wall time when
// another process takes the cores.
const TICK_MS = 10; // USER_HZ is 100 on Linux
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

function rssMb(pid) {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return kb / 1024;
}

async function startOnce(dist, databaseUrl) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(dist, 'cli/main.js'), 'serve'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'info',
      BOOTSTRAP_ADMIN_TOKEN: 'false',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`${dist}: server exited ${child.exitCode}`);
    if (performance.now() - started > 20_000) throw new Error(`${dist}: no answer in 20 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const ms = performance.now() - started;
  const cpu = cpuMs(child.pid);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const rss = rssMb(child.pid);
  child.kill('SIGTERM');
  await exited;
  return { ms, cpu, rss };
}

const dbFor = (i) => process.env.STARTUP_DATABASE_URL || `sqlite:${path.join(tmp, `startup-${i}.sqlite`)}`;
const results = dists.map(() => ({ ms: [], cpu: [], rss: [] }));
try {
  for (let i = 0; i < dists.length; i++) await startOnce(dists[i], dbFor(i));
  for (let r = 0; r < RUNS; r++) {
    for (let i = 0; i < dists.length; i++) {
      const { ms, cpu, rss } = await startOnce(dists[i], dbFor(i));
      results[i].ms.push(ms);
      results[i].cpu.push(cpu);
      results[i].rss.push(rss);
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const base = results[0];
process.stdout.write(
  `node ${process.version}, ${RUNS} runs per build, interleaved; ` +
    `${process.env.STARTUP_DATABASE_URL ? 'PostgreSQL' : 'SQLite'}\n`,
);
for (let i = 0; i < dists.length; i++) {
  const { ms, cpu, rss } = results[i];
  const ratio = (a, b) => (median(a) / median(b)).toFixed(2);
  const range = (xs, digits) => `${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}`;
  process.stdout.write(
    `${args[i]}\n  cold start median ${median(ms).toFixed(0)} ms (${range(ms, 0)}, x${ratio(ms, base.ms)})` +
      `  CPU to first answer median ${median(cpu).toFixed(0)} ms (${range(cpu, 0)}, x${ratio(cpu, base.cpu)})` +
      `  idle RSS median ${median(rss).toFixed(1)} MB (${range(rss, 1)}, x${ratio(rss, base.rss)})\n`,
  );
}
