// Where infracat's catalog GET throughput goes, step by step from the bare node:http
// ceiling (BENCHMARKS.md, "What still stands in the way"). Each rung answers the same
// GET /api/v1/plans bytes; all run at once and are driven in turn, interleaved over
// rounds; rates are reported as ratios to node:http within a round.
//
//   node scripts/ceiling-ladder.mjs          (after npm run build)
//   LADDER_ROUNDS=5 LADDER_SECONDS=3 LADDER_CONNECTIONS=32
//
// Rungs: node:http; node:http sending infracat's response headers; node:http + one pino
// access-log line per request; Fastify with no logger; Fastify + one pino access line
// per request (as infracat logs); infracat as
// shipped (dist/cli/main.js serve), and with ACCESS_LOG=errors (no line for a 2xx/3xx).
/* global fetch, Buffer */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { freePort, median, ROOT, startInfracat, waitUntilUp } from './lib/builds.mjs';

const ROUNDS = Number(process.env.LADDER_ROUNDS ?? 5);
const SECONDS = Number(process.env.LADDER_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.LADDER_CONNECTIONS ?? 32);
const tmp = mkdtempSync(path.join(tmpdir(), 'infracat-ladder-'));

// Each rung is a small program given BODY (base64) and PORT; the logging ones write
// their lines to stdout, which is thrown away, as the bench does for infracat.
const PINO =
  `const pino = require(${JSON.stringify(path.join(ROOT, 'node_modules/pino'))});\n` +
  "  const log = pino({ base: { service: 'x' }, timestamp: pino.stdTimeFunctions.isoTime, " +
  'formatters: { level: (l) => ({ level: l }) } });';
const RUNGS = {
  'node:http': `
    const body = Buffer.from(process.env.BODY, 'base64');
    require('node:http').createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    }).listen(process.env.PORT, '127.0.0.1');`,
  // The same bytes with the headers infracat sends (security headers, ETag, cache and
  // rate-limit fields, request id): the load generator parses every one of them too.
  'node:http, infracat headers':
    `
    const body = Buffer.from(process.env.BODY, 'base64');
    const headers = JSON.parse(process.env.HEADERS);
    require('node:http').createServer((req, res) => {
      res.writeHead(200, { ...headers, 'x-request-id': require('node:crypto').randomUUID(), ` +
    `'content-length': body.length });
      res.end(body);
    }).listen(process.env.PORT, '127.0.0.1');`,
  'node:http + pino line':
    `${PINO}
    const body = Buffer.from(process.env.BODY, 'base64');
    require('node:http').createServer((req, res) => {
      const t0 = performance.now();
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
      log.info({ req: { method: req.method, url: req.url }, res: { status_code: 200 }, ` +
    `response_time_ms: performance.now() - t0 }, 'request completed');
    }).listen(process.env.PORT, '127.0.0.1');`,
  'Fastify, no logger': `
    const body = Buffer.from(process.env.BODY, 'base64');
    const app = require(${JSON.stringify(path.join(ROOT, 'node_modules/fastify'))})();
    app.get('/api/v1/plans', (req, reply) => { reply.type('application/json; charset=utf-8').send(body); });
    app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });`,
  'Fastify + one pino line':
    `${PINO}
    const body = Buffer.from(process.env.BODY, 'base64');
    const app = require(${JSON.stringify(path.join(ROOT, 'node_modules/fastify'))})(` +
    `{ loggerInstance: log, disableRequestLogging: true });
    app.addHook('onResponse', async (req, reply) => {
      req.log.info({ req: { method: req.method, url: req.url }, res: { status_code: reply.statusCode }, ` +
    `response_time_ms: reply.elapsedTime }, 'request completed');
    });
    app.get('/api/v1/plans', (req, reply) => { reply.type('application/json; charset=utf-8').send(body); });
    app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });`,
};

const servers = [];
try {
  const cli = path.join(ROOT, 'dist/cli/main.js');
  const databaseUrl = `sqlite:${path.join(tmp, 'ladder.sqlite')}`;
  const infracat = await startInfracat(cli, databaseUrl);
  const quiet = await startInfracat(cli, databaseUrl, { ACCESS_LOG: 'errors' });
  const infracatUrl = `${infracat.url}/api/v1/plans`;
  const probe = await fetch(infracatUrl);
  const body = Buffer.from(await probe.arrayBuffer()).toString('base64');
  const skip = new Set(['date', 'connection', 'keep-alive', 'content-length', 'x-request-id']);
  const headers = JSON.stringify(Object.fromEntries([...probe.headers].filter(([k]) => !skip.has(k))));
  for (const [name, code] of Object.entries(RUNGS)) {
    const port = await freePort();
    const child = spawn(process.execPath, ['-e', code], {
      env: { ...process.env, BODY: body, HEADERS: headers, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const url = `http://127.0.0.1:${port}/api/v1/plans`;
    await waitUntilUp(url, child);
    servers.push({ name, child, url });
  }
  servers.push({ name: 'infracat as shipped', child: infracat.child, url: infracatUrl });
  servers.push({ name: 'infracat, ACCESS_LOG=errors', child: quiet.child, url: `${quiet.url}/api/v1/plans` });

  const rates = servers.map(() => []);
  const ratios = servers.map(() => []);
  for (const s of servers) await autocannon({ url: s.url, connections: CONNECTIONS, duration: 1 });
  for (let round = 1; round <= ROUNDS; round++) {
    process.stdout.write(`round ${round}/${ROUNDS}\n`);
    const order = servers.map((_, i) => i);
    if (round % 2 === 0) order.reverse();
    const rps = [];
    for (const i of order)
      rps[i] = (
        await autocannon({ url: servers[i].url, connections: CONNECTIONS, duration: SECONDS })
      ).requests.average;
    rps.forEach((v, i) => {
      rates[i].push(v);
      ratios[i].push(v / rps[0]);
    });
  }
  process.stdout.write(
    `\nnode ${process.version}; ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections; ` +
      'ratio to node:http within each round\n',
  );
  servers.forEach((s, i) => {
    process.stdout.write(
      `  ${s.name.padEnd(28)} median ${String(Math.round(median(rates[i]))).padStart(6)} rps  ` +
        `x${median(ratios[i]).toFixed(3)} ` +
        `(rounds ${Math.min(...ratios[i]).toFixed(2)}-${Math.max(...ratios[i]).toFixed(2)})\n`,
    );
  });
} finally {
  for (const s of servers) s.child.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
