// HTTP input and output hygiene against a hostile client: whatever it puts
// in a request, no secret comes back or reaches a log line in any encoding, the answer
// stays small, the body is read exactly or refused, credentials are taken from one
// place only, query numbers are plain decimals, and every refusal is a problem+json.
// FUZZ_RUNS sets the property runs (npm run test:reliability: thousands).
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { ERRORS, type ErrorCode } from '../../src/errors.js';
import type { InjectOptions } from 'fastify';
import type { App } from '../../src/http/types.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { secretPieceIn } from '../helpers/secrets.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
/** docs/errors.md: errors[] holds at most this many entries. */
const MAX_FIELD_ERRORS = 20;
const NO_LIMITS = {
  RATE_LIMIT: '0',
  RATE_LIMIT_ANONYMOUS: '0',
  AUTH_FAILURE_LIMIT: '1000000',
  TOKEN_MAX_LIVE: '1000000',
};

interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

function problemOf(res: Answer, status: number, code: ErrorCode): Record<string, unknown> & { detail: string } {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.headers['content-type'], PROBLEM_TYPE, res.body);
  const body = JSON.parse(res.body) as Record<string, unknown> & { detail: string };
  assert.equal(body.code, code, res.body);
  assert.equal(body.status, status);
  assert.equal(ERRORS[code].status, status, 'a catalogued code');
  return body;
}

// --- secrets in any encoding --------------------------------------------------------

/** Fails if any 12-character piece of the secret's random part can be read in the text, decoded or not. */
function assertNoSecret(text: string, secret: string, where: string): void {
  const view = secretPieceIn(text, secret);
  assert.ok(view === undefined, `${where} shows part of the secret ${secret}: ${view?.slice(0, 300)}`);
}

type Encoding = 0 | 1 | 2 | 3;
const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(2, '0');
/** Per character: 0 as is, 1 %XX, 2 %xx, 3 an escape of an escape (%25XX). */
function encode(text: string, how: readonly Encoding[]): string {
  return [...text]
    .map((c, i) => {
      const e = how[i % how.length]!;
      return e === 0 ? c : e === 1 ? `%${hex(c).toUpperCase()}` : e === 2 ? `%${hex(c)}` : `%25${hex(c).toUpperCase()}`;
    })
    .join('');
}

const PLACES = [
  'path',
  'slug',
  'query-name',
  'query-value',
  'scope-parameter',
  'body-key',
  'body-value',
  'original-uri',
  'request-id',
  'authorization',
] as const;
type Place = (typeof PLACES)[number];

function requestWith(place: Place, text: string, admin: string): InjectOptions {
  const auth = { authorization: `Bearer ${admin}` };
  const create = (body: unknown) => ({
    method: 'POST' as const,
    url: '/api/v1/api-tokens',
    headers: auth,
    payload: JSON.stringify(body),
  });
  switch (place) {
    case 'path':
      return { url: `/api/v1/${text}` };
    case 'slug':
      return { url: `/api/v1/images/${text}` };
    case 'query-name':
      return { url: `/api/v1/plans?${text}=1` };
    case 'query-value':
      return { url: `/api/v1/plans?type=${text}` };
    case 'scope-parameter':
      return { url: `/api/v1/auth/check?scope=${text}`, headers: auth };
    case 'body-key':
      return {
        ...create({ name: 'x', scopes: ['apps:read'], [text]: 1 }),
        headers: { ...auth, 'content-type': 'application/json' },
      };
    case 'body-value':
      return { ...create({ name: 'x', scopes: [text] }), headers: { ...auth, 'content-type': 'application/json' } };
    case 'original-uri':
      return { url: '/api/v1/auth/check', headers: { ...auth, 'x-original-uri': `/nowhere/${text}` } };
    case 'request-id':
      return { url: '/api/v1/nope', headers: { 'x-request-id': text } };
    case 'authorization':
      return { url: '/api/v1/api-tokens', headers: { authorization: `Bearer ${text}` } };
  }
}

