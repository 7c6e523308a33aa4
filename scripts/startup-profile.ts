// Cold start and idle RSS of `infracat serve`, for comparing builds in one run:
//
//   node --import tsx scripts/startup-profile.ts [BUILD ...]     (default: dist)
//   node --import tsx scripts/startup-profile.ts f718008 HEAD   (two revisions, built first)
//
// A BUILD is a directory holding a build (cli/main.js), or a git revision: that
// revision's sources are built as it built them (tsc, and its bundle step if it has
// one) into .bench/builds/REV/. Runs alternate between builds (A B A B ...) so a noisy
// machine slows every build alike. Per run, the server pinned to one CPU as the bench
// pins it: spawn to the first 200 from /healthz (as scripts/bench.ts measures it) and the
// CPU time used until then (from the scheduler's per-thread nanoseconds, not the 10 ms
// clock ticks), then VmRSS after 1 s idle. Prints the median, min and max per build and
// each build's median as a ratio to the first.
//
//   STARTUP_RUNS=9            runs per build
//   STARTUP_DATABASE_URL=...  a PostgreSQL URL instead of a throwaway SQLite file per build
//   STARTUP_IDLE_MS=1000      wait before reading RSS
//
// A first unmeasured start per build seeds its database, like the bench's probe start.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildDir, startInfracat } from './lib/builds.js';
import { canPin, cpuMsPrecise, median, rssMb } from './lib/load.js';

const RUNS = Number(process.env.STARTUP_RUNS ?? 9);
const IDLE_MS = Number(process.env.STARTUP_IDLE_MS ?? 1000);

const PIN = canPin();

const args = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['dist'];
const dists = args.map(buildDir);
const tmp = mkdtempSync(path.join(tmpdir(), 'infracat-startup-'));

async function startOnce(dist: string, databaseUrl: string): Promise<{ ms: number; cpu: number; rss: number }> {
  const started = performance.now();
  const { child } = await startInfracat(path.join(dist, 'cli/main.js'), databaseUrl, { pin: PIN });
  const ms = performance.now() - started;
  const cpu = cpuMsPrecise(child.pid!);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const rss = rssMb(child.pid!);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return { ms, cpu, rss };
}

const dbFor = (i: number) => process.env.STARTUP_DATABASE_URL || `sqlite:${path.join(tmp, `startup-${i}.sqlite`)}`;
const results = dists.map(() => ({ ms: [] as number[], cpu: [] as number[], rss: [] as number[] }));
try {
  for (let i = 0; i < dists.length; i++) await startOnce(dists[i]!, dbFor(i));
  for (let r = 0; r < RUNS; r++) {
    for (let i = 0; i < dists.length; i++) {
      const { ms, cpu, rss } = await startOnce(dists[i]!, dbFor(i));
      results[i]!.ms.push(ms);
      results[i]!.cpu.push(cpu);
      results[i]!.rss.push(rss);
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const base = results[0]!;
process.stdout.write(
  `node ${process.version}, ${RUNS} runs per build, interleaved, ${PIN ? 'pinned to CPU 0' : 'NOT pinned'}; ` +
    `${process.env.STARTUP_DATABASE_URL ? 'PostgreSQL' : 'SQLite'}\n`,
);
const ratio = (a: number[], b: number[]) => (median(a) / median(b)).toFixed(2);
const range = (xs: number[], digits: number) => `${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}`;
results.forEach(({ ms, cpu, rss }, i) => {
  process.stdout.write(
    `${args[i]}\n  cold start median ${median(ms).toFixed(0)} ms (${range(ms, 0)}, x${ratio(ms, base.ms)})` +
      `  CPU to first answer median ${median(cpu).toFixed(0)} ms (${range(cpu, 0)}, x${ratio(cpu, base.cpu)})` +
      `  idle RSS median ${median(rss).toFixed(1)} MB (${range(rss, 1)}, x${ratio(rss, base.rss)})\n`,
  );
});
