// `npm run bench:jwt`: what signed access tokens cost (docs/signed-tokens.md), measured the
// fair way of the other benches (scripts/lib/load.ts): `infracat serve` as shipped (the
// bundled dist/cli/main.js, rate limits raised so nothing is refused) pinned to CPU 0, wrk
// to CPU 1, interleaved rounds (the order reversed every other round), ratios within each
// round, and the server's CPU time per request beside the rate.
//
// Two instances, each on a SQLite database of its own with one token (ACCESS_LOG=errors on
// both, so the access line does not blur the difference):
//   check       GET /api/v1/auth/check?scope=apps:read, AUTH_CHECK_JWT=false   (the baseline)
//   check_jwt   the same on an instance with AUTH_CHECK_JWT=true: X-Token-Jwt on every answer
//   introspect  POST /api/v1/api-tokens/introspect, form-encoded (a verification behind a
//               form POST, signing nothing: the baseline of the exchange)
//   exchange    POST /api/v1/oauth/token, form-encoded: verification, then an ES256 signature
// Reported: each scenario's rate and CPU per request, check_jwt against check and exchange
// against introspect within each round (median, min-max), and infracat_jwt_signed_total
// read around the runs: over the check_jwt runs it must not move (the token's signed token
// is made once and handed out again), over the exchange runs it moves by one per request.
// Also the signature alone, in this process (jose, the server's code), per call.
//
//   JWT_BENCH_ROUNDS=5        interleaved rounds
//   JWT_BENCH_SECONDS=4       seconds per run
//   JWT_BENCH_CONNECTIONS=32  wrk's connections
//   BENCH_JSON=file           also write the figures as JSON
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { AccessTokenSigner } from '../src/oauth/signer.js';
import { thumbprint } from '../src/oauth/keys.js';
import { runCli, startInfracat, stopServer } from './lib/builds.js';
import { canPin, drive, ensureWrk, median, type Run } from './lib/load.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');
const ROUNDS = Number(process.env.JWT_BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.JWT_BENCH_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.JWT_BENCH_CONNECTIONS ?? 32);

type Measured = Run & { cpu_us_per_request: number };
interface Scenario {
  key: 'check' | 'check_jwt' | 'introspect' | 'exchange';
  url: string;
  pid: number;
  method?: string;
  headers: Record<string, string>;
  body?: string;
}

const load = { wrk: ensureWrk(), pin: canPin() };
const dir = mkdtempSync(path.join(tmpdir(), 'infracat-bench-jwt-'));
const children: Awaited<ReturnType<typeof startInfracat>>['child'][] = [];

