// `npm run bench:propagation`: how long a revocation takes to reach the other instances.
// Three `infracat serve` processes (the bundled dist/cli/main.js) on one PostgreSQL; each
// of PROPAGATION_TOKENS tokens is verified (and so cached) on B and C, deleted through A,
// then polled on B and C until both refuse it. Reported: p50/p99/max
// of "A acknowledged the delete" to "B and C both refuse it".
//
// Every instance trusts a cached verification for 10 minutes, so only the change feed can
// explain a refusal within seconds. The baseline, measured in the same run: the same fleet
// with the feed unreachable (DATABASE_NOTIFY_URL pointing at a closed port) and the
// shipped TOKEN_CACHE_TTL_MS (5 s), i.e. how revocation propagates without the feed.
//
//   PROPAGATION_TOKENS=200   revocations with the feed
//   PROPAGATION_BASELINE=20  revocations without it (each waits up to the TTL; run at once)
//   BENCH_JSON=file          also write the figures as JSON
import { execFileSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, startInfracat } from './lib/builds.js';
import { startEmbeddedPostgres } from '../test/helpers/embedded-pg.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');
const TOKENS = Number(process.env.PROPAGATION_TOKENS ?? 200);
const BASELINE = Number(process.env.PROPAGATION_BASELINE ?? 20);

interface Instance {
  child: ChildProcess;
  url: string;
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

function summary(ms: number[]): { n: number; p50: number; p99: number; max: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    n: ms.length,
    p50: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1)!),
  };
}

async function call(url: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(url, init);
  await res.arrayBuffer();
  return res;
}

/** Creates `n` tokens through `a`, each verified once on every other instance (so cached there). */
async function mint(
  a: Instance,
  others: Instance[],
  admin: string,
  n: number,
): Promise<{ id: string; secret: string }[]> {
  const tokens = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${a.url}/api/v1/api-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `p${i}`, scopes: ['api-tokens:read'] }),
    });
    if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
    const { id, token } = (await res.json()) as { id: string; token: string };
    for (const other of others) {
      const check = await call(`${other.url}/api/v1/api-tokens/current`, {
        headers: { authorization: `Bearer ${token}` },
      });
      if (check.status !== 200) throw new Error(`warm-up: ${check.status}`);
    }
    tokens.push({ id, secret: token });
  }
  return tokens;
}

/** Deletes `token` through `a`; resolves with ms from the acknowledgement until every other instance refuses it. */
async function revoke(
  a: Instance,
  others: Instance[],
  admin: string,
  token: { id: string; secret: string },
): Promise<number> {
  const del = await call(`${a.url}/api/v1/api-tokens/${token.id}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${admin}` },
  });
  if (del.status !== 204) throw new Error(`delete: ${del.status}`);
  const acked = performance.now();
  const refused = await Promise.all(
    others.map(async (other) => {
      for (;;) {
        const res = await call(`${other.url}/api/v1/api-tokens/current`, {
          headers: { authorization: `Bearer ${token.secret}` },
        });
        if (res.status === 401) return performance.now();
        if (res.status !== 200) throw new Error(`poll: ${res.status}`);
        if (performance.now() - acked > 30_000) throw new Error('not refused within 30 s');
      }
    }),
  );
  return Math.max(...refused) - acked;
}

async function fleet(url: string, env: Record<string, string>): Promise<Instance[]> {
  const instances: Instance[] = [];
  for (let i = 0; i < 3; i++)
    instances.push(await startInfracat(CLI, url, { env: { AUTH_FAILURE_LIMIT: '1000000', ...env } }));
  return instances;
}

const pgServer = await startEmbeddedPostgres();
const instances: Instance[] = [];
try {
  // Schema and an admin token, through the CLI (as an operator would).
  execFileSync(process.execPath, [CLI, 'migrate'], { env: { ...process.env, DATABASE_URL: pgServer.url } });
  const adminOut = execFileSync(
    process.execPath,
    [CLI, 'tokens', 'create', '--name', 'bench', '--all-scopes', '--json'],
    {
      env: { ...process.env, DATABASE_URL: pgServer.url },
      encoding: 'utf8',
    },
  );
  const admin = (JSON.parse(adminOut) as { token: string }).token;

  // With the feed: revocations one after another.
  const withFeed = await fleet(pgServer.url, { TOKEN_CACHE_TTL_MS: '600000' });
  instances.push(...withFeed);
  const [a, ...others] = withFeed as [Instance, ...Instance[]];
  const tokens = await mint(a, others, admin, TOKENS);
  const feed: number[] = [];
  for (const token of tokens) feed.push(await revoke(a, others, admin, token));
  await Promise.all(withFeed.map((x) => stop(x.child)));

  // Baseline: the feed unreachable, the shipped TTL; revocations at once (each waits up to the TTL).
  const nowhere = `postgres://nobody@127.0.0.1:${await freePort()}/nowhere`;
  const without = await fleet(pgServer.url, { DATABASE_NOTIFY_URL: nowhere });
  instances.push(...without);
  const [a0, ...others0] = without as [Instance, ...Instance[]];
  const baseTokens = await mint(a0, others0, admin, BASELINE);
  const base = await Promise.all(baseTokens.map((token) => revoke(a0, others0, admin, token)));

  const result = {
    with_feed: summary(feed),
    baseline_ttl_only: summary(base),
  };
  const line = (r: ReturnType<typeof summary>) => `n=${r.n} p50=${r.p50} p99=${r.p99} max=${r.max}`;
  const ratio = (k: 'p50' | 'p99' | 'max') =>
    Math.round((result.with_feed[k] / result.baseline_ttl_only[k]) * 1000) / 1000;
  process.stdout.write(
    [
      `revocation reaching 2 other instances (ms from A's 204 until B and C both answer 401):`,
      `  with LISTEN/NOTIFY:        ${line(result.with_feed)}`,
      `  baseline (TTL 5 s only):   ${line(result.baseline_ttl_only)}`,
      `  ratio feed / baseline:     p50=${ratio('p50')} p99=${ratio('p99')} max=${ratio('max')}`,
      '',
    ].join('\n'),
  );
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(result, null, 2));
  if (result.with_feed.p99 >= 1000) {
    process.stderr.write('p99 is not under 1 s\n');
    process.exitCode = 1;
  }
} finally {
  await Promise.all(instances.map((x) => stop(x.child)));
  await pgServer.destroy();
}