describe('no secret comes back or reaches a log, in any encoding', () => {
  it('a secret in the problem instance, in a body key named by a pointer, in the access log', async (t) => {
    // Loopback (app.inject()'s peer) is a trusted proxy: its X-Request-Id is read, and refused when secret-shaped.
    const { app, logs } = await build(t, { env: { ...NO_LIMITS, TRUST_PROXY: '127.0.0.1' } });
    const admin = await mintToken(app, ['api-tokens:write']);
    const secret = generateSecret('icat');
    const random = secret.slice(5);
    const cases: [string, InjectOptions][] = [
      ['plain path', { url: `/api/v1/${secret}` }],
      ['%5F', { url: `/api/v1/icat%5F${random}` }],
      ['%5f', { url: `/api/v1/icat%5f${random}` }],
      ['%69', { url: `/api/v1/%69cat_${random}` }],
      ['every character', { url: `/api/v1/${encode(secret, [1])}` }],
      ['escapes of escapes', { url: `/api/v1/${encode(secret, [3])}` }],
      [
        'one escape in the random part',
        { url: `/api/v1/icat_${random.slice(0, 20)}%${hex(random[20]!)}${random.slice(21)}` },
      ],
      ['another prefix before it', { url: `/api/v1/x_${secret}` }],
      ['upper-case prefix', { url: `/api/v1/ICAT_${random}` }],
      [
        'body key',
        {
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'x', scopes: ['apps:read'], [secret]: 1 },
        },
      ],
      [
        'encoded body key',
        {
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'x', scopes: ['apps:read'], [`icat%5F${random}`]: 1 },
        },
      ],
      ['query name', { url: `/api/v1/plans?${secret}=1` }],
      ['secret-shaped X-Request-Id', { url: '/api/v1/nope', headers: { 'x-request-id': secret } }],
    ];
    for (const [name, request] of cases) {
      const before = logs.lines.length;
      const res = await app.inject(request);
      assert.ok(res.statusCode >= 400, `${name}: ${res.statusCode}`);
      assertNoSecret(res.body, secret, `${name}: the body`);
      assertNoSecret(JSON.stringify(res.headers), secret, `${name}: the headers`);
      const lines = logs.lines.slice(before);
      assert.ok(lines.length > 0, `${name}: logged`);
      assertNoSecret(lines.join('\n'), secret, `${name}: the log`);
    }
    // What remains readable: the path around it, the prefix, and where it was.
    const plain = (await app.inject({ url: `/api/v1/${secret}` })).json<{ instance: string }>();
    assert.equal(plain.instance, '/api/v1/icat_[REDACTED]');
    const encoded = (await app.inject({ url: `/api/v1/icat%5F${random}` })).json<{ instance: string }>();
    assert.equal(encoded.instance, '/api/v1/icat%5F[REDACTED]');
    const key = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: admin.auth,
      payload: { name: 'x', scopes: ['apps:read'], [secret]: 1 },
    });
    assert.deepEqual(key.json<{ errors: unknown[] }>().errors, [
      { pointer: '/icat_[REDACTED]', detail: 'is not a known field' },
    ]);
  });

  it(
    `${RUNS} random secrets (random prefixes), encoded at random, in ten places: none comes back or is ` + 'logged',
    async (t) => {
      // A prefix other than icat: redaction goes by shape, not by the configured prefix. Loopback
      // is a trusted proxy: a secret in its X-Request-Id is read, and must be refused.
      const { app, logs } = await build(t, {
        env: { ...NO_LIMITS, TOKEN_PREFIX: 'acme', LOG_LEVEL: 'debug', TRUST_PROXY: '127.0.0.1' },
      });
      const admin = await mintToken(app, ['api-tokens:write', 'apps:write']);
      assert.match(admin.secret, /^acme_/);
      const secrets = fc.stringMatching(/^[a-z][a-z0-9]{1,15}$/).map((prefix) => generateSecret(prefix));
      const encodings = fc.array(fc.constantFrom<Encoding>(0, 0, 1, 2, 3), { minLength: 1, maxLength: 60 });
      await fc.assert(
        fc.asyncProperty(secrets, encodings, fc.constantFrom(...PLACES), async (secret, how, place) => {
          // Headers take no escapes-as-text reading, so they get the secret as is.
          const text = place === 'request-id' || place === 'authorization' ? secret : encode(secret, how);
          const before = logs.lines.length;
          const res = await app.inject(requestWith(place, text, admin.secret));
          const where = `${place} ${text.slice(0, 80)} -> ${res.statusCode}`;
          assert.ok(res.statusCode < 500, where);
          assertNoSecret(res.body, secret, `${where}: the body`);
          assertNoSecret(JSON.stringify(res.headers), secret, `${where}: the headers`);
          assertNoSecret(logs.lines.slice(before).join('\n'), secret, `${where}: the log`);
        }),
        { numRuns: RUNS },
      );
    },
  );

  it(
    "the placeholders and prose of the service's own messages survive; the credentials they describe do " + 'not',
    async (t) => {
      const { app } = await build(t, { env: NO_LIMITS });
      const missing = problemOf(await app.inject({ url: '/api/v1/api-tokens' }), 401, 'UNAUTHORIZED');
      assert.equal(missing.detail, 'this endpoint needs a token: Authorization: Bearer <token>');
      const scheme = problemOf(
        await app.inject({ url: '/api/v1/api-tokens', headers: { authorization: 'Basic dTpw' } }),
        401,
        'UNAUTHORIZED',
      );
      assert.equal(scheme.detail, 'use the Authorization header with the Bearer scheme');
    },
  );
});