/** infracat_jwt_signed_total{via} of the instance at `base`. */
async function signed(base: string, via: 'exchange' | 'forward_auth'): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`infracat_jwt_signed_total{via="${via}"} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** Microseconds per ES256 signature of the server's signer, in this process (after a warm-up). */
async function signatureMicros(): Promise<number> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicJwk = privateKey.export({ format: 'jwk' });
  const jwk = { kty: 'EC' as const, crv: 'P-256' as const, x: publicJwk.x!, y: publicJwk.y! };
  const signer = new AccessTokenSigner(
    { kid: thumbprint(jwk), privateKey, publicJwk: jwk, file: '' },
    {
      issuer: 'http://localhost:8080',
      ttlS: 300,
    },
  );
  const input = { tokenId: 'tok_x', accountId: 'acc_x', scopes: ['apps:read'], notAfter: null };
  for (let i = 0; i < 500; i++) await signer.sign(input, 'exchange');
  const n = 5000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await signer.sign(input, 'exchange');
  return ((performance.now() - t0) * 1000) / n;
}

async function main(): Promise<void> {
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
  const method =
    `${load.pin ? 'server on CPU 0, load on CPU 1' : 'NOT pinned (no taskset or one CPU)'}; ` +
    `${load.wrk ? 'wrk -t1' : 'autocannon (wrk unavailable)'} -c${CONNECTIONS}, ${ROUNDS} rounds of ${SECONDS} s`;
  process.stdout.write(`bench:jwt: ${machine}\n           ${method}\n`);

  // Each instance alone on its database, as SQLite is deployed (another process's writes
  // would make it drop its verification cache at each), with a token of its own.
  const database = (name: string) => {
    const url = `sqlite:${path.join(dir, `${name}.sqlite`)}`;
    runCli(CLI, url, ['migrate']);
    const scopes = 'apps:read,api-tokens:read';
    const created = runCli(CLI, url, ['tokens', 'create', '--name', 'bench', '--scopes', scopes, '--json']);
    return { url, token: (JSON.parse(created) as { token: string }).token };
  };
  const plainDb = database('plain');
  const jwtDb = database('jwt');
  const plain = await startInfracat(CLI, plainDb.url, { pin: load.pin, env: { ACCESS_LOG: 'errors' } });
  children.push(plain.child);
  const withJwt = await startInfracat(CLI, jwtDb.url, {
    pin: load.pin,
    // A lifetime the whole bench fits in: the token's signed token is made at the warm-up and
    // would be renewed only past four fifths of it.
    env: { ACCESS_LOG: 'errors', AUTH_CHECK_JWT: 'true', JWT_TTL_S: '3600' },
  });
  children.push(withJwt.child);

  const token = jwtDb.token;
  const auth = { authorization: `Bearer ${token}` };
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const check = '/api/v1/auth/check?scope=apps:read';
  const scenarios: Scenario[] = [
    {
      key: 'check',
      url: `${plain.url}${check}`,
      pid: plain.child.pid!,
      headers: { authorization: `Bearer ${plainDb.token}` },
    },
    { key: 'check_jwt', url: `${withJwt.url}${check}`, pid: withJwt.child.pid!, headers: auth },
    {
      key: 'introspect',
      url: `${withJwt.url}/api/v1/api-tokens/introspect`,
      pid: withJwt.child.pid!,
      method: 'POST',
      headers: { ...auth, ...form },
      body: new URLSearchParams({ token }).toString(),
    },
    {
      key: 'exchange',
      url: `${withJwt.url}/api/v1/oauth/token`,
      pid: withJwt.child.pid!,
      method: 'POST',
      headers: form,
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: token,
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        scope: 'apps:read',
      }).toString(),
    },
  ];
  const run = (sc: Scenario, seconds: number) =>
    drive(load, sc.pid, sc.url, {
      headers: sc.headers,
      ...(sc.method !== undefined ? { method: sc.method } : {}),
      ...(sc.body !== undefined ? { body: sc.body } : {}),
      seconds,
      connections: CONNECTIONS,
      dir,
    });
  // Warm-up: every route compiled, the token cached, its signed token made.
  for (const sc of scenarios) {
    const res = await fetch(sc.url, { method: sc.method ?? 'GET', headers: sc.headers, body: sc.body ?? null });
    if (res.status !== 200) throw new Error(`${sc.key}: ${res.status} ${await res.text()} before the bench`);
    await run(sc, 1);
  }

  const runs = new Map<Scenario['key'], Measured[]>();
  const ratios = { check_jwt_rate: [] as number[], check_jwt_cpu: [] as number[], exchange_cpu: [] as number[] };
  const ratiosExchangeRate: number[] = [];
  let checkSigned = 0;
  let checkRequests = 0;
  let exchangeSigned = 0;
  let exchangeRequests = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    process.stdout.write(`  round ${round}/${ROUNDS}\n`);
    const order = round % 2 === 1 ? scenarios : [...scenarios].reverse();
    const thisRound = new Map<Scenario['key'], Measured>();
    for (const sc of order) {
      const before = await signed(withJwt.url, sc.key === 'exchange' ? 'exchange' : 'forward_auth');
      const r = await run(sc, SECONDS);
      const after = await signed(withJwt.url, sc.key === 'exchange' ? 'exchange' : 'forward_auth');
      if (sc.key === 'check_jwt') {
        checkSigned += after - before;
        checkRequests += r.requests;
      } else if (sc.key === 'exchange') {
        exchangeSigned += after - before;
        exchangeRequests += r.requests;
      }
      thisRound.set(sc.key, r);
      runs.set(sc.key, [...(runs.get(sc.key) ?? []), r]);
    }
    const get = (k: Scenario['key']) => thisRound.get(k)!;
    ratios.check_jwt_rate.push(get('check_jwt').rps / get('check').rps);
    ratios.check_jwt_cpu.push(get('check').cpu_us_per_request / get('check_jwt').cpu_us_per_request);
    ratios.exchange_cpu.push(get('introspect').cpu_us_per_request / get('exchange').cpu_us_per_request);
    ratiosExchangeRate.push(get('exchange').rps / get('introspect').rps);
  }
  const signatureUs = await signatureMicros();

  const r2 = (n: number) => Math.round(n * 100) / 100;
  const spread = (v: number[]) => `${Math.min(...v).toFixed(2)}-${Math.max(...v).toFixed(2)}`;
  const rows = [['scenario', 'requests/s (median)', 'CPU us/request', 'p99 ms', 'non-2xx']];
  const summary: Record<string, unknown> = {};
  for (const sc of scenarios) {
    const rs = runs.get(sc.key)!;
    const bad = rs.reduce((n, r) => n + r.non2xx + r.errors, 0);
    const row = {
      rps: Math.round(median(rs.map((r) => r.rps))),
      cpu_us_per_request: r2(median(rs.map((r) => r.cpu_us_per_request))),
      p99_ms: median(rs.map((r) => r.p99)),
      non2xx_or_errors: bad,
    };
    summary[sc.key] = row;
    rows.push([sc.key, String(row.rps), row.cpu_us_per_request.toFixed(1), row.p99_ms.toFixed(2), String(bad)]);
  }
  const table = (t: string[][]) => {
    const w = t[0]!.map((_, i) => Math.max(...t.map((r) => r[i]!.length)));
    return t.map((r) => r.map((cell, i) => cell.padEnd(w[i]!)).join(' | ')).join('\n');
  };
  const cpu = (k: Scenario['key']) => (summary[k] as { cpu_us_per_request: number }).cpu_us_per_request;
  summary.check_jwt_vs_check = {
    rate: { median: r2(median(ratios.check_jwt_rate)), rounds: ratios.check_jwt_rate.map(r2) },
    by_cpu_per_request: { median: r2(median(ratios.check_jwt_cpu)), rounds: ratios.check_jwt_cpu.map(r2) },
    signed_per_1000_checks: r2((checkSigned / Math.max(1, checkRequests)) * 1000),
    signed_during_runs: checkSigned,
    checks_during_runs: checkRequests,
  };
  summary.exchange_vs_introspect = {
    rate: { median: r2(median(ratiosExchangeRate)), rounds: ratiosExchangeRate.map(r2) },
    by_cpu_per_request: { median: r2(median(ratios.exchange_cpu)), rounds: ratios.exchange_cpu.map(r2) },
    extra_cpu_us_per_request: r2(cpu('exchange') - cpu('introspect')),
    signed_per_exchange: r2(exchangeSigned / Math.max(1, exchangeRequests)),
  };
  summary.signature_us_in_process = r2(signatureUs);
  process.stdout.write(`\n${table(rows)}\n\n`);
  process.stdout.write(
    `check with AUTH_CHECK_JWT=true vs false: rate ${median(ratios.check_jwt_rate).toFixed(2)}x ` +
      `(${spread(ratios.check_jwt_rate)}), by CPU/request ${median(ratios.check_jwt_cpu).toFixed(2)}x ` +
      `(${spread(ratios.check_jwt_cpu)}); signed during ${checkRequests} checks: ${checkSigned}\n` +
      `exchange vs introspection: rate ${median(ratiosExchangeRate).toFixed(2)}x (${spread(ratiosExchangeRate)}), ` +
      `by CPU/request ${median(ratios.exchange_cpu).toFixed(2)}x (${spread(ratios.exchange_cpu)}), ` +
      `+${(cpu('exchange') - cpu('introspect')).toFixed(0)} us of CPU per request; ` +
      `signed per exchange: ${(exchangeSigned / Math.max(1, exchangeRequests)).toFixed(3)}\n` +
      `one ES256 signature (jose, in this process): ${signatureUs.toFixed(0)} us\n`,
  );
  const out = process.env.BENCH_JSON;
  if (out !== undefined && out !== '') {
    writeFileSync(
      out,
      JSON.stringify({ machine, method, rounds: ROUNDS, seconds: SECONDS, results: summary }, null, 2),
    );
    process.stdout.write(`wrote ${out}\n`);
  }
  const failures = scenarios.filter((sc) => (summary[sc.key] as { non2xx_or_errors: number }).non2xx_or_errors > 0);
  if (failures.length > 0)
    throw new Error(`non-2xx answers or socket errors in: ${failures.map((s) => s.key).join(', ')}`);
  if (checkSigned !== 0)
    throw new Error(`${checkSigned} signatures during the checks: the signed token was not reused`);
}

try {
  await main();
} finally {
  await Promise.all(children.map((c) => stopServer(c)));
  rmSync(dir, { recursive: true, force: true });
}
