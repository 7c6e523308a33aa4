// Property-based fuzzing (fast-check): requests generated from the schemas and well
// beyond them. Whatever arrives, the answer is a 2xx/3xx/4xx, every error is a
// catalogued problem+json, and no secret or hash comes back. FUZZ_RUNS sets the count
// (npm test: a few hundred per backend; npm run test:reliability: thousands).
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ERRORS, type ErrorCode } from '../../src/errors.js';
import { generateSecret, hashSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
const SCOPES = [
  'api-tokens:read',
  'api-tokens:write',
  'apps:read',
  'apps:write',
  'images:read',
  'plans:read',
  'catalog:write',
];
const NO_LIMITS = {
  RATE_LIMIT: '0',
  RATE_LIMIT_ANONYMOUS: '0',
  AUTH_FAILURE_LIMIT: '1000000',
  TOKEN_MAX_LIVE: '1000000',
  LOG_LEVEL: 'silent',
};

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\u202e',
    '\ud800',
    '💥'.repeat(60),
    'x'.repeat(5000),
    '../../etc/passwd',
    '%00',
    '<script>',
    '{"a":1}',
  ),
);

/** encodeURIComponent, but a lone surrogate becomes its (invalid) UTF-8 bytes instead of throwing. */
function enc(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
}

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

function arbitraries(secrets: { admin: string; reader: string; id: string }) {
  const tokenId = fc.oneof(fc.constant(secrets.id), fc.constant('tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H'), text.map(enc));
  const path = fc.oneof(
    fc.constantFrom(
      '/api/v1/api-tokens',
      '/api/v1/api-tokens/current',
      '/api/v1/api-tokens/introspect',
      '/api/v1/scopes',
      '/api/v1/audit-events',
      '/api/v1/images',
      '/api/v1/plans',
      '/api/v1/regions',
      '/api/v1/auth/check',
      '/api/v1/openapi.json',
      '/healthz',
      '/readyz',
      '/metrics',
      '/',
    ),
    tokenId.map((id) => `/api/v1/api-tokens/${id}`),
    tokenId.map((id) => `/api/v1/api-tokens/${id}/rotate`),
    fc.constant('/api/v1/webhooks'),
    fc
      .tuple(tokenId, fc.constantFrom('', '/test', '/rotate-secret', '/deliveries'))
      .map(([id, tail]) => `/api/v1/webhooks/${id}${tail}`),
    fc
      .tuple(
        fc.constantFrom('images', 'plans', 'regions'),
        fc.oneof(fc.constantFrom('ubuntu-24-04', 's-1vcpu-1gb', 'nyc3'), text.map(enc)),
      )
      .map(([k, s]) => `/api/v1/${k}/${s}`),
    fc.array(text.map(enc), { maxLength: 6 }).map((segs) => `/${segs.join('/')}`),
    fc.constantFrom(
      '/api/v1/auth/check/apps/1',
      '/api/v1/auth/check/../../x',
      '//api//v1//plans',
      '/api/v1/plans/',
      '/%',
      '/%zz',
      `/${'a'.repeat(10_000)}`,
    ),
  );
  const query = fc.option(
    fc
      .dictionary(
        fc.oneof(
          fc.constantFrom(
            'type',
            'min_vcpus',
            'min_memory_mb',
            'max_price_monthly',
            'available',
            'feature',
            'distribution',
            'scope',
            'access_token',
            'token',
            'action',
            'target_id',
            'account_id',
            'since',
            'until',
            'per_page',
            'cursor',
          ),
          fc.string({ maxLength: 10 }),
        ),
        fc.oneof(
          text,
          fc.integer().map(String),
          fc.constantFrom(
            'true',
            'false',
            '1.005',
            '-1',
            'general',
            'api_token.created',
            '2027-01-01T00:00:00Z',
            ...SCOPES,
          ),
        ),
        { maxKeys: 4 },
      )
      .map((q) => `?${new URLSearchParams(q).toString()}`),
    { nil: '' },
  );
  const authorization = fc.option(
    fc.oneof(
      fc.constant(`Bearer ${secrets.admin}`),
      fc.constant(`Bearer ${secrets.reader}`),
      fc.constant(`Bearer ${generateSecret('icat')}`),
      fc.constant(`Bearer ${secrets.admin.slice(0, -1)}x`),
      text.map((t) => `Bearer ${t}`),
      fc.constantFrom('Basic dTpw', 'Bearer', 'bearer  x y', `Bearer ${'A'.repeat(8000)}`),
    ),
    { nil: undefined },
  );
  const contentType = fc.option(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      '*/*',
      'application/json; charset=latin1',
      'application/merge-patch+json',
    ),
    { nil: undefined },
  );
  const createBody = fc.record(
    {
      name: fc.oneof(text, fc.integer(), fc.constant(null)),
      scopes: fc.oneof(fc.array(fc.oneof(fc.constantFrom(...SCOPES), text), { maxLength: 5 }), text, fc.constant(null)),
      expires_at: fc.oneof(
        fc.constant(null),
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        text,
      ),
      token: fc.oneof(fc.constant(secrets.reader), text),
      grace_period_s: fc.oneof(fc.integer({ min: -10, max: 100_000 }), fc.double(), text, fc.constant(null)),
    },
    { requiredKeys: [] },
  );
  const body = fc.option(
    fc.oneof(
      createBody.map((b) => JSON.stringify(b)),
      fc.json({ maxDepth: 3 }),
      text,
      fc.constantFrom(
        '{',
        '[1,2',
        '{"__proto__":{"x":1}}',
        '{"constructor":{"prototype":{}}}',
        `{"name":"${'x'.repeat(17_000)}"}`,
        'null',
        '""',
      ),
    ),
    { nil: undefined },
  );
  return fc.record({
    method: fc.constantFrom<Method>('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
    path,
    query,
    authorization,
    contentType,
    body,
    ifNoneMatch: fc.option(fc.oneof(text, fc.constant('*')), { nil: undefined }),
    requestId: fc.option(text, { nil: undefined }),
    originalUri: fc.option(text, { nil: undefined }),
  });
}