// --- the size of a problem ----------------------------------------------------------

describe('a problem stays small whatever the request holds', () => {
  it('3,000 query parameters (a 238 KB problem if each were listed) get a short INVALID_QUERY', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const url = `/api/v1/images?${Array.from({ length: 3000 }, (_, i) => String(i + 1)).join('&')}`;
    const res = await app.inject({ url });
    const body = problemOf(res, 400, 'INVALID_QUERY');
    assert.ok(res.body.length < 1000, `${res.body.length} bytes`);
    assert.match(body.detail, /too many query parameters/);
  });

  it(
    `errors[] holds the first ${MAX_FIELD_ERRORS} field errors and errors_omitted counts the rest (query and ` +
      'body)',
    async (t) => {
      const { app } = await build(t, { env: NO_LIMITS });
      const query = problemOf(
        await app.inject({ url: `/api/v1/plans?${Array.from({ length: 50 }, (_, i) => `p${i}=1`).join('&')}` }),
        400,
        'INVALID_QUERY',
      );
      assert.equal((query.errors as unknown[]).length, MAX_FIELD_ERRORS);
      assert.equal(query.errors_omitted, 50 - MAX_FIELD_ERRORS);
      assert.match(query.detail, /^invalid query parameter p0, p1, p2, p3, p4 and 45 more$/);

      const admin = await mintToken(app, ['api-tokens:write']);
      const payload = {
        name: 'x',
        scopes: ['apps:read'],
        ...Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i])),
      };
      const res = await app.inject({ method: 'POST', url: '/api/v1/api-tokens', headers: admin.auth, payload });
      const body = problemOf(res, 422, 'VALIDATION_FAILED');
      assert.equal((body.errors as unknown[]).length, MAX_FIELD_ERRORS);
      assert.equal(body.errors_omitted, 500 - MAX_FIELD_ERRORS);
      assert.ok(res.body.length < 3000, `${res.body.length} bytes`);
      const few = problemOf(
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: 'x', scopes: ['apps:read'], extra: 1 },
        }),
        422,
        'VALIDATION_FAILED',
      );
      assert.equal(few.errors_omitted, undefined, 'no count when nothing was left out');
    },
  );

  it('a detail is at most 500 characters, the cut marked', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const body = problemOf(await app.inject({ url: `/${'a'.repeat(5000)}` }), 404, 'NOT_FOUND');
    assert.equal(body.detail.length, 500);
    assert.ok(body.detail.endsWith('\u2026'));
  });
});

// --- request bodies -------------------------------------------------------------------

async function listen(app: App): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

/** One request over a fresh connection, the answer parsed (chunked bodies too; 1xx answers apart). */
function raw(port: number, request: string | Buffer): Promise<Answer & { interim: string[] }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer in 5 s')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      let text = Buffer.concat(chunks).toString('utf8');
      const interim: string[] = [];
      while (/^HTTP\/1\.1 1\d\d /.test(text)) {
        const end = text.indexOf('\r\n\r\n');
        interim.push(text.slice(0, end));
        text = text.slice(end + 4);
      }
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      let body = split < 0 ? '' : text.slice(split + 4);
      const headers: Record<string, string> = {};
      for (const line of head.split('\r\n').slice(1)) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      if (headers['transfer-encoding'] === 'chunked') {
        let out = '';
        for (let rest = body; ;) {
          const eol = rest.indexOf('\r\n');
          const size = parseInt(rest.slice(0, eol), 16);
          if (!(size > 0)) break;
          out += rest.slice(eol + 2, eol + 2 + size);
          rest = rest.slice(eol + 2 + size + 2);
        }
        body = out;
      }
      resolve({ statusCode: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers, body, interim });
    });
    socket.end(request);
  });
}

