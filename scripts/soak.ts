// `npm run soak`: mixed load against a real listening infracat for a while, then a
// report of errors, latency percentiles and heap after GC. Fails (exit 1) on any
// unexpected answer or when memory held by JS (heap + external, measured after forced
// GC) grew past the threshold between the end of warm-up and the end of the run.
//
//   SOAK_SECONDS=60           how long to drive load (after a warm-up of 10% of it)
//   SOAK_CONNECTIONS=16       concurrent requests in flight
//   SOAK_DATABASE_URL=...     storage (default: a fresh SQLite file; postgres://... works)
//   SOAK_HEAP_GROWTH_MB=16    the threshold
//   SOAK_JSON=path            also write the report as JSON
//
// The server runs in this thread (so its heap can be measured after gc()); the load
// (scripts/soak-load.mjs) runs in a worker thread with its own heap.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { OPERATOR_ACCOUNT_ID } from '../src/storage/migrations.js';
import { cliAuditContext } from '../src/audit/context.js';

interface LoadConfig {
  base: string;
  seconds: number;
  connections: number;
  admin: string;
  reader: string;
}

interface LoadReport {
  requests: number;
  byStatus: Record<string, number>;
  unexpected: { op: string; status: number; body: string }[];
  /** Percentiles computed in the worker (see soak-load.mjs). */
  latencyMs: { p50: number; p95: number; p99: number; max: number };
}

async function heapAfterGc(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc (npm run soak does)');
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  // The JS heap plus memory held outside it by JS objects (Buffers): both leak.
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

function drive(cfg: LoadConfig): Promise<LoadReport> {
  return new Promise((resolve, reject) => {
    // Plain JavaScript, so the worker needs no TypeScript loader.
    const worker = new Worker(new URL('./soak-load.mjs', import.meta.url), { workerData: cfg, execArgv: [] });
    worker.once('message', (r: LoadReport) => resolve(r));
    worker.once('error', reject);
  });
}

async function main(): Promise<number> {
  const seconds = Number(process.env.SOAK_SECONDS ?? 60);
  const connections = Number(process.env.SOAK_CONNECTIONS ?? 16);
  const thresholdMb = Number(process.env.SOAK_HEAP_GROWTH_MB ?? 16);
  const dir = mkdtempSync(path.join(tmpdir(), 'infracat-soak-'));
  const databaseUrl = process.env.SOAK_DATABASE_URL ?? `sqlite:${path.join(dir, 'soak.sqlite')}`;

  const { loadConfig } = await import('../src/config.js');
  const { startServer } = await import('../src/server.js');
  const { createLogger } = await import('../src/logging.js');
  // Production settings, except: no per-client limits (one client drives all the load)
  // and warnings-only logging (the access log of this much traffic is not the point).
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT: '0',
    RATE_LIMIT_ANONYMOUS: '0',
    BOOTSTRAP_ADMIN_TOKEN: 'false',
    TOKEN_MAX_LIVE: '1000000',
  });
  const server = await startServer(config, createLogger('warn'));
  const tokens = server.app.infracat.tokens.service;
  const admin = (
    await tokens.create(
      { name: 'soak admin', scopes: ['api-tokens:write', 'apps:read'] },
      null,
      OPERATOR_ACCOUNT_ID,
      cliAuditContext(),
    )
  ).secret;
  const reader = (
    await tokens.create({ name: 'soak reader', scopes: ['apps:read'] }, null, OPERATOR_ACCOUNT_ID, cliAuditContext())
  ).secret;
  const base = server.url;

  const warmup = Math.max(2, Math.round(seconds / 10));
  process.stdout.write(
    `soak: ${databaseUrl.split(':')[0]}, ${connections} connections, ${warmup} s warm-up + ${seconds} s\n`,
  );
  const warm = await drive({ base, seconds: warmup, connections, admin, reader });
  const heapBefore = await heapAfterGc();
  const report = await drive({ base, seconds, connections, admin, reader });
  await server.app.infracat.tokens.lastUsed.flush();
  const heapAfter = await heapAfterGc();
  await server.close();
  rmSync(dir, { recursive: true, force: true });

  const growthMb = (heapAfter - heapBefore) / 1024 / 1024;
  const errors = report.unexpected.length + warm.unexpected.length;
  const result = {
    seconds,
    connections,
    storage: databaseUrl.split(':')[0],
    requests: report.requests,
    requests_per_second: Math.round(report.requests / seconds),
    by_status: report.byStatus,
    unexpected: [...warm.unexpected, ...report.unexpected],
    latency_ms: report.latencyMs,
    heap_after_gc_mb: {
      after_warmup: heapBefore / 1024 / 1024,
      at_end: heapAfter / 1024 / 1024,
      growth: growthMb,
      threshold: thresholdMb,
    },
  };
  const f = (n: number) => n.toFixed(2);
  process.stdout.write(
    [
      `requests        ${result.requests} (${result.requests_per_second}/s)`,
      `by status       ${JSON.stringify(result.by_status)}`,
      `latency ms      p50 ${f(result.latency_ms.p50)}  p95 ${f(result.latency_ms.p95)}  ` +
        `p99 ${f(result.latency_ms.p99)}  max ${f(result.latency_ms.max)}`,
      `heap after GC   ${f(result.heap_after_gc_mb.after_warmup)} MB -> ${f(result.heap_after_gc_mb.at_end)} MB ` +
        `(growth ${f(growthMb)} MB, threshold ${thresholdMb} MB)`,
      `errors          ${errors}`,
      '',
    ].join('\n'),
  );
  if (process.env.SOAK_JSON) writeFileSync(process.env.SOAK_JSON, JSON.stringify(result, null, 2));
  for (const u of result.unexpected) process.stdout.write(`unexpected: ${JSON.stringify(u)}\n`);
  const ok = errors === 0 && growthMb <= thresholdMb && report.requests > 0;
  process.stdout.write(ok ? 'soak: PASS\n' : 'soak: FAIL\n');
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`soak: ${String((err as Error).stack ?? err)}\n`);
    process.exit(1);
  },
);
