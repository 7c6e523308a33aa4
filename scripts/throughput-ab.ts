// Two or more builds of `infracat serve` compared the fair way (scripts/lib/load.ts: server
// pinned to CPU 0, wrk to CPU 1), for saying what a change bought (BENCHMARKS.md):
//
//   node --import tsx scripts/throughput-ab.ts BUILD BUILD ...   e.g. d2f2352 HEAD, or dist .bench/x/dist
//
// A BUILD is a build directory or a git revision (built as it was, see lib/builds.ts),
// optionally followed by Node options after a `+`, comma-separated, e.g.
// `HEAD+--max-semi-space-size=4`: the same build started with other V8 settings.
// All builds run at once on their own SQLite files (idle when not loaded); each round
// drives every scenario against every build in turn (order reversed every other round),
// and each build is compared with the first build in the same round: its rate ratio and
// its server CPU time per request as a ratio (first / this: above 1 is cheaper). Last, for
// each build, what the token GET costs over the anonymous GET in the same process (a BUILD
// may be given more than once: one process each).
//
// AB_CONDITIONS=1 adds a token with conditions (50 networks, a not_before in the past), and
// what they cost over the plain token's GET in the same process.
//
//   AB_ROUNDS=9  AB_SECONDS=4  AB_CONNECTIONS=32  AB_ENV='{"ACCESS_LOG":"errors"}'  AB_CONDITIONS=1
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildDir, startInfracat } from './lib/builds.js';
import { canPin, drive, ensureWrk, median } from './lib/load.js';

const ROUNDS = Number(process.env.AB_ROUNDS ?? 9);
const SECONDS = Number(process.env.AB_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.AB_CONNECTIONS ?? 32);
const ENV = JSON.parse(process.env.AB_ENV ?? '{}') as Record<string, string>;
const CONDITIONS = process.env.AB_CONDITIONS === '1';
/** 49 networks the load never comes from, then loopback's: the last one matches, after the rest were tried. */
const NETWORKS = [...Array.from({ length: 49 }, (_, i) => `10.${i}.0.0/16`), '127.0.0.0/8'];
const args = process.argv.slice(2);
if (args.length < 2) throw new Error('usage: node --import tsx scripts/throughput-ab.ts BUILD BUILD [...]');
const load = { wrk: ensureWrk(), pin: canPin() };
// BUILD[+OPTION,OPTION...]: the build, and the Node options it is started with.
const targets = args.map((arg) => {
  const [build, options = ''] = arg.split('+', 2) as [string, string?];
  return { dist: buildDir(build), nodeArgs: options.split(',').filter((o) => o !== '') };
});
const tmp = mkdtempSync(path.join(tmpdir(), 'infracat-ab-'));

interface Build {
  pid: number;
  url: string;
  auth: Record<string, string>;
  conditioned: Record<string, string>;
  stop: () => void;
}

async function start({ dist, nodeArgs }: { dist: string; nodeArgs: string[] }, i: number): Promise<Build> {
  const databaseUrl = `sqlite:${path.join(tmp, `ab-${i}.sqlite`)}`;
  const cli = path.join(dist, 'cli/main.js');
  const env = { ...process.env, DATABASE_URL: databaseUrl };
  execFileSync(process.execPath, [cli, 'migrate'], { env, stdio: 'ignore' });
  const created = execFileSync(
    process.execPath,
    [cli, 'tokens', 'create', '--name', 'ab', '--scopes', 'apps:read,plans:read', '--json'],
    { env },
  );
  const { token } = JSON.parse(created.toString()) as { token: string };
  let conditioned = token;
  if (CONDITIONS) {
    const args = ['--allowed-cidrs', NETWORKS.join(','), '--not-before', new Date(Date.now() - 3600_000).toISOString()];
    const made = execFileSync(
      process.execPath,
      [cli, 'tokens', 'create', '--name', 'ab-conditions', '--scopes', 'apps:read,plans:read', ...args, '--json'],
      { env },
    );
    conditioned = (JSON.parse(made.toString()) as { token: string }).token;
  }
  const { child, url } = await startInfracat(cli, databaseUrl, { env: ENV, pin: load.pin, nodeArgs });
  const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
  return {
    pid: child.pid!,
    url,
    auth: bearer(token),
    conditioned: bearer(conditioned),
    stop: () => child.kill('SIGTERM'),
  };
}

