// @infracat/client against a listening infracat (buildApp + listen): the bearer token,
// typed answers, Link pages, problem+json as InfracatError, and waiting out a 429 or a 503.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import { createClient, InfracatError, nextLink, retryAfterMs, type ClientOptions } from '../src/index.js';
import { openApiTypes } from '../../../test/client/generate.js';
import { openDatabase } from '../../../src/storage/sqlite/driver.js';
import { SqliteStore } from '../../../src/storage/sqlite/store.js';
import { build, mintToken, type BuildOptions } from '../../../test/helpers/app.js';
import { tempDir } from '../../../test/helpers/sqlite.js';

/** The app listening on a free port; a counting fetch shows how many requests a call sent. */
async function served(t: TestContext, options: BuildOptions = {}) {
  const { app } = await build(t, options);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const sent: string[] = [];
  const counting: typeof fetch = (input, init) => {
    sent.push(`${init?.method ?? 'GET'} ${String(input instanceof Request ? input.url : input)}`);
    return fetch(input, init);
  };
  const client = (opts: Omit<ClientOptions, 'baseUrl'> = {}) =>
    createClient({ baseUrl: `http://127.0.0.1:${port}`, fetch: counting, ...opts });
  return { app, client, sent };
}

async function rejected(promise: Promise<unknown>): Promise<InfracatError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof InfracatError, `expected an InfracatError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to fail');
}

describe('@infracat/client', () => {
  it('its committed types match the served document (run npm run gen:client after API changes)', async () => {
    const committed = readFileSync(new URL('../src/openapi.ts', import.meta.url), 'utf8');
    assert.equal(await openApiTypes(), committed);
  });

  it('sends the token given to createClient as a bearer token, and reads typed answers', async (t) => {
    const { app, client } = await served(t);
    const admin = await mintToken(app, ['api-tokens:write'], 'admin');

    const anonymous = await rejected(client().GET('/api/v1/api-tokens'));
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.code, 'UNAUTHORIZED');

    const api = client({ token: admin.secret });
    const current = await api.GET('/api/v1/api-tokens/current');
    assert.equal(current.data.id, admin.id);
    const { data: list, response } = await api.GET('/api/v1/api-tokens', { query: { per_page: 10 } });
    assert.equal(response.status, 200);
    const names: string[] = list.map((tok) => tok.name);
    assert.deepEqual(names, ['admin']);
    const scopes: string[] = list[0]!.scopes;
    assert.deepEqual(scopes, ['api-tokens:write']);

    const created = await api.POST('/api/v1/api-tokens', { body: { name: 'ci', scopes: ['api-tokens:read'] } });
    assert.equal(created.response.status, 201);
    assert.match(created.data.token, /_/);
    const deleted = await api.DELETE('/api/v1/api-tokens/{id}', { path: { id: created.data.id } });
    assert.equal(deleted.response.status, 204);
    assert.equal(deleted.data, undefined);
  });

  it('paginate follows Link: rel="next" across pages and yields every item once', async (t) => {
    const { app, client, sent } = await served(t);
    const admin = await mintToken(app, ['api-tokens:write'], 'admin');
    const api = client({ token: admin.secret });
    const ids = [admin.id];
    for (let i = 0; i < 6; i++)
      ids.push(
        (await api.POST('/api/v1/api-tokens', { body: { name: `t${i}`, scopes: ['api-tokens:read'] } })).data.id,
      );

    sent.length = 0;
    const seen: string[] = [];
    for await (const token of api.paginate('/api/v1/api-tokens', { query: { per_page: 3 } })) seen.push(token.id);
    assert.deepEqual(seen, ids, 'oldest first, none skipped or repeated');
    assert.equal(sent.length, 3, `three pages of at most 3: ${sent.join(', ')}`);
    assert.match(sent[1]!, /per_page=3/, 'the next page is requested as the Link names it');
  });

  it('a 404 and a 422 are InfracatErrors with the code, request_id and the problem members', async (t) => {
    const { app, client } = await served(t);
    const admin = await mintToken(app, ['api-tokens:write']);
    const api = client({ token: admin.secret });

    const missing = await rejected(api.GET('/api/v1/api-tokens/{id}', { path: { id: 'tok_nope' } }));
    assert.equal(missing.status, 404);
    assert.equal(missing.code, 'NOT_FOUND');
    assert.equal(typeof missing.detail, 'string');
    assert.equal(missing.request_id, missing.response.headers.get('x-request-id'));
    assert.ok(missing.request_id);
    assert.equal(missing.problem.instance, '/api/v1/api-tokens/tok_nope');

    const invalid = await rejected(api.POST('/api/v1/api-tokens', { body: { name: '', scopes: ['nope'] } }));
    assert.equal(invalid.status, 422);
    assert.equal(invalid.code, 'VALIDATION_FAILED');
    assert.ok(
      invalid.errors?.some((e) => e.pointer === '/scopes/0'),
      JSON.stringify(invalid.errors),
    );
    assert.match(invalid.message, /^422 VALIDATION_FAILED: /);
  });

  it('waits out a 429 as Retry-After says for reads; a POST only when the caller opts in', async (t) => {
    const { app, client, sent } = await served(t, { env: { RATE_LIMIT: '2', RATE_LIMIT_WINDOW_S: '1' } });
    const admin = await mintToken(app, ['api-tokens:write']);
    const api = client({ token: admin.secret });

    // Reads: within a few calls one meets the limit, waits and is sent again, and succeeds.
    let retried = false;
    for (let i = 0; i < 10 && !retried; i++) {
      sent.length = 0;
      const { data } = await api.GET('/api/v1/api-tokens/current');
      assert.equal(data.id, admin.id);
      retried = sent.length === 2;
      assert.ok(sent.length <= 2, `one retry after a 1 s Retry-After: ${sent.join(', ')}`);
    }
    assert.ok(retried, 'a read met the limit and was retried');

    // A POST is not sent twice unless asked: the 429 comes back as an InfracatError.
    let limited: InfracatError | undefined;
    for (let i = 0; i < 10 && limited === undefined; i++) {
      sent.length = 0;
      limited = await api.POST('/api/v1/api-tokens', { body: { name: `p${i}`, scopes: ['api-tokens:read'] } }).then(
        () => undefined,
        (err: unknown) => (err instanceof InfracatError ? err : Promise.reject(err as Error)),
      );
      assert.equal(sent.length, 1);
    }
    assert.equal(limited?.status, 429);
    assert.equal(limited?.code, 'RATE_LIMITED');

    let optedIn = false;
    for (let i = 0; i < 10 && !optedIn; i++) {
      sent.length = 0;
      const { response } = await api.POST('/api/v1/api-tokens', {
        body: { name: `q${i}`, scopes: ['api-tokens:read'] },
        retry: true,
      });
      assert.equal(response.status, 201);
      optedIn = sent.length === 2;
    }
    assert.ok(optedIn, 'an opted-in POST met the limit and was retried');

    // A wait longer than the caller accepts is not waited for.
    const impatient = client({ token: admin.secret, retry: { maxDelayMs: 0 } });
    let error: InfracatError | undefined;
    for (let i = 0; i < 10 && error === undefined; i++) {
      sent.length = 0;
      error = await impatient.GET('/api/v1/api-tokens/current').then(
        () => undefined,
        (err: unknown) => (err instanceof InfracatError ? err : Promise.reject(err as Error)),
      );
      assert.equal(sent.length, 1);
    }
    assert.equal(error?.code, 'RATE_LIMITED');
  });

  it('waits out a 503 as Retry-After says for an idempotent call; a POST or PATCH only if opted in', async (t) => {
    // Writes give up at once on a locked database, answering 503 STORAGE_UNAVAILABLE with
    // Retry-After while another connection holds SQLite's write lock.
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const file = tmp.file();
    const store = new SqliteStore({ path: file, busyTimeoutMs: 50 });
    await store.migrate();
    const { app, client } = await served(t, { store });
    const admin = await mintToken(app, ['api-tokens:write']);
    const { id } = await mintToken(app, ['api-tokens:read'], 'victim');
    const holder = openDatabase(file);
    t.after(() => holder.close());
    const lock = () => holder.exec('BEGIN IMMEDIATE');

    // Every send and its answer, timed; once `release` is set, the first 503 lets go of the lock.
    let release = false;
    let exchanges: { sent: number; answered: number; status: number; retryAfter: string | null }[] = [];
    const watching: typeof fetch = async (input, init) => {
      const sent = performance.now();
      const res = await fetch(input, init);
      exchanges.push({
        sent,
        answered: performance.now(),
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
      });
      if (res.status === 503 && release && holder.inTransaction) holder.exec('COMMIT');
      return res;
    };
    const api = client({ token: admin.secret, fetch: watching });
    /** The statuses of the last call's sends, after checking that the resend waited as Retry-After said. */
    const waited = (): number[] => {
      const [first, second] = exchanges;
      assert.equal(first?.status, 503);
      assert.equal(first.retryAfter, '5');
      if (second !== undefined)
        assert.ok(second.sent - first.answered >= 5000 - 5, `waited ${Math.round(second.sent - first.answered)} ms`);
      return exchanges.map((e) => e.status);
    };

    lock();
    // Not idempotent, not opted in: the 503 comes back at once as an InfracatError.
    exchanges = [];
    const post = await rejected(
      api.POST('/api/v1/api-tokens', { body: { name: 'once', scopes: ['api-tokens:read'] } }),
    );
    assert.equal(post.status, 503);
    assert.equal(post.code, 'STORAGE_UNAVAILABLE');
    assert.deepEqual(waited(), [503]);
    exchanges = [];
    const patch = await rejected(api.PATCH('/api/v1/api-tokens/{id}', { path: { id }, body: { name: 'renamed' } }));
    assert.equal(patch.code, 'STORAGE_UNAVAILABLE');
    assert.deepEqual(waited(), [503]);

    // Idempotent: sent again after the wait, when the lock is gone.
    release = true;
    exchanges = [];
    const deleted = await api.DELETE('/api/v1/api-tokens/{id}', { path: { id } });
    assert.equal(deleted.response.status, 204);
    assert.deepEqual(waited(), [503, 204]);

    // A POST the caller opts in for: sent again after the wait, and made once.
    lock();
    exchanges = [];
    const created = await api.POST('/api/v1/api-tokens', {
      body: { name: 'retried', scopes: ['api-tokens:read'] },
      retry: true,
    });
    assert.equal(created.response.status, 201);
    assert.deepEqual(waited(), [503, 201]);
    const { data: tokens } = await api.GET('/api/v1/api-tokens');
    assert.deepEqual(
      tokens.map((tok) => tok.name),
      ['test', 'retried'],
      'the refused sends made and renamed nothing; the retried one made its token once',
    );
  });

  it('refuses to follow a next link to another origin with the token', async (t) => {
    const { app } = await build(t, {
      extend: (routes) =>
        routes.get('/test/elsewhere', { schema: { hide: true } }, async (_req, reply) =>
          reply.header('link', '<http://attacker.example/steal>; rel="next"').send([1]),
        ),
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const api = createClient({ baseUrl: `http://127.0.0.1:${port}` });
    const items: unknown[] = [];
    await assert.rejects(async () => {
      for await (const item of api.paginate('/test/elsewhere' as '/api/v1/api-tokens')) items.push(item);
    }, /another origin/);
    assert.deepEqual(items, [1]);
  });

  it('reads Retry-After as seconds or a date, and Link headers with several targets', () => {
    assert.equal(retryAfterMs('2'), 2000);
    assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6000);
    assert.equal(retryAfterMs('soon'), null);
    assert.equal(retryAfterMs(null), null);
    assert.equal(nextLink('</a?x=1>; rel="prev", </b?cursor=c,d>; rel="next"'), '/b?cursor=c,d');
    assert.equal(nextLink('</a>; rel=next'), '/a');
    assert.equal(nextLink('</a>; rel="successor-version"'), null);
    assert.equal(nextLink(null), null);
  });
});