async function tokenNames(app: App, auth: Record<string, string>): Promise<string[]> {
  return (await app.inject({ url: '/api/v1/api-tokens', headers: auth }))
    .json<{ name: string }[]>()
    .map((tok) => tok.name);
}

describe('a request body is read exactly as UTF-8 JSON, or refused', () => {
  const create = (name: string) => `{"name":"${name}","scopes":["apps:read"]}`;

  it('a charset other than UTF-8: 415 naming it, nothing stored', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    const latin1 = Buffer.from(create('caf\u00e9'), 'latin1');
    for (const type of [
      'application/json; charset=iso-8859-1',
      'application/json; charset="ISO-8859-1"',
      'application/json;charset=latin1',
      'application/json; charset=windows-1252',
      'application/json; charset=us-ascii',
      'application/json; charset=utf-16',
    ]) {
      const body = problemOf(
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: { ...admin.auth, 'content-type': type },
          payload: latin1,
        }),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      );
      const named = /charset=("?)([^";]+)\1/i.exec(type)![2]!.toLowerCase();
      assert.ok(body.detail.includes(named), `${type}: ${body.detail}`);
    }
    for (const type of [
      'application/json; charset=utf-8; charset=latin1',
      'application/json; charset=utf-8; charset=utf8',
      'application/json; charset',
      'application/json; charset=utf-8 x',
    ]) {
      problemOf(
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: { ...admin.auth, 'content-type': type },
          payload: create('x'),
        }),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      );
    }
    assert.deepEqual(await tokenNames(app, admin.auth), ['test'], 'nothing created');
    // UTF-8, however it is spelled, is read.
    for (const [i, type] of [
      'application/json',
      'application/json; charset=utf-8',
      'Application/JSON;Charset=UTF-8',
      'application/json; charset="utf-8"',
      'application/json; charset=utf8',
      'application/json;',
    ].entries()) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...admin.auth, 'content-type': type },
        payload: Buffer.from(create(`caf\u00e9 ${i}`), 'utf8'),
      });
      assert.equal(res.statusCode, 201, `${type}: ${res.body}`);
      assert.equal(res.json<{ name: string }>().name, `caf\u00e9 ${i}`);
    }
  });

  it('any content coding: 415 with Accept-Encoding: identity; identity is fine', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    for (const coding of [
      'gzip',
      'GZIP',
      'x-gzip',
      'deflate',
      'br',
      'zstd',
      'compress',
      'identity, gzip',
      'gzip, identity',
    ]) {
      for (const payload of [gzipSync(create('zipped')), Buffer.from(create('not zipped'))]) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: { ...admin.auth, 'content-type': 'application/json', 'content-encoding': coding },
          payload,
        });
        const body = problemOf(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
        assert.match(body.detail, /Content-Encoding/);
        assert.equal(res.headers['accept-encoding'], 'identity');
      }
    }
    assert.deepEqual(await tokenNames(app, admin.auth), ['test'], 'nothing created');
    const plain = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: { ...admin.auth, 'content-type': 'application/json', 'content-encoding': 'identity' },
      payload: create('plain'),
    });
    assert.equal(plain.statusCode, 201, plain.body);
  });

  it('bytes that are not UTF-8: 400 MALFORMED_JSON, nothing stored with U+FFFD', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    const bad = {
      'latin-1 e-acute': [0xe9],
      'overlong /': [0xc0, 0xaf],
      'encoded surrogate': [0xed, 0xa0, 0x80],
      'truncated sequence': [0xe2, 0x82],
      'lone continuation byte': [0x80],
      'byte FF': [0xff],
      'above U+10FFFF': [0xf4, 0x90, 0x80, 0x80],
    };
    for (const [name, bytes] of Object.entries(bad)) {
      const payload = Buffer.concat([
        Buffer.from('{"name":"x'),
        Buffer.from(bytes),
        Buffer.from('","scopes":["apps:read"]}'),
      ]);
      const body = problemOf(
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: { ...admin.auth, 'content-type': 'application/json' },
          payload,
        }),
        400,
        'MALFORMED_JSON',
      );
      assert.match(body.detail, /UTF-8/, name);
    }
    assert.deepEqual(await tokenNames(app, admin.auth), ['test'], 'nothing created');
  });

  it('JSON escapes of lone surrogates: 400 MALFORMED_JSON; a real pair is a character', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    for (const payload of [
      '{"name":"x\\ud800","scopes":["apps:read"]}',
      '{"name":"\\udc00x","scopes":["apps:read"]}',
      '{"name":"x","scopes":["apps:read"],"\\ud83d":1}',
      '{"name":"x","scopes":["apps:read\\ud800"]}',
    ]) {
      problemOf(
        await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: { ...admin.auth, 'content-type': 'application/json' },
          payload,
        }),
        400,
        'MALFORMED_JSON',
      );
    }
    const pair = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: { ...admin.auth, 'content-type': 'application/json' },
      payload: '{"name":"boom \\ud83d\\udca5","scopes":["apps:read"]}',
    });
    assert.equal(pair.statusCode, 201, pair.body);
    assert.deepEqual(await tokenNames(app, admin.auth), ['test', 'boom \u{1f4a5}']);
  });

  it('one byte order mark is dropped; a second is refused', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const one = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: { ...admin.auth, 'content-type': 'application/json' },
      payload: Buffer.concat([bom, Buffer.from(create('bom'))]),
    });
    assert.equal(one.statusCode, 201, one.body);
    problemOf(
      await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...admin.auth, 'content-type': 'application/json' },
        payload: Buffer.concat([bom, bom, Buffer.from(create('two'))]),
      }),
      400,
      'MALFORMED_JSON',
    );
    assert.deepEqual(await tokenNames(app, admin.auth), ['test', 'bom']);
  });

  it('two Content-Type headers: 400', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    for (const types of [
      ['application/json', 'text/plain'],
      ['application/json', 'application/json'],
    ]) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens',
        headers: { ...admin.auth, 'content-type': types },
        payload: create('twice'),
      });
      assert.match(problemOf(res, 400, 'BAD_REQUEST').detail, /Content-Type/);
    }
  });

  it('a transfer coding Node does not remove (gzip, chunked): 400 on a real connection', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    const port = await listen(app);
    const zipped = gzipSync(create('zipped'));
    const res = await raw(
      port,
      Buffer.concat([
        Buffer.from(
          `POST /api/v1/api-tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin.secret}\r\n` +
            'Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n' +
            `${zipped.length.toString(16)}\r\n`,
        ),
        zipped,
        Buffer.from('\r\n0\r\n\r\n'),
      ]),
    );
    assert.match(problemOf(res, 400, 'BAD_REQUEST').detail, /Transfer-Encoding/);
  });

  it("introspection's form bodies follow the same rules", async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const reader = await mintToken(app, ['api-tokens:read']);
    const form = 'application/x-www-form-urlencoded';
    const introspect = (headers: Record<string, string>, payload: Buffer | string) =>
      app.inject({
        method: 'POST',
        url: '/api/v1/api-tokens/introspect',
        headers: { ...reader.auth, ...headers },
        payload,
      });
    problemOf(
      await introspect({ 'content-type': `${form}; charset=iso-8859-1` }, `token=${reader.secret}`),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    problemOf(
      await introspect({ 'content-type': form, 'content-encoding': 'gzip' }, gzipSync(`token=${reader.secret}`)),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    problemOf(
      await introspect(
        { 'content-type': form },
        Buffer.concat([Buffer.from(`token=${reader.secret}&x=`), Buffer.from([0xe9])]),
      ),
      400,
      'BAD_REQUEST',
    );
    const ok = await introspect({ 'content-type': `${form}; charset=UTF-8` }, `token=${reader.secret}`);
    assert.equal(ok.json<{ active: boolean }>().active, true);
  });
});

