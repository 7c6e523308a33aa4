// Request throughput of two or more builds of `infracat serve`, for saying what a change
// bought (BENCHMARKS.md, "What each fix bought"):
//
//   node scripts/throughput-ab.mjs BUILD BUILD ...     e.g. 4953195 HEAD, or dist .bench/x/dist
//
// A BUILD is a build directory or a git revision (built as it was, see lib/builds.mjs).
// All builds run at once on their own SQLite files (idle when not loaded); each round
// drives every scenario against every build in turn, so the machine's drift hits them
// alike, and each build's rate is compared with the first build's in the same round.
// Prints per scenario the median ratio to the first build and the rounds' spread.
//
//   AB_ROUNDS=5  AB_SECONDS=3  AB_CONNECTIONS=32
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { buildDir, median, startInfracat } from './lib/builds.mjs';

const ROUNDS = Number(process.env.AB_ROUNDS ?? 5);
const SECONDS = Number(process.env.AB_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.AB_CONNECTIONS ?? 32);
const args = process.argv.slice(2);
if (args.length < 2) throw new Error('usage: node scripts/throughput-ab.mjs BUILD BUILD [...]');
const dists = args.map(buildDir);
const tmp = mkdtempSync(path.join(tmpdir(), 'infracat-ab-'));

async function start(dist, i) {
  const databaseUrl = `sqlite:${path.join(tmp, `ab-${i}.sqlite`)}`;
  const cli = path.join(dist, 'cli/main.js');
  execFileSync(process.execPath, [cli, 'migrate'], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdio: 'ignore',
  });
  const token = JSON.parse(
    execFileSync(
      process.execPath,
      [cli, 'tokens', 'create', '--name', 'ab', '--scopes', 'apps:read,plans:read', '--json'],
      { env: { ...process.env, DATABASE_URL: databaseUrl } },
    ).toString(),
  ).token;
  const { child, url } = await startInfracat(cli, databaseUrl);
  return { child, url, auth: { authorization: `Bearer ${token}` } };
}

const servers = [];
try {
  for (let i = 0; i < dists.length; i++) servers.push(await start(dists[i], i));
  const scenarios = [
    ['catalog GET, anonymous', (s) => ({ url: `${s.url}/api/v1/plans` })],
    ['catalog GET, valid token', (s) => ({ url: `${s.url}/api/v1/plans`, headers: s.auth })],
    ['auth check, valid token', (s) => ({ url: `${s.url}/api/v1/auth/check?scope=apps:read`, headers: s.auth })],
  ];
  const ratios = scenarios.map(() => dists.map(() => []));
  const rates = scenarios.map(() => dists.map(() => []));
  for (const s of servers) await autocannon({ url: `${s.url}/api/v1/plans`, connections: CONNECTIONS, duration: 1 });
  for (let round = 1; round <= ROUNDS; round++) {
    process.stdout.write(`round ${round}/${ROUNDS}\n`);
    for (let k = 0; k < scenarios.length; k++) {
      const rps = [];
      // Every other round in reverse order: going first or last must not favour a build.
      const order = servers.map((_, i) => i);
      if (round % 2 === 0) order.reverse();
      for (const i of order) {
        const r = await autocannon({ ...scenarios[k][1](servers[i]), connections: CONNECTIONS, duration: SECONDS });
        if (r.non2xx + r.errors > 0) throw new Error(`${scenarios[k][0]}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        rps[i] = r.requests.average;
      }
      rps.forEach((v, i) => {
        rates[k][i].push(v);
        ratios[k][i].push(v / rps[0]);
      });
    }
  }
  process.stdout.write(
    `\nnode ${process.version}; ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections; ` +
      `ratio to ${args[0]} within each round\n`,
  );
  for (let k = 0; k < scenarios.length; k++) {
    process.stdout.write(`${scenarios[k][0]}\n`);
    dists.forEach((_, i) => {
      const r = ratios[k][i];
      process.stdout.write(
        `  ${args[i].padEnd(12)} median ${Math.round(median(rates[k][i]))} rps  x${median(r).toFixed(3)} ` +
          `(rounds ${Math.min(...r).toFixed(2)}-${Math.max(...r).toFixed(2)})\n`,
      );
    });
  }
} finally {
  for (const s of servers) s.child.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
