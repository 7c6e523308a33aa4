// `node --import tsx scripts/verify-cost.ts`: what a token's conditions and the counting of
// its uses add to one cached verification (src/tokens/service.ts verify), in process: a
// token without conditions against one with 50 networks (the most allowed_cidrs holds; the
// matching one last) and a not_before in the past, both presented from 127.0.0.1 and not
// counted; then the plain token counted as a use (last_used_at and hourly usage, in
// memory). Alternating runs. Tokens made by the built command (dist/cli/main.js) in a
// throwaway SQLite file.
//
//   VERIFY_COST_CALLS=200000   verifications per run   VERIFY_COST_RUNS=3   runs of each
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { openStore } from '../src/storage/index.js';
import { knownAddress } from '../src/tokens/conditions.js';
import { createTokenDomain } from '../src/tokens/index.js';

const CALLS = Number(process.env.VERIFY_COST_CALLS ?? 200_000);
const RUNS = Number(process.env.VERIFY_COST_RUNS ?? 3);
const CLI = path.resolve(import.meta.dirname, '..', 'dist/cli/main.js');
const NETWORKS = [...Array.from({ length: 49 }, (_, i) => `10.${i}.0.0/16`), '127.0.0.0/8'];

const dir = mkdtempSync(path.join(tmpdir(), 'infracat-verify-'));
const env = { ...process.env, DATABASE_URL: `sqlite:${path.join(dir, 'verify.sqlite')}` };
const mint = (extra: string[]): string => {
  const args = ['tokens', 'create', '--name', 'verify', '--scopes', 'apps:read', ...extra, '--json'];
  return (JSON.parse(execFileSync(process.execPath, [CLI, ...args], { env }).toString()) as { token: string }).token;
};
try {
  execFileSync(process.execPath, [CLI, 'migrate'], { env, stdio: 'ignore' });
  const plain = mint([]);
  const notBefore = new Date(Date.now() - 3_600_000).toISOString();
  const limited = mint(['--allowed-cidrs', NETWORKS.join(','), '--not-before', notBefore]);
  const config = loadConfig(env);
  const store = await openStore(config);
  const { service } = createTokenDomain(config, store);
  const address = knownAddress('127.0.0.1');
  const timed = async (secret: string, recordUse = false): Promise<number> => {
    const started = performance.now();
    for (let i = 0; i < CALLS; i++) {
      const result = await service.verify(secret, { address, recordUse });
      if (!result.ok) throw new Error(`verification refused: ${result.reason}`);
    }
    return ((performance.now() - started) * 1000) / CALLS;
  };
  await timed(plain);
  await timed(limited);
  const [without, withConditions, counted] = [[], [], []] as [number[], number[], number[]];
  for (let run = 0; run < RUNS; run++) {
    without.push(await timed(plain));
    withConditions.push(await timed(limited));
    counted.push(await timed(plain, true));
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  const us = (v: number) => `${v.toFixed(2)} us`;
  process.stdout.write(
    `node ${process.version}; ${CALLS} cached verifications a run, ${RUNS} runs of each\n` +
      `without conditions: ${without.map(us).join(', ')}\n` +
      `50 networks and a not_before: ${withConditions.map(us).join(', ')}\n` +
      `counted as a use: ${counted.map(us).join(', ')}\n` +
      `the conditions add ${us(median(withConditions) - median(without))} a verification, ` +
      `counting ${us(median(counted) - median(without))} (medians)\n`,
  );
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
