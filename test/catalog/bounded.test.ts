// Validation of a catalog document is bounded work: hostile documents at the limits (a
// body just under the catalog routes' limit of empty entries, a list at its maxItems,
// a successor cycle through every entry) are answered with a 4xx problem whose
// errors stop at MAX_FIELD_ERRORS and say more were cut, while the instance keeps
// answering /healthz (a real listening server, real HTTP) within LIVENESS_BOUND_MS.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import { validateCatalog } from '../../src/catalog/file.js';
import { MAX_ENTRIES } from '../../src/catalog/schemas.js';
import { MAX_FIELD_ERRORS } from '../../src/errors.js';
import { build, mintToken } from '../helpers/app.js';
import { image } from '../helpers/catalog-entries.js';
import { cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';
import { sleep } from '../helpers/until.js';

const DEPRECATED = '2027-01-01T00:00:00Z';

/** `{"images":[{},{},...],"plans":[],"regions":[]}`, as many empty images as fit in `bytes`. */
function emptyImagesBody(bytes: number): string {
  const head = '{"images":[';
  const tail = '],"plans":[],"regions":[]}';
  const count = Math.floor((bytes - head.length - tail.length + 1) / 3);
  return `${head}${Array.from({ length: count }, () => '{}').join(',')}${tail}`;
}

/** `n` images, each deprecated with the next as its successor; the last one's successor is the first when `cycle`. */
function successorChain(n: number, cycle: boolean): Record<string, unknown> {
  const slug = (i: number) => `os-${i}`;
  const images = Array.from({ length: n }, (_, i) =>
    image({
      slug: slug(i),
      name: `OS ${i}`,
      distribution: 'OS',
      version: String(i),
      ...(i < n - 1 || cycle ? { deprecated_at: DEPRECATED, successor: slug((i + 1) % n) } : {}),
    }),
  );
  return { images, plans: [], regions: [] };
}

type Problem = { status: number; code: string; errors?: unknown[]; errors_truncated?: boolean };

async function listening(t: TestContext) {
  // 1 MiB: what bounds the work here is the caps, not the body's size (test/catalog/scale.test.ts
  // applies a document of the default limit's size).
  const { app, config } = await build(t, { env: { RATE_LIMIT: '0', CATALOG_BODY_LIMIT_BYTES: String(1024 * 1024) } });
  const writer = await mintToken(app, ['catalog:write'], 'catalog operator');
  // The first catalog document a process reads loads the catalog file module and compiles
  // its validators, once (not work a client can make it repeat): done before measuring.
  const first = await app.inject({ method: 'POST', url: '/api/v1/catalog/diff', headers: writer.auth, payload: {} });
  assert.equal(first.statusCode, 422);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  assert.ok(address !== null && typeof address === 'object');
  const base = `http://127.0.0.1:${address.port}`;
  // So is the first fetch() of a process (it loads the HTTP client).
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
  return { base, auth: writer.auth, limit: config.catalogBodyLimitBytes };
}

/**
 * Runs `work` once to warm up (the first big body a process parses runs unoptimised code:
 * once, not work a client can make it repeat; work that blocks the loop blocks the repeat too),
 * then again while polling GET /healthz every 20 ms, and returns its result and the
 * longest wait for a /healthz answer, counted from when that poll was due (a blocked event
 * loop delays the poll itself as much as its answer: the client shares the process).
 */
async function whileAlive<T>(
  base: string,
  work: () => Promise<T>,
): Promise<{ result: T; worst: number; polls: number }> {
  await work();
  let settled = false;
  const running = work().finally(() => {
    settled = true;
  });
  let worst = 0;
  let polls = 0;
  let due = performance.now();
  while (!settled || polls < 2) {
    const res = await fetch(`${base}/healthz`);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    worst = Math.max(worst, performance.now() - due);
    polls += 1;
    due = performance.now() + 20;
    await sleep(20);
  }
  return { result: await running, worst, polls };
}

/** `body` as bytes made once (the client shares the process: encoding 16 MiB per send would count against /healthz). */
async function send(
  base: string,
  auth: Record<string, string>,
  method: 'PUT' | 'POST',
  body: string | Uint8Array<ArrayBuffer>,
) {
  const url = method === 'PUT' ? `${base}/api/v1/catalog` : `${base}/api/v1/catalog/diff`;
  const res = await fetch(url, {
    method,
    headers: { ...auth, 'content-type': 'application/json', 'if-match': '*' },
    body,
  });
  return { status: res.status, body: (await res.json()) as Problem & Record<string, unknown> };
}

describe('bounded catalog validation', () => {
  for (const method of ['PUT', 'POST'] as const) {
    const route = method === 'PUT' ? 'PUT /api/v1/catalog' : 'POST /api/v1/catalog/diff';

    it(`${route}: a body just under the limit, of empty images, is refused at once; /healthz answers`, async (t) => {
      const { base, auth, limit } = await listening(t);
      const body = new TextEncoder().encode(emptyImagesBody(limit - 1));
      assert.ok(body.length < limit && body.length > limit - 4);
      const { result, worst } = await whileAlive(base, () => send(base, auth, method, body));
      assert.equal(result.status, 422, JSON.stringify(result.body).slice(0, 500));
      assert.equal(result.body.code, 'VALIDATION_FAILED');
      assert.ok(result.body.errors!.length >= 1 && result.body.errors!.length <= MAX_FIELD_ERRORS);
      assert.equal(result.body.errors_truncated, true, 'says more were cut');
      assert.ok(worst < 200, `/healthz waited ${worst.toFixed(0)} ms`);
    });

    it(`${route}: as many empty images as the list may hold: the first problems, and more were cut`, async (t) => {
      const { base, auth } = await listening(t);
      const body = JSON.stringify({
        images: Array.from({ length: MAX_ENTRIES.images }, () => ({})),
        plans: [],
        regions: [],
      });
      const { result, worst } = await whileAlive(base, () => send(base, auth, method, body));
      assert.equal(result.status, 422);
      assert.equal(result.body.errors!.length, MAX_FIELD_ERRORS);
      assert.equal(result.body.errors_truncated, true);
      assert.equal(result.body.errors_omitted, undefined, 'not counted: validation stopped');
      assert.ok(worst < 200, `/healthz waited ${worst.toFixed(0)} ms`);
    });

    it(`${route}: a successor cycle through as many images as the list may hold`, async (t) => {
      const { base, auth, limit } = await listening(t);
      const body = JSON.stringify(successorChain(MAX_ENTRIES.images, true));
      assert.ok(body.length < limit, 'fits the body limit');
      const { result, worst } = await whileAlive(base, () => send(base, auth, method, body));
      assert.equal(result.status, 422);
      const errors = result.body.errors as { pointer: string; detail: string }[];
      assert.equal(errors.length, MAX_FIELD_ERRORS);
      assert.equal(result.body.errors_truncated, true);
      assert.equal(errors[0]!.pointer, '/images/0/successor');
      assert.match(errors[0]!.detail, /successors form a cycle/);
      assert.ok(worst < 200, `/healthz waited ${worst.toFixed(0)} ms`);
    });
  }

  it('successor chains at the cap are followed in one pass (reads of `successor` grow linearly)', () => {
    const n = MAX_ENTRIES.images;
    for (const cycle of [false, true]) {
      let reads = 0;
      const doc = successorChain(n, cycle);
      doc.images = (doc.images as object[]).map(
        (entry) =>
          new Proxy(entry, {
            get(target, key, receiver) {
              if (key === 'successor') reads += 1;
              return Reflect.get(target, key, receiver) as unknown;
            },
          }),
      );
      const r = validateCatalog(doc);
      if (cycle) {
        assert.ok(!r.ok && r.more === true);
        assert.equal(r.problems.length, MAX_FIELD_ERRORS);
        assert.match(r.problems[0]!.message, /successors form a cycle: os-0 -> os-1 -> .* -> os-0 \(5000 entries\)/);
      } else assert.ok(r.ok, JSON.stringify(r.ok ? null : r.problems[0]));
      // Walking the chain from every entry would read it n * (n - 1) / 2 times (12.5 million).
      assert.ok(reads <= 20 * n, `${reads} reads of successor for ${n} entries`);
    }
  });

  it('a list over its maxItems is refused naming the cap', () => {
    const r = validateCatalog({
      images: [],
      plans: [],
      regions: Array.from({ length: MAX_ENTRIES.regions + 1 }, () => ({})),
    });
    assert.ok(!r.ok);
    assert.ok(r.more);
    assert.deepEqual(
      r.problems.map((p) => [p.pointer, p.message]),
      [['/regions', `must list at most ${MAX_ENTRIES.regions} regions`]],
    );
  });

  it('infracat catalog validate: as many empty images as a list may hold: it ends, saying more were cut', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const file = tmp.file('hostile.json');
    writeFileSync(
      file,
      JSON.stringify({ images: Array.from({ length: MAX_ENTRIES.images }, () => ({})), plans: [], regions: [] }),
    );
    const res = await cli(['catalog', 'validate', file]);
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, new RegExp(`${MAX_FIELD_ERRORS} problems`));
    assert.match(res.stderr, /images\[0\]\.slug: is required/);
    assert.match(res.stderr, /more problems were cut/);
    assert.equal(res.stderr.split('\n').filter((l) => l.startsWith('  ')).length, MAX_FIELD_ERRORS + 1);
  });
});
