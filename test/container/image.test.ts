// The container image, for real: built from the Containerfile as it is with podman (as root,
// runc; test/container/podman.ts makes the base images locally when missing), then run:
// - on SQLite in a volume, through a published port: the first start prints the admin
//   token once; the API, the console and /docs answer; `infracat tokens create` works
//   through `podman exec`; the process is not root; the HEALTHCHECK passes; `podman stop`
//   (SIGTERM to node as PID 1) ends it gracefully within SHUTDOWN_TIMEOUT_MS while clients
//   create tokens, and a restart on the same volume, with a read-only root filesystem, has
//   every token whose create was acknowledged;
// - on PostgreSQL (the harness's server, reached over the host's network): two containers,
//   and a token deleted through one is refused by the other.
// It reports the image's size and the cold start (podman run to the first /healthz 200).
// Not part of `npm test`: `npm run test:container` runs it (scripts/run-tests.ts).
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { backends, type BackendDb } from '../helpers/backends.js';
import { fetchAll } from '../helpers/pages.js';
import { freePort } from '../helpers/pg-server.js';
import { sleep } from '../helpers/until.js';
import { buildImage, ensureBaseImages, IMAGE, podman, podmanOk, preparePodman, RUN_BASE, WORK } from './podman.js';

const RUN = `infracat-test-${process.pid}`;
const LOG = path.join(WORK, 'build.log');
const containers: string[] = [];
const volumes: string[] = [];