// --- every error is a problem ---------------------------------------------------------

describe('every refusal is a problem, whoever makes it', () => {
  it('Host: missing or repeated on HTTP/1.1 is a 400 problem; empty, or absent on HTTP/1.0, is fine', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const port = await listen(app);
    const missing = await raw(port, 'GET /api/v1/plans HTTP/1.1\r\nConnection: close\r\n\r\n');
    assert.match(problemOf(missing, 400, 'BAD_REQUEST').detail, /Host/);
    assert.match(String(missing.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    const twice = await raw(port, 'GET /api/v1/plans HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n');
    assert.match(problemOf(twice, 400, 'BAD_REQUEST').detail, /Host/);
    assert.equal((await raw(port, 'GET /healthz HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n')).statusCode, 200);
    assert.equal((await raw(port, 'GET /healthz HTTP/1.0\r\n\r\n')).statusCode, 200);
  });

  it('an expectation other than 100-continue: 417 problem; 100-continue still works', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const port = await listen(app);
    for (const expect of ['foo', '100-continue, foo', 'x=1']) {
      const res = await raw(
        port,
        `POST /api/v1/api-tokens HTTP/1.1\r\nHost: x\r\nExpect: ${expect}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
      );
      problemOf(res, 417, 'EXPECTATION_FAILED');
      assert.deepEqual(res.interim, [], `${expect}: no 100 Continue promised`);
    }
    const cont = await raw(
      port,
      'POST /api/v1/api-tokens HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n' +
        'Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
    );
    assert.deepEqual(cont.interim, ['HTTP/1.1 100 Continue']);
    problemOf(cont, 401, 'UNAUTHORIZED');
  });

  it(
    'with CORS on, an OPTIONS that is not a preflight answers as without CORS (405/404 problem), and unknown ' +
      'paths stay 404',
    async (t) => {
      const { app } = await build(t, { env: { ...NO_LIMITS, CORS_ORIGINS: 'https://console.example.com' } });
      const origin = 'https://console.example.com';
      for (const headers of [
        {},
        { origin },
        { 'access-control-request-method': 'GET' },
        { origin: '', 'access-control-request-method': 'GET' },
      ]) {
        const known = await app.inject({ method: 'OPTIONS', url: '/api/v1/plans', headers });
        problemOf(known, 405, 'METHOD_NOT_ALLOWED');
        assert.equal(known.headers.allow, 'GET, HEAD');
        problemOf(await app.inject({ method: 'OPTIONS', url: '/api/v1/nothing', headers }), 404, 'NOT_FOUND');
      }
      problemOf(await app.inject({ url: '/api/v1/nothing' }), 404, 'NOT_FOUND');
      problemOf(await app.inject({ method: 'DELETE', url: '/api/v1/nothing' }), 404, 'NOT_FOUND');
      const wrong = await app.inject({ method: 'DELETE', url: '/api/v1/plans' });
      problemOf(wrong, 405, 'METHOD_NOT_ALLOWED');
      assert.equal(wrong.headers.allow, 'GET, HEAD');
      // A real preflight is still answered as one.
      const pre = await app.inject({
        method: 'OPTIONS',
        url: '/api/v1/api-tokens',
        headers: { origin, 'access-control-request-method': 'POST' },
      });
      assert.equal(pre.statusCode, 204);
      assert.equal(pre.headers['access-control-allow-origin'], origin);
      // The forward-auth check takes OPTIONS from a gateway (no Origin) as it does without CORS.
      const tok = await mintToken(app, ['apps:read']);
      const check = await app.inject({
        method: 'OPTIONS',
        url: '/api/v1/auth/check?scope=apps:read',
        headers: tok.auth,
      });
      assert.equal(check.statusCode, 200, check.body);
    },
  );

  it(`${RUNS} generated requests with CORS on: every 4xx is a catalogued problem`, async (t) => {
    const { app } = await build(t, { env: { ...NO_LIMITS, CORS_ORIGINS: 'https://a.example', LOG_LEVEL: 'silent' } });
    const tok = await mintToken(app, ['api-tokens:write', 'apps:read', 'plans:read']);
    const request = fc.record({
      method: fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
      path: fc.constantFrom(
        '/api/v1/plans',
        '/api/v1/plans/s-1vcpu-1gb',
        '/api/v1/api-tokens',
        '/api/v1/api-tokens/introspect',
        '/api/v1/auth/check',
        '/api/v1/auth/check/apps/1',
        '/healthz',
        '/nope',
        '/',
      ),
      query: fc.constantFrom('', '?min_vcpus=0x10', '?Access_Token=x', '?scope=apps:read', `?${'a=1&'.repeat(5)}`),
      origin: fc.option(fc.constantFrom('https://a.example', 'https://evil.example', ''), { nil: undefined }),
      acrm: fc.option(fc.constantFrom('GET', 'POST', 'PUT', ''), { nil: undefined }),
      authorization: fc.option(
        fc.constantFrom(tok.auth.authorization, 'Bearer nope', 'Basic dTpw', [tok.auth.authorization, 'Bearer nope']),
        { nil: undefined },
      ),
      contentType: fc.option(
        fc.constantFrom(
          'application/json',
          'application/json; charset=latin1',
          'text/plain',
          'application/x-www-form-urlencoded; charset=utf-16',
        ),
        { nil: undefined },
      ),
      contentEncoding: fc.option(fc.constantFrom('gzip', 'identity', 'br'), { nil: undefined }),
      expect: fc.option(fc.constantFrom('100-continue', 'nonsense'), { nil: undefined }),
      body: fc.option(
        fc.oneof(
          fc.constantFrom('{"name":"x","scopes":["apps:read"]}', '{', 'token=x'),
          fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b)),
        ),
        { nil: undefined },
      ),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string | string[]> = {};
        if (r.origin !== undefined) headers.origin = r.origin;
        if (r.acrm !== undefined) headers['access-control-request-method'] = r.acrm;
        if (r.authorization !== undefined) headers.authorization = r.authorization;
        if (r.contentType !== undefined) headers['content-type'] = r.contentType;
        if (r.contentEncoding !== undefined) headers['content-encoding'] = r.contentEncoding;
        if (r.expect !== undefined) headers.expect = r.expect;
        const res = await app.inject({
          method: r.method as 'GET',
          url: r.path + r.query,
          headers,
          ...(r.body !== undefined ? { payload: r.body } : {}),
        });
        const where =
          `${r.method} ${r.path}${r.query} ${JSON.stringify(headers)} -> ` +
          `${res.statusCode} ${String(res.headers['content-type'])} ${res.body.slice(0, 200)}`;
        assert.ok(res.statusCode < 500, where);
        if (res.statusCode >= 400 && r.method !== 'HEAD') {
          assert.equal(res.headers['content-type'], PROBLEM_TYPE, where);
          const problem = JSON.parse(res.body) as { code: ErrorCode; status: number };
          assert.equal(ERRORS[problem.code]?.status, res.statusCode, where);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

// --- query strings -------------------------------------------------------------------

describe('query numbers are plain decimals', () => {
  it('min_vcpus and min_memory_mb refuse hex, exponents, signs, spaces, fractions and other digits', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const bad = [
      '0x10',
      '0X10',
      '1e3',
      '1E1',
      ' 5 ',
      ' 5',
      '5 ',
      '+5',
      '-5',
      '5.0',
      '5.',
      '.5',
      '',
      '0',
      '05',
      '0b11',
      '0o7',
      '1_000',
      '1,000',
      'Infinity',
      'NaN',
      '\u0665',
      '\uff15',
      '99999999999',
    ];
    for (const name of ['min_vcpus', 'min_memory_mb']) {
      for (const value of bad) {
        const body = problemOf(
          await app.inject({ url: `/api/v1/plans?${name}=${encodeURIComponent(value)}` }),
          400,
          'INVALID_QUERY',
        );
        assert.deepEqual(
          (body.errors as { pointer: string }[]).map((e) => e.pointer),
          [`querystring:/${name}`],
          `${name}=${JSON.stringify(value)}`,
        );
      }
    }
    const all = (await app.inject({ url: '/api/v1/plans' })).json<{ vcpus: number; memory_mb: number }[]>();
    const eight = (await app.inject({ url: '/api/v1/plans?min_vcpus=8' })).json<{ vcpus: number }[]>();
    assert.equal(eight.length, all.filter((p) => p.vcpus >= 8).length);
    assert.ok(eight.length > 0);
    const memory = (await app.inject({ url: '/api/v1/plans?min_memory_mb=16384' })).json<unknown[]>();
    assert.equal(memory.length, all.filter((p) => p.memory_mb >= 16384).length);
  });

  it('max_price_monthly and available are as strict', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    for (const value of ['0x18', '2.4e1', ' 24', '24 ', '+24', '24.', '.5', '24.001', '-1']) {
      problemOf(
        await app.inject({ url: `/api/v1/plans?max_price_monthly=${encodeURIComponent(value)}` }),
        400,
        'INVALID_QUERY',
      );
    }
    for (const value of ['1', '0', 'yes', 'TRUE', ' true', 'true ', '']) {
      problemOf(
        await app.inject({ url: `/api/v1/regions?available=${encodeURIComponent(value)}` }),
        400,
        'INVALID_QUERY',
      );
    }
    assert.equal((await app.inject({ url: '/api/v1/regions?available=true' })).statusCode, 200);
  });

  it('the OpenAPI document types them as integers with their bounds', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, { get: { parameters: { name: string; schema: Record<string, unknown> }[] } }>;
    }>();
    const params = Object.fromEntries(doc.paths['/api/v1/plans']!.get.parameters.map((p) => [p.name, p.schema]));
    for (const name of ['min_vcpus', 'min_memory_mb']) {
      assert.equal(params[name]!.type, 'integer', name);
      assert.equal(params[name]!.minimum, 1, name);
    }
  });
});

// --- credentials ---------------------------------------------------------------------

describe('credentials are taken from one Authorization header only', () => {
  it('credential-named query parameters are refused in any case and any encoding, everywhere', async (t) => {
    const { app, logs } = await build(t, { env: NO_LIMITS });
    const tok = await mintToken(app, ['api-tokens:read', 'apps:read']);
    const names = [
      'access_token',
      'Access_Token',
      'ACCESS_TOKEN',
      'Token',
      'TOKEN',
      'Api_Key',
      'API_KEY',
      'ApiKey',
      'APIKEY',
      '%61ccess_token',
      'acc%65ss_TOKEN',
      '%54oken',
      'access%5Ftoken',
    ];
    for (const path of ['/api/v1/plans', '/api/v1/api-tokens', '/api/v1/auth/check', '/healthz']) {
      for (const name of names) {
        const res = await app.inject({ url: `${path}?${name}=${tok.secret}`, headers: tok.auth });
        problemOf(res, 400, 'TOKEN_IN_QUERY');
        assert.match(String(res.headers['www-authenticate']), /error="invalid_request"/);
        assertNoSecret(res.body, tok.secret, `${path}?${name}`);
      }
    }
    assertNoSecret(logs.text, tok.secret, 'the log');
  });

  it('two Authorization headers: 400 invalid_request on every kind of route, whichever comes first', async (t) => {
    const { app } = await build(t, { env: NO_LIMITS });
    const tok = await mintToken(app, ['api-tokens:read', 'apps:read', 'plans:read']);
    const pairs = [
      [tok.auth.authorization, 'Bearer nope'],
      ['Bearer nope', tok.auth.authorization],
      [tok.auth.authorization, tok.auth.authorization],
      ['', tok.auth.authorization],
    ];
    const requests = [
      { url: '/api/v1/api-tokens' },
      { url: '/api/v1/plans' },
      { url: '/api/v1/auth/check?scope=apps:read' },
      { url: '/api/v1/auth/check/apps/1' },
      { method: 'POST' as const, url: '/api/v1/api-tokens/introspect', payload: { token: tok.secret } },
    ];
    for (const r of requests) {
      for (const pair of pairs) {
        // An array is the header sent once per value (light-my-request, as Node receives it).
        const res = await app.inject({ ...r, headers: { authorization: pair as unknown as string } });
        assert.match(
          problemOf(res, 400, 'BAD_REQUEST').detail,
          /one Authorization header/,
          `${r.url} ${pair.map((p) => p.slice(0, 12)).join(' / ')}`,
        );
        assert.match(String(res.headers['www-authenticate']), /error="invalid_request"/);
      }
      assert.equal((await app.inject({ ...r, headers: tok.auth })).statusCode, 200, `${r.url} with one header`);
    }
    // On a real connection too (Node's own header handling, not the test client's).
    const port = await listen(app);
    const res = await raw(
      port,
      `GET /api/v1/api-tokens HTTP/1.1\r\nHost: x\r\nAuthorization: ${tok.auth.authorization}\r\n` +
        'authorization: Bearer nope\r\nConnection: close\r\n\r\n',
    );
    problemOf(res, 400, 'BAD_REQUEST');
  });
});
