// The load generator of `npm run soak` (scripts/soak.ts), run in a worker thread: a mix
// of catalog reads, revalidations, authenticated reads, creates and deletes, with a
// fixed number of requests in flight over keep-alive connections.
import { parentPort, workerData } from 'node:worker_threads';
import { Agent, request } from 'undici';

const EXPECTED = { catalog: [200], revalidate: [304], current: [200], list: [200], create: [201], delete: [204, 404] };
const CATALOGS = [
  '/api/v1/plans',
  '/api/v1/images',
  '/api/v1/regions',
  '/api/v1/plans?type=general',
  '/api/v1/regions/nyc3',
];

async function runLoad(cfg) {
  const agent = new Agent({ connections: cfg.connections, keepAliveTimeout: 30_000 });
  const report = { requests: 0, byStatus: {}, unexpected: [], latenciesMs: [] };
  const created = [];
  let etag = '';
  const deadline = Date.now() + cfg.seconds * 1000;
  const admin = { authorization: `Bearer ${cfg.admin}` };

  async function one(i) {
    const pick = i % 20;
    let op;
    let res;
    const started = performance.now();
    if (pick < 9) {
      op = 'catalog';
      res = await request(`${cfg.base}${CATALOGS[i % CATALOGS.length]}`, { dispatcher: agent });
    } else if (pick < 10 && etag !== '') {
      op = 'revalidate';
      res = await request(`${cfg.base}/api/v1/plans`, { dispatcher: agent, headers: { 'if-none-match': etag } });
    } else if (pick < 13) {
      op = 'current';
      res = await request(`${cfg.base}/api/v1/api-tokens/current`, {
        dispatcher: agent,
        headers: { authorization: `Bearer ${cfg.reader}` },
      });
    } else if (pick < 15) {
      op = 'list';
      res = await request(`${cfg.base}/api/v1/api-tokens`, { dispatcher: agent, headers: admin });
    } else if (pick < 17 || created.length === 0) {
      op = 'create';
      res = await request(`${cfg.base}/api/v1/api-tokens`, {
        dispatcher: agent,
        method: 'POST',
        headers: { ...admin, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `soak ${i}`, scopes: ['apps:read'] }),
      });
    } else if (pick < 19) {
      op = 'delete';
      res = await request(`${cfg.base}/api/v1/api-tokens/${created.shift()}`, {
        dispatcher: agent,
        method: 'DELETE',
        headers: admin,
      });
    } else {
      op = 'catalog';
      res = await request(`${cfg.base}/api/v1/images/ubuntu-24-04`, { dispatcher: agent });
    }
    const body = await res.body.text();
    report.latenciesMs.push(performance.now() - started);
    report.requests += 1;
    report.byStatus[res.statusCode] = (report.byStatus[res.statusCode] ?? 0) + 1;
    if (op === 'create' && res.statusCode === 201) created.push(JSON.parse(body).id);
    if (
      op === 'catalog' &&
      etag === '' &&
      CATALOGS[i % CATALOGS.length] === '/api/v1/plans' &&
      typeof res.headers.etag === 'string'
    )
      etag = res.headers.etag;
    if (!EXPECTED[op].includes(res.statusCode) && report.unexpected.length < 20)
      report.unexpected.push({ op, status: res.statusCode, body: body.slice(0, 200) });
  }

  let next = 0;
  await Promise.all(
    Array.from({ length: cfg.connections }, async () => {
      while (Date.now() < deadline) {
        const i = next++;
        try {
          await one(i);
        } catch (err) {
          report.requests += 1;
          report.byStatus.error = (report.byStatus.error ?? 0) + 1;
          if (report.unexpected.length < 20) report.unexpected.push({ op: 'network', status: -1, body: String(err) });
        }
      }
    }),
  );
  // Delete what is left, so the store ends where it started.
  for (const id of created)
    await request(`${cfg.base}/api/v1/api-tokens/${id}`, { dispatcher: agent, method: 'DELETE', headers: admin }).then(
      (r) => r.body.dump(),
    );
  await agent.close();
  return report;
}

// Only a summary goes back: the raw latencies (8 bytes per request, 10 MB for a 4-minute
// run) would otherwise sit in the server thread's heap and count as its growth.
function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const { latenciesMs, ...rest } = await runLoad(workerData);
const sorted = Float64Array.from(latenciesMs).sort();
parentPort.postMessage({
  ...rest,
  latencyMs: {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? 0,
  },
});