for (const backend of backends()) {
  describe(`fuzzing the HTTP surface on ${backend.name}`, () => {
    it(`${RUNS} generated requests: no 5xx, every error a catalogued problem, no secret echoed`, async (t) => {
      const db = await backend.fresh(t);
      const { app, logs } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...NO_LIMITS } });
      const admin = await mintToken(app, [
        'api-tokens:write',
        'apps:write',
        'images:read',
        'plans:read',
        'catalog:write',
        'audit-events:read',
      ]);
      const reader = await mintToken(app, ['api-tokens:read']);
      const secrets = { admin: admin.secret, reader: reader.secret, id: reader.id };
      const forbidden = [admin.secret, hashSecret(admin.secret), hashSecret(reader.secret)];

      await fc.assert(
        fc.asyncProperty(arbitraries(secrets), async (r) => {
          const headers: Record<string, string> = {};
          if (r.authorization !== undefined) headers.authorization = r.authorization;
          if (r.contentType !== undefined) headers['content-type'] = r.contentType;
          if (r.ifNoneMatch !== undefined) headers['if-none-match'] = r.ifNoneMatch;
          if (r.requestId !== undefined) headers['x-request-id'] = r.requestId;
          if (r.originalUri !== undefined) headers['x-original-uri'] = r.originalUri;
          // Drop what is not sendable as a header.
          for (const [k, v] of Object.entries(headers)) if (/[^\t\x20-\x7e\x80-\xff]/.test(v)) delete headers[k];
          const res = await app.inject({
            method: r.method,
            url: r.path + r.query,
            headers,
            ...(r.body !== undefined ? { payload: r.body } : {}),
          });
          const where =
            `${r.method} ${r.path.slice(0, 80)}${r.query.slice(0, 80)} -> ` +
            `${res.statusCode} ${res.body.slice(0, 200)}`;
          assert.ok(res.statusCode < 500, where);
          for (const f of forbidden) assert.ok(!res.body.includes(f), `secret or hash echoed: ${where}`);
          if (res.statusCode >= 400 && r.method !== 'HEAD') {
            assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8', where);
            const problem = JSON.parse(res.body) as { code: ErrorCode; status: number; title: string };
            assert.ok(problem.code in ERRORS, where);
            assert.equal(ERRORS[problem.code].status, res.statusCode, where);
            assert.equal(problem.status, res.statusCode, where);
          } else if (res.body !== '' && String(res.headers['content-type']).startsWith('application/json')) {
            JSON.parse(res.body);
          }
        }),
        { numRuns: RUNS, endOnFailure: true },
      );
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200, 'still healthy');
      for (const f of forbidden.slice(0, 1)) assert.ok(!logs.text.includes(f), 'no secret in the logs');
    });
  });
}

describe('fuzzing below HTTP: what the parser rejects', () => {
  const rawRequests = fc.oneof(
    fc.constantFrom(
      'FOO / HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET / HTTP/9.9\r\nHost: x\r\n\r\n',
      'GET /\u0000 HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET / HTTP/1.1\r\nNo-Colon-Here\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n',
      'POST /api/v1/api-tokens HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      '\r\n\r\n\r\n',
    ),
    fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 200 }).map((s) => `${s}\r\n\r\n`),
  );

  it(
    'malformed request lines and headers get a 4xx problem or a closed connection, and the server lives ' + 'on',
    async (t) => {
      const { app } = await build(t, { env: NO_LIMITS });
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as { port: number };
      await fc.assert(
        fc.asyncProperty(rawRequests, async (raw) => {
          const response = await new Promise<string>((resolve) => {
            const socket = net.connect(port, '127.0.0.1');
            let data = '';
            socket.setTimeout(3000, () => socket.destroy());
            socket.on('data', (c: Buffer) => (data += c.toString('latin1')));
            socket.on('close', () => resolve(data));
            socket.on('error', () => resolve(data));
            socket.end(raw);
          });
          if (response === '') return; // closed without an answer: allowed
          const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
          assert.ok(status >= 200 && status < 500, response.slice(0, 200));
          if (status >= 400)
            assert.match(response, /content-type: application\/problem\+json/i, response.slice(0, 300));
        }),
        { numRuns: Math.max(30, Math.floor(RUNS / 5)) },
      );
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(health.status, 200);
    },
  );
});