const scenarios: [string, (b: Build) => { path: string; headers: Record<string, string> }][] = [
  ['catalog GET, anonymous', () => ({ path: '/api/v1/plans', headers: {} })],
  ['catalog GET, valid token', (b) => ({ path: '/api/v1/plans', headers: b.auth })],
  ['auth check, valid token', (b) => ({ path: '/api/v1/auth/check?scope=apps:read', headers: b.auth })],
];
if (CONDITIONS)
  scenarios.push(['catalog GET, token with conditions', (b) => ({ path: '/api/v1/plans', headers: b.conditioned })]);

const builds: Build[] = [];
try {
  for (let i = 0; i < targets.length; i++) builds.push(await start(targets[i]!, i));
  const runOnce = async (b: Build, k: number, seconds: number) => {
    const { path: p, headers } = scenarios[k]![1](b);
    const run = await drive(load, b.pid, `${b.url}${p}`, { headers, seconds, connections: CONNECTIONS, dir: tmp });
    if (run.non2xx + run.errors > 0)
      throw new Error(`${scenarios[k]![0]}: ${run.non2xx} non-2xx, ${run.errors} errors`);
    return run;
  };
  for (const b of builds) for (let k = 0; k < scenarios.length; k++) await runOnce(b, k, 1);
  const rate = scenarios.map(() => builds.map(() => [] as number[]));
  const cpu = scenarios.map(() => builds.map(() => [] as number[]));
  const rateRatio = scenarios.map(() => builds.map(() => [] as number[]));
  const cpuRatio = scenarios.map(() => builds.map(() => [] as number[]));
  for (let round = 1; round <= ROUNDS; round++) {
    process.stdout.write(`round ${round}/${ROUNDS}\n`);
    for (let k = 0; k < scenarios.length; k++) {
      const order = builds.map((_, i) => i);
      if (round % 2 === 0) order.reverse();
      const runs: { rps: number; cpu_us_per_request: number }[] = [];
      for (const i of order) runs[i] = await runOnce(builds[i]!, k, SECONDS);
      runs.forEach((r, i) => {
        rate[k]![i]!.push(r.rps);
        cpu[k]![i]!.push(r.cpu_us_per_request);
        rateRatio[k]![i]!.push(r.rps / runs[0]!.rps);
        cpuRatio[k]![i]!.push(runs[0]!.cpu_us_per_request / r.cpu_us_per_request);
      });
    }
  }
  const spread = (v: number[]) => `${Math.min(...v).toFixed(2)}-${Math.max(...v).toFixed(2)}`;
  process.stdout.write(
    `\nnode ${process.version}; ${load.pin ? 'pinned' : 'NOT pinned'}, ${load.wrk ? 'wrk' : 'autocannon'}; ` +
      `${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections; ratios to ${args[0]} within each round\n`,
  );
  scenarios.forEach(([name], k) => {
    process.stdout.write(`${name}\n`);
    args.forEach((arg, i) => {
      process.stdout.write(
        `  ${arg.padEnd(12)} ${String(Math.round(median(rate[k]![i]!))).padStart(6)} rps` +
          ` x${median(rateRatio[k]![i]!).toFixed(3)}` +
          ` (rounds ${spread(rateRatio[k]![i]!)})   CPU ${median(cpu[k]![i]!).toFixed(1)} us/request,` +
          ` cheaper x${median(cpuRatio[k]![i]!).toFixed(3)} (rounds ${spread(cpuRatio[k]![i]!)})\n`,
      );
    });
  });
  // A process runs in one of two states that move its rates (BENCHMARKS.md), so what a
  // scenario adds over another is read inside each process: its CPU over the other's.
  const over = (title: string, k: number, base: number) => {
    process.stdout.write(`${title}, same process (median of rounds)\n`);
    args.forEach((arg, i) => {
      const gaps = cpu[k]![i]!.map((us, round) => us - cpu[base]![i]![round]!);
      const ratios = cpu[k]![i]!.map((us, round) => cpu[base]![i]![round]! / us);
      const gap = `+${median(gaps).toFixed(1)} us/request`;
      process.stdout.write(`  ${arg.padEnd(12)} ${gap}, x${median(ratios).toFixed(2)} (rounds ${spread(ratios)})\n`);
    });
  };
  over('token GET over the anonymous GET', 1, 0);
  if (CONDITIONS) over('token with conditions over the plain token', 3, 1);
} finally {
  for (const b of builds) b.stop();
  rmSync(tmp, { recursive: true, force: true });
}
