// The error model: every failure is RFC 9457 problem+json with a catalogued code.
// Body-handling errors are exercised on a test-only route with a body schema, since
// the foundation's own routes take no body.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { ERRORS, ProblemSchema, problemType, type Problem } from '../../src/errors.js';
import type { App } from '../../src/http/types.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';

const Body = Type.Object(
  { name: Type.String({ minLength: 1 }), count: Type.Optional(Type.Integer()) },
  { additionalProperties: false },
);

function testRoutes(app: App): void {
  app.post('/test/echo', { schema: { body: Body } }, async (request) => ({ got: request.body.name }));
  app.get('/test/boom', async () => {
    throw new Error('connect ECONNREFUSED /var/lib/secret.sock at Pool.query (node_modules/pg/lib/x.js:1:1)');
  });
  app.get(
    '/test/query',
    { schema: { querystring: Type.Object({ n: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }) } },
    async (r) => ({ n: r.query.n }),
  );
}

function assertProblem(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code: keyof typeof ERRORS,
): Problem {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.headers['content-type'], PROBLEM_TYPE);
  const body = JSON.parse(res.body) as Problem;
  // The one declaration of a problem: what is sent is what the OpenAPI document describes.
  assert.ok(
    Value.Check(ProblemSchema, body),
    `${res.body} fits ProblemSchema: ${JSON.stringify([...Value.Errors(ProblemSchema, body)])}`,
  );
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.equal(body.title, ERRORS[code].title);
  assert.equal(body.type, problemType(code));
  assert.equal(typeof body.detail, 'string');
  assert.ok(body.detail.length > 0);
  assert.equal(body.request_id, res.headers['x-request-id']);
  return body;
}

describe('problem+json error model', () => {
  it('unknown route: 404 NOT_FOUND naming the path', async (t) => {
    const { app } = await build(t);
    const res = await app.inject({ method: 'GET', url: '/api/v1/nothing-here?x=1' });
    const body = assertProblem(res, 404, 'NOT_FOUND');
    assert.equal(body.instance, '/api/v1/nothing-here');
  });

  it('wrong method on a known path: 405 with Allow', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    const res = await app.inject({ method: 'DELETE', url: '/healthz' });
    assertProblem(res, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(res.headers.allow, 'GET, HEAD');
    const post = await app.inject({ method: 'GET', url: '/test/echo' });
    assertProblem(post, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(post.headers.allow, 'POST');
  });

  it('malformed JSON: 400 MALFORMED_JSON, and the body is not echoed', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    const res = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": "x",',
    });
    const body = assertProblem(res, 400, 'MALFORMED_JSON');
    assert.ok(!JSON.stringify(body).includes('"name": "x"'));
  });

  it('empty body declared as JSON: 400 MALFORMED_JSON', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    const res = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: '',
    });
    assertProblem(res, 400, 'MALFORMED_JSON');
  });

  it('prototype pollution attempt: 400', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    const res = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"name":"x","__proto__":{"admin":true}}',
    });
    assertProblem(res, 400, 'BAD_REQUEST');
  });

  it('unsupported media type: 415 for text/plain and form bodies', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await app.inject({
        method: 'POST',
        url: '/test/echo',
        headers: { 'content-type': type },
        payload: 'name=x',
      });
      assertProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
  });

  it('a JSON body with charset is accepted', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    const res = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      payload: '{"name":"x"}',
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { got: 'x' });
  });

  it('body over 16 KiB: 413 PAYLOAD_TOO_LARGE; exactly 16 KiB is accepted', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    const big = JSON.stringify({ name: 'x'.repeat(16 * 1024) });
    const res = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: big,
    });
    const body = assertProblem(res, 413, 'PAYLOAD_TOO_LARGE');
    assert.match(body.detail, /16384/);
    const exact = `{"name":"${'y'.repeat(16 * 1024 - 11)}"}`;
    assert.equal(Buffer.byteLength(exact), 16 * 1024);
    const ok = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: exact,
    });
    assert.equal(ok.statusCode, 200);
  });

  it('schema violations: 422 VALIDATION_FAILED with one JSON pointer per bad field', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    const res = await app.inject({ method: 'POST', url: '/test/echo', payload: { count: 'three', extra: true } });
    const body = assertProblem(res, 422, 'VALIDATION_FAILED');
    const errors = body.errors as { pointer: string; detail: string }[];
    const pointers = errors.map((e) => e.pointer).sort();
    assert.deepEqual(pointers, ['/count', '/extra', '/name']);
    assert.equal(errors.find((e) => e.pointer === '/name')?.detail, 'is required');
    // No coercion of body types: a number is not a string.
    const typed = await app.inject({ method: 'POST', url: '/test/echo', payload: { name: 5 } });
    assert.deepEqual(
      (assertProblem(typed, 422, 'VALIDATION_FAILED').errors as { pointer: string }[]).map((e) => e.pointer),
      ['/name'],
    );
  });

  it('bad or unknown query parameters: 400 INVALID_QUERY naming the parameter', async (t) => {
    const { app } = await build(t, { extend: testRoutes });
    const bad = assertProblem(await app.inject({ method: 'GET', url: '/test/query?n=zero' }), 400, 'INVALID_QUERY');
    assert.match(bad.detail, /\bn\b/);
    const unknown = assertProblem(
      await app.inject({ method: 'GET', url: '/test/query?n=1&sort=x' }),
      400,
      'INVALID_QUERY',
    );
    assert.match(unknown.detail, /sort/);
    const ok = await app.inject({ method: 'GET', url: '/test/query?n=3' });
    assert.deepEqual(ok.json(), { n: 3 });
  });

  it('unexpected errors: 500 INTERNAL without internals in the body, full error in the log', async (t) => {
    const { app, logs } = await build(t, { extend: testRoutes });
    const res = await app.inject({ method: 'GET', url: '/test/boom' });
    const body = assertProblem(res, 500, 'INTERNAL');
    for (const leak of ['ECONNREFUSED', 'secret.sock', 'node_modules', 'Pool.query', 'stack']) {
      assert.ok(!res.body.includes(leak), `500 body leaks ${leak}`);
    }
    assert.match(body.detail, /request_id/);
    const logged = logs.records().find((r) => r.msg === 'unhandled error');
    assert.ok(logged, 'the error is logged');
    assert.equal(logged.request_id, body.request_id);
    assert.match(JSON.stringify(logged.err), /ECONNREFUSED/);
  });

  it('a missing scope: 403 INSUFFICIENT_SCOPE, its extension members within the one Problem schema', async (t) => {
    const { app } = await build(t);
    const tok = await mintToken(app, ['apps:read']);
    const body = assertProblem(
      await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: tok.auth }),
      403,
      'INSUFFICIENT_SCOPE',
    );
    assert.deepEqual(body.missing_scopes, ['api-tokens:read']);
  });

  it('a HEAD request to an unknown path gets 404 without a body', async (t) => {
    const { app } = await build(t);
    const res = await app.inject({ method: 'HEAD', url: '/missing' });
    assert.equal(res.statusCode, 404);
    assert.equal(res.body, '');
  });
});