const report = (line: string) => process.stdout.write(`container test: ${line}\n`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;

interface Started {
  name: string;
  url: string;
  /** From `podman run` to the first /healthz 200. */
  coldStartMs: number;
  /** From the start of the container's process (node) to the first /healthz 200. */
  processStartMs: number;
}

/** `podman run -d` of the image; resolves once /healthz answers 200 at `url`. */
async function start(name: string, url: string, args: readonly string[]): Promise<Started> {
  containers.push(name);
  const t = performance.now();
  await podmanOk(['run', '-d', '--name', name, ...args, IMAGE]);
  for (;;) {
    const res = await fetch(`${url}/healthz`).catch(() => undefined);
    if (res?.status === 200) break;
    const state = await podmanOk(['inspect', '--format', '{{.State.Status}}', name]);
    if (state !== 'running') assert.fail(`${name} is ${state}:\n${await logs(name)}`);
    if (performance.now() - t > 60_000) assert.fail(`${name}: no /healthz 200 within 60 s:\n${await logs(name)}`);
    await sleep(20);
  }
  const healthy = Date.now();
  const coldStartMs = performance.now() - t;
  const startedNs = BigInt(await podmanOk(['inspect', '--format', '{{.State.StartedAt.UnixNano}}', name]));
  return { name, url, coldStartMs, processStartMs: healthy - Number(startedNs / 1_000_000n) };
}

async function logs(name: string): Promise<string> {
  const res = await podman(['logs', name]);
  return res.stdout + res.stderr;
}

/** The secret the first start of a database prints (docs/operations.md), every time it appears. */
function printedAdminTokens(output: string): string[] {
  return [...output.matchAll(/^ {2}token: (icat_\S+)$/gm)].map((m) => m[1]!);
}

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

async function createToken(url: string, admin: string, name: string): Promise<{ id: string; token: string }> {
  const res = await fetch(`${url}/api/v1/api-tokens`, {
    method: 'POST',
    headers: { ...bearer(admin), 'content-type': 'application/json' },
    body: JSON.stringify({ name, scopes: ['api-tokens:read'] }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as { id: string; token: string };
}

/** The total size of the files under `dir`. */
function du(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? du(full) : statSync(full).size;
  }
  return total;
}

before(async () => {
  preparePodman();
  mkdirSync(WORK, { recursive: true });
  rmSync(LOG, { force: true });
  const log = (chunk: string) => appendFileSync(LOG, chunk);
  const t = performance.now();
  for (const made of await ensureBaseImages(log)) report(made);
  report(`base images ready in ${seconds(performance.now() - t)} (build log: ${path.relative(process.cwd(), LOG)})`);
  const b = performance.now();
  await buildImage(log);
  report(`image built in ${seconds(performance.now() - b)}`);
});

after(async () => {
  // --volumes: the anonymous volume each container without -v gets for the image's VOLUME /data.
  if (containers.length > 0) await podman(['rm', '--force', '--volumes', '--time', '0', ...containers]);
  if (volumes.length > 0) await podman(['volume', 'rm', '--force', ...volumes]);
});

describe('the container image', () => {
  it('is reported: its size, uncompressed and as pushed (gzip layers)', async () => {
    const size = Number(await podmanOk(['image', 'inspect', '--format', '{{.Size}}', IMAGE]));
    const base = Number(await podmanOk(['image', 'inspect', '--format', '{{.Size}}', RUN_BASE]));
    const dir = path.join(WORK, 'oci');
    rmSync(dir, { recursive: true, force: true });
    try {
      await podmanOk(['save', '--compress', '--format', 'docker-dir', '-o', dir, IMAGE]);
      report(
        `image size ${megabytes(size)} uncompressed (${megabytes(base)} of it the base, ${RUN_BASE}), ` +
          `${megabytes(du(dir))} compressed`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // What infracat adds to the base: the built command, the console, the catalog and the
    // production dependencies only (dev dependencies or the toolchain would be hundreds of MB).
    assert.ok(size - base < 60e6, `infracat's layers take ${megabytes(size - base)}`);
  });

  it('runs on SQLite in a volume: first start, API, console, exec, non-root, stop, read-only restart', async () => {
    const volume = `${RUN}-data`;
    await podmanOk(['volume', 'create', volume]);
    volumes.push(volume);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // TOKEN_MAX_LIVE: the creates under load below run until the stop, which a fast machine
    // turns into more than the default 1,000 live tokens of one account.
    const env = [
      ...['-e', 'RATE_LIMIT=0', '-e', 'SHUTDOWN_DRAIN_MS=1000', '-e', 'SHUTDOWN_TIMEOUT_MS=8000'],
      ...['-e', 'TOKEN_MAX_LIVE=100000'],
    ];
    // A published port: the container's 8080 on the host's loopback.
    const publish = ['-p', `127.0.0.1:${port}:8080`, '-v', `${volume}:/data`, '--stop-timeout', '30'];

    const first = await start(`${RUN}-sqlite-1`, url, [...publish, ...env]);
    const firstLogs = await logs(first.name);
    const listening = /"startup_ms":(\d+)/.exec(firstLogs)?.[1];
    report(
      `cold start: the container's process to the first /healthz 200 in ${first.processStartMs} ms ` +
        `(infracat's own startup_ms ${listening}); podman run to the first /healthz 200 in ` +
        `${first.coldStartMs.toFixed(0)} ms`,
    );

    // The first start on an empty volume prints the admin token, once.
    const printed = printedAdminTokens(firstLogs);
    assert.equal(printed.length, 1, firstLogs);
    const admin = printed[0]!;

    // The API, the console and /docs through the published port.
    for (const [route, type] of [
      ['/api/v1/plans', 'application/json'],
      ['/api/v1/openapi.json', 'application/json'],
      ['/', 'text/html'],
      ['/console/console.js', 'javascript'],
      ['/docs/', 'text/html'],
      ['/readyz', 'application/json'],
    ] as const) {
      const res = await fetch(`${url}${route}`);
      assert.equal(res.status, 200, route);
      assert.ok(res.headers.get('content-type')?.includes(type), `${route}: ${res.headers.get('content-type')}`);
      await res.arrayBuffer();
    }
    const viaApi = await createToken(url, admin, 'made through the api');

    // The command inside the container.
    const exec = JSON.parse(
      await podmanOk([
        'exec',
        first.name,
        'infracat',
        'tokens',
        'create',
        '--name',
        'made by exec',
        '--scopes',
        'api-tokens:read',
        '--json',
      ]),
    ) as { id: string; token: string };
    assert.equal((await fetch(`${url}/api/v1/api-tokens`, { headers: bearer(exec.token) })).status, 200);

    // Not root: the service (PID 1) and what exec runs.
    const status = await podmanOk(['exec', first.name, 'cat', '/proc/1/status']);
    assert.match(status, /^Uid:\s+10001\s+10001\s+10001\s+10001$/m);
    assert.equal(await podmanOk(['exec', first.name, 'id', '-u']), '10001');

    // The image's HEALTHCHECK (node's fetch of /healthz).
    assert.equal((await podman(['healthcheck', 'run', first.name])).code, 0);

    // SIGTERM while clients create tokens: every acknowledged create must survive.
    const acknowledged = new Map<string, string>();
    let stopping = false;
    const worker = async (n: number) => {
      for (let i = 0; ; i++) {
        let res: Response;
        try {
          res = await fetch(`${url}/api/v1/api-tokens`, {
            method: 'POST',
            headers: { ...bearer(admin), 'content-type': 'application/json' },
            body: JSON.stringify({ name: `load ${n}.${i}`, scopes: ['api-tokens:read'] }),
          });
        } catch {
          if (stopping) return; // refused or closed: the instance has stopped listening
          throw new Error('a create failed before the stop');
        }
        if (res.status === 201) {
          const body = (await res.json()) as { id: string; token: string };
          acknowledged.set(body.id, body.token);
          // Paced, so the number of tokens to check after the restart stays in the hundreds.
          await sleep(10);
        } else {
          await res.arrayBuffer();
          assert.ok(stopping && res.status === 503, `create answered ${res.status}`);
        }
      }
    };
    const workers = [1, 2, 3, 4].map(worker);
    // A worker that fails ends the wait and fails the test, rather than surfacing as an
    // unhandled rejection.
    let failed = false;
    for (const w of workers) w.catch(() => (failed = true));
    while (acknowledged.size < 20 && !failed) await sleep(10);
    if (failed) await Promise.all(workers); // rethrows the worker's error
    stopping = true;
    const stopStarted = performance.now();
    await podmanOk(['stop', first.name]);
    const stopMs = performance.now() - stopStarted;
    await Promise.all(workers);
    const exit = await podmanOk(['inspect', '--format', '{{.State.ExitCode}}', first.name]);
    const stopLogs = await logs(first.name);
    assert.equal(exit, '0', stopLogs);
    const at = (msg: string) => {
      const line = stopLogs.split('\n').find((l) => l.includes(`"msg":"${msg}"`));
      assert.ok(line !== undefined, `no "${msg}" in the log:\n${stopLogs}`);
      return Date.parse((JSON.parse(line) as { time: string }).time);
    };
    const shutdownMs = at('shutdown complete') - at('shutting down');
    assert.ok(shutdownMs <= 8000, `the stop took ${shutdownMs} ms, past SHUTDOWN_TIMEOUT_MS`);
    report(
      `podman stop: ${acknowledged.size} creates acknowledged under load; infracat stopped in ${shutdownMs} ms ` +
        `(drain 1000 ms), podman stop returned after ${stopMs.toFixed(0)} ms, exit code 0`,
    );

    // A restart on the same volume, the root filesystem read-only (and no tmpfs either).
    const second = await start(`${RUN}-sqlite-2`, url, [...publish, ...env, '--read-only', '--read-only-tmpfs=false']);
    assert.deepEqual(printedAdminTokens(await logs(second.name)), [], 'a restart mints no admin token');
    const kept = new Set(
      (await fetchAll<{ id: string }>(url, '/api/v1/api-tokens?per_page=1000', bearer(admin))).map((t) => t.id),
    );
    for (const id of [viaApi.id, exec.id, ...acknowledged.keys()]) assert.ok(kept.has(id), `${id} was lost`);
    for (const secret of [viaApi.token, exec.token, ...acknowledged.values()]) {
      const res = await fetch(`${url}/api/v1/api-tokens?per_page=1`, { headers: bearer(secret) });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
    // It writes (to /data) and nothing else can be written.
    await createToken(url, admin, 'made on a read-only root');
    assert.notEqual((await podman(['exec', second.name, 'touch', '/app/x'])).code, 0);
    assert.notEqual((await podman(['exec', second.name, 'touch', '/tmp/x'])).code, 0);
    await podmanOk(['stop', second.name]);
    assert.equal(await podmanOk(['inspect', '--format', '{{.State.ExitCode}}', second.name]), '0');
  });

  it('runs two containers on PostgreSQL: a token deleted through one is refused by the other', async () => {
    const postgres = backends().find((b) => b.name === 'postgres');
    assert.ok(postgres !== undefined, 'TEST_DATABASE_URL is not set: run it with npm run test:container');
    const db: BackendDb = await postgres.create();
    try {
      const urls: string[] = [];
      const names: string[] = [];
      let admin: string | undefined;
      for (const n of [1, 2]) {
        const port = await freePort();
        const name = `${RUN}-pg-${n}`;
        // The host's network: the harness's PostgreSQL listens on the host's loopback.
        const started = await start(name, `http://127.0.0.1:${port}`, [
          '--network',
          'host',
          '-e',
          `DATABASE_URL=${db.url}`,
          '-e',
          `PORT=${port}`,
          '-e',
          'HOST=127.0.0.1',
        ]);
        urls.push(started.url);
        names.push(name);
        const printed = printedAdminTokens(await logs(name));
        if (n === 1) [admin] = printed;
        else assert.deepEqual(printed, [], 'only the first start of the database mints an admin token');
      }
      assert.ok(admin !== undefined, 'the first container printed no admin token');
      const [one, other] = urls as [string, string];
      const ready = (await (await fetch(`${other}/readyz`)).json()) as { storage: string };
      assert.equal(ready.storage, 'postgres');

      const token = await createToken(one, admin, 'revoked across the fleet');
      // The other instance has verified (and cached) it.
      assert.equal((await fetch(`${other}/api/v1/api-tokens`, { headers: bearer(token.token) })).status, 200);
      const deleted = await fetch(`${one}/api/v1/api-tokens/${token.id}`, { method: 'DELETE', headers: bearer(admin) });
      assert.equal(deleted.status, 204);
      const t = performance.now();
      let status = 0;
      while (performance.now() - t < 10_000) {
        status = (await fetch(`${other}/api/v1/api-tokens`, { headers: bearer(token.token) })).status;
        if (status === 401) break;
        await sleep(10);
      }
      assert.equal(status, 401, 'the other container still accepts the deleted token');
      report(`PostgreSQL: the deletion reached the other container within ${(performance.now() - t).toFixed(0)} ms`);
      for (const name of names) await podmanOk(['stop', name]);
    } finally {
      await podman(['rm', '--force', '--volumes', '--time', '0', ...containers.filter((c) => c.includes('-pg-'))]);
      await db.drop();
    }
  });
});
