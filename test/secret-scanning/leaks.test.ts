// POST /api/v1/secret-scanning/leaks, end to end with GitHub's side played locally (a
// P-256 key pair written to a key file, reports signed over their bytes): a reported
// live secret stops working at once, audited with the URL and source and no secret; a
// grace-period previous secret loses its grace; everything else is a false_positive and
// revokes nothing; every unsigned, wrongly signed or malformed report is refused.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { utimesSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ConfigError } from '../../src/config-error.js';
import { BODY_LIMIT_BYTES, buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import type { Store } from '../../src/storage/types.js';
import { generateSecret } from '../../src/tokens/format.js';
import { MAX_REPORT_ENTRIES } from '../../src/secret-scanning/schemas.js';
import { build, mintToken, PROBLEM_TYPE, type Built } from '../helpers/app.js';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { backends, type Backend } from '../helpers/backends.js';
import { rawRequest } from '../helpers/raw-http.js';
import { secretPieceIn } from '../helpers/secrets.js';
import { signature, signedHeaders, signingKey, writeKeyFile, type SigningKey } from '../helpers/secret-scanning.js';
import { tempDir } from '../helpers/sqlite.js';
import { runCli } from '../helpers/process.js';

const PATH = '/api/v1/secret-scanning/leaks';
const CHALLENGE = 'GitHub-Public-Key-Signature realm="infracat"';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

interface Scanner {
  built: Built;
  key: SigningKey;
  keyFile: string;
  /** POSTs `body` (an array is JSON-encoded) signed by `key` (default: the configured one), with extra headers. */
  report(
    body: unknown,
    options?: { key?: SigningKey; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
}

/** An app with a key file holding one fresh key. */
async function scanner(
  t: TestContext,
  options: { store?: Store; env?: Record<string, string> } = {},
): Promise<Scanner> {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const key = signingKey();
  const keyFile = writeKeyFile(tmp.file('github-keys.json'), [key]);
  const built = await build(t, {
    ...(options.store ? { store: options.store } : {}),
    env: { SECRET_SCANNING_KEYS_FILE: keyFile, ...options.env },
  });
  return {
    built,
    key,
    keyFile,
    report: (body, o = {}) => {
      const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
      return built.app.inject({
        method: 'POST',
        url: PATH,
        payload,
        headers: { ...signedHeaders(o.key ?? key, payload), ...o.headers },
      });
    },
  };
}

/** A token made through the API, in use (so cached), with its secret. */
async function liveToken(built: Built, name = 'leaky'): Promise<{ id: string; secret: string }> {
  const admin = await mintToken(built.app, ['api-tokens:write', 'apps:read']);
  const res = await built.app.inject({
    method: 'POST',
    url: '/api/v1/api-tokens',
    headers: admin.auth,
    payload: { name, scopes: ['apps:read'] },
  });
  assert.equal(res.statusCode, 201, res.body);
  const { id, token } = res.json<{ id: string; token: string }>();
  assert.equal(await status(built, token), 200, 'works (and is cached) before the report');
  return { id, secret: token };
}

async function status(built: Built, secret: string): Promise<number> {
  const res = await built.app.inject({
    method: 'GET',
    url: '/api/v1/api-tokens/current',
    headers: { authorization: `Bearer ${secret}` },
  });
  return res.statusCode;
}

async function revocations(built: Built) {
  return built.store.audit.list({ action: 'api_token.revoked_leaked', limit: 100 });
}

function refusedAsUnsigned(res: LightMyRequestResponse, detail: RegExp): void {
  assert.equal(res.statusCode, 401, res.body);
  assert.equal(res.headers['content-type'], PROBLEM_TYPE);
  assert.equal(res.headers['www-authenticate'], CHALLENGE);
  const problem = res.json<{ code: string; detail: string }>();
  assert.equal(problem.code, 'INVALID_SIGNATURE');
  assert.match(problem.detail, detail);
}

const URL_FOUND = 'https://github.com/octo/app/blob/1a2b3c/deploy.sh';

for (const backend of backends()) {
  describe(`secret scanning reports (${backend.name})`, () => {
    async function onBackend(t: TestContext, b: Backend = backend) {
      const db = await b.fresh(t);
      return scanner(t, { store: db.open() });
    }

    it('a reported live secret: true_positive, refused at once, audited with url and source', async (t) => {
      const s = await onBackend(t);
      const { built } = s;
      const leaked = await liveToken(built);
      const entry = { token: leaked.secret, type: 'infracat_api_token', url: URL_FOUND, source: 'content' };
      const res = await s.report([entry], { headers: { 'user-agent': 'GitHub-Hookshot/secret-scanning' } });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.deepEqual(res.json(), [
        { token_hash: sha256(leaked.secret), token_type: 'infracat_api_token', label: 'true_positive' },
      ]);
      assert.equal(secretPieceIn(res.body, leaked.secret), undefined, 'the answer never echoes the secret');

      assert.equal(await status(built, leaked.secret), 401, 'refused at once by the instance that got the report');
      const admin = await mintToken(built.app, ['api-tokens:read']);
      const gone = await built.app.inject({ url: `/api/v1/api-tokens/${leaked.id}`, headers: admin.auth });
      assert.equal(gone.statusCode, 404, 'a leaked current secret deletes the token');

      const [event, ...more] = await revocations(built);
      assert.equal(more.length, 0);
      assert.ok(event);
      assert.equal(event.targetId, leaked.id);
      assert.equal(event.targetName, 'leaky');
      assert.equal(event.accountId, OPERATOR_ACCOUNT_ID);
      assert.deepEqual(
        { type: event.actorType, id: event.actorId, name: event.actorName },
        { type: 'secret_scanning', id: s.key.id, name: 'GitHub secret scanning' },
      );
      assert.deepEqual(event.details, {
        secret: 'current',
        type: 'infracat_api_token',
        url: URL_FOUND,
        source: 'content',
      });
      assert.equal(event.requestId, res.headers['x-request-id']);
      assert.equal(event.userAgent, 'GitHub-Hookshot/secret-scanning');
      assert.equal(event.ip, '127.0.0.1');
      assert.equal(secretPieceIn(JSON.stringify(event), leaked.secret), undefined, 'no secret in the event');
      assert.equal(secretPieceIn(built.logs.text, leaked.secret), undefined, 'no secret in any log line');
      const audit = built.logs.records().find((r) => r.audit === true && JSON.stringify(r).includes('revoked_leaked'));
      assert.ok(audit, 'the revocation is an audit log line too');
      const line = built.logs.records().find((r) => r.msg === 'secret scanning report');
      assert.deepEqual(
        { key: line?.key_identifier, reported: line?.reported, hits: line?.true_positives },
        { key: s.key.id, reported: 1, hits: 1 },
      );

      // Reported again (GitHub retries): nothing left to revoke.
      const again = await s.report([entry]);
      assert.equal(again.json<{ label: string }[]>()[0]!.label, 'false_positive');
      assert.equal((await revocations(built)).length, 1);
    });

    it('a grace-period previous secret: its grace ends at once; the token keeps its new secret', async (t) => {
      const s = await onBackend(t);
      const { built } = s;
      const token = await liveToken(built);
      const rotated = await built.app.infracat.tokens.service.rotate(
        OPERATOR_ACCOUNT_ID,
        token.id,
        { grace_period_s: 3600 },
        null,
        TEST_CONTEXT,
      );
      assert.ok(rotated);
      assert.equal(await status(built, token.secret), 200, 'the old secret is in its grace period');
      assert.equal(await status(built, rotated.secret), 200);

      const res = await s.report([
        { token: token.secret, type: 'infracat_api_token', url: URL_FOUND, source: 'commit' },
      ]);
      assert.deepEqual(res.json(), [
        { token_hash: sha256(token.secret), token_type: 'infracat_api_token', label: 'true_positive' },
      ]);
      assert.equal(await status(built, token.secret), 401, 'the leaked previous secret is refused at once');
      assert.equal(await status(built, rotated.secret), 200, 'the current secret still works');
      const [event] = await revocations(built);
      assert.deepEqual(event?.details, {
        secret: 'previous',
        type: 'infracat_api_token',
        url: URL_FOUND,
        source: 'commit',
      });
      assert.equal(event?.targetId, token.id);

      const again = await s.report([{ token: token.secret, type: 'infracat_api_token' }]);
      assert.equal(again.json<{ label: string }[]>()[0]!.label, 'false_positive', 'no grace left to end');
      assert.equal((await revocations(built)).length, 1);
    });

    it('a mixed report: one label per entry, in order; only live secrets revoked, in any account', async (t) => {
      const s = await onBackend(t);
      const { built } = s;
      const a = await liveToken(built, 'a');
      const b = await liveToken(built, 'b');
      const customer = await built.app.infracat.accounts.create({ name: 'Acme' }, TEST_CONTEXT);
      const theirs = await built.app.infracat.tokens.service.create(
        { name: 'theirs', scopes: ['apps:read'] },
        null,
        customer.id,
        TEST_CONTEXT,
      );
      const bystander = await liveToken(built, 'bystander');
      const unknown = generateSecret('icat');
      const last = a.secret.at(-1) === 'A' ? 'B' : 'A';
      const badChecksum = `${a.secret.slice(0, -1)}${last}`;
      const entries = [
        { token: a.secret, type: 'infracat_api_token', url: URL_FOUND },
        { token: unknown, type: 'infracat_api_token' },
        { token: 'not a token at all', type: 'infracat_api_token', source: 'content' },
        { token: badChecksum, type: 'infracat_api_token' },
        { token: generateSecret('acme'), type: 'other_type' },
        { token: a.secret, type: 'infracat_api_token', url: 'https://github.com/elsewhere' },
        { token: theirs.secret, type: 'infracat_api_token', extra: { added: 'by GitHub later' } },
        { token: b.secret, type: 'infracat_api_token', source: 'npm' },
        { token: '', type: '' },
      ];
      const res = await s.report(entries);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        res.json(),
        entries.map((e, i) => ({
          token_hash: sha256(e.token),
          token_type: e.type,
          label: [0, 5, 6, 7].includes(i) ? 'true_positive' : 'false_positive',
        })),
      );
      assert.equal(await status(built, a.secret), 401);
      assert.equal(await status(built, b.secret), 401);
      assert.equal(await status(built, theirs.secret), 401, "another account's token is revoked too");
      assert.equal(await status(built, bystander.secret), 200, 'an unreported token is untouched');
      const events = await revocations(built);
      assert.deepEqual(events.map((e) => e.targetId).sort(), [a.id, b.id, theirs.token.id].sort());
      assert.equal(
        events.find((e) => e.targetId === theirs.token.id)?.accountId,
        customer.id,
        "in the token's account's trail",
      );
      for (const secret of [a.secret, b.secret, theirs.secret, unknown])
        assert.equal(secretPieceIn(res.body, secret), undefined);
    });

    it('revoked at once where reported, and on another instance within TOKEN_CACHE_TTL_MS', async (t) => {
      const db = await backend.fresh(t);
      const env = { TOKEN_CACHE_TTL_MS: '500' };
      const a = await scanner(t, { store: db.open(), env });
      const b = await build(t, { store: db.open(), env });
      const current = await liveToken(a.built, 'current');
      const rotatedOut = await liveToken(a.built, 'rotated');
      const rotated = await a.built.app.infracat.tokens.service.rotate(
        OPERATOR_ACCOUNT_ID,
        rotatedOut.id,
        { grace_period_s: 3600 },
        null,
        TEST_CONTEXT,
      );
      assert.ok(rotated);
      for (const secret of [current.secret, rotatedOut.secret, rotated.secret])
        assert.equal(await status(b, secret), 200, 'works on the other instance (and is cached there)');
      const res = await a.report([
        { token: current.secret, type: 'infracat_api_token' },
        { token: rotatedOut.secret, type: 'infracat_api_token' },
      ]);
      assert.deepEqual(
        res.json<{ label: string }[]>().map((l) => l.label),
        ['true_positive', 'true_positive'],
      );
      const reportedAt = Date.now();
      assert.equal(await status(a.built, current.secret), 401);
      assert.equal(await status(a.built, rotatedOut.secret), 401);
      await new Promise((r) => setTimeout(r, 500 + 100));
      assert.equal(await status(b, current.secret), 401, 'the deleted token, after the bound');
      assert.equal(await status(b, rotatedOut.secret), 401, 'the ended grace period, after the bound');
      assert.equal(await status(b, rotated.secret), 200, 'the new secret still works there');
      assert.ok(Date.now() - reportedAt < 2000);
    });

    it('unsigned, wrongly signed or tampered reports: 401, nothing revoked', async (t) => {
      const s = await onBackend(t);
      const { built } = s;
      const leaked = await liveToken(built);
      const body = JSON.stringify([{ token: leaked.secret, type: 'infracat_api_token', url: URL_FOUND }]);
      const send = (headers: Record<string, string>, payload: string | Buffer = body) =>
        built.app.inject({
          method: 'POST',
          url: PATH,
          payload,
          headers: { 'content-type': 'application/json', ...headers },
        });
      const good = signedHeaders(s.key, body);
      const id = good['github-public-key-identifier'];
      const sig = good['github-public-key-signature'];

      refusedAsUnsigned(await send({}), /identifier header is missing/);
      refusedAsUnsigned(await send({ 'github-public-key-identifier': id }), /signature header is missing/);
      refusedAsUnsigned(await send({ 'github-public-key-signature': sig }), /identifier header is missing/);
      refusedAsUnsigned(
        await send({ 'github-public-key-identifier': 'f'.repeat(64), 'github-public-key-signature': sig }),
        /names no configured key/,
      );
      // The configured identifier, signed by another key (whoever made it does not hold GitHub's).
      const stranger = signingKey(s.key.id);
      refusedAsUnsigned(await s.report(body, { key: stranger }), /signature does not match the body's bytes/);
      // One byte changed after signing: in the token, in the URL, and a space added.
      for (const tampered of [
        body.replace(leaked.secret, `${leaked.secret.slice(0, -1)}${leaked.secret.at(-1) === 'a' ? 'b' : 'a'}`),
        body.replace('deploy.sh', 'deploy.sx'),
        `${body} `,
      ]) {
        assert.equal(tampered.length >= body.length, true);
        refusedAsUnsigned(await send(good, tampered), /signature does not match/);
      }
      refusedAsUnsigned(
        await send({ 'github-public-key-identifier': id, 'github-public-key-signature': `${sig.slice(0, -4)}!!!!` }),
        /not the base64 of a signature/,
      );
      // A signature of the empty body does not sign a body, nor one of another body this one.
      refusedAsUnsigned(await send(signedHeaders(s.key, '')), /does not match/);
      refusedAsUnsigned(await send(signedHeaders(s.key, '[]')), /does not match/);
      // Whatever its content type: an unsigned body is refused before it is read.
      refusedAsUnsigned(await send({ 'content-type': 'text/plain' }), /identifier header is missing/);
      refusedAsUnsigned(await send({ ...good, 'content-type': 'text/plain' }, `${body} `), /does not match/);
      // Verified before it is parsed: a wrongly signed body is not told what is wrong with its JSON.
      refusedAsUnsigned(await send(good, '[{"token": '), /does not match/);
      // Refused before the body is read: an unsigned body past the limit is a 401, not a 413.
      refusedAsUnsigned(await send({}, 'x'.repeat(BODY_LIMIT_BYTES + 1)), /identifier header is missing/);

      assert.equal(await status(built, leaked.secret), 200, 'still works: nothing was revoked');
      assert.equal((await revocations(built)).length, 0);
      assert.equal(secretPieceIn(built.logs.text, leaked.secret), undefined);
    });
  });
}

describe('secret scanning reports: the request, read exactly', () => {
  it('a repeated signature header: 401 (which one would be meant?)', async (t) => {
    const s = await scanner(t);
    const { app } = s.built;
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const leaked = await liveToken(s.built);
    const body = JSON.stringify([{ token: leaked.secret, type: 'infracat_api_token' }]);
    const good = signedHeaders(s.key, body);
    const other = signature(signingKey(), body);
    const send = (headers: [string, string][]) =>
      rawRequest(port, 'POST', PATH, [['Content-Type', 'application/json'], ...headers], body);
    const id = good['github-public-key-identifier'];
    const sig = good['github-public-key-signature'];
    for (const headers of [
      [
        ['Github-Public-Key-Identifier', id],
        ['GITHUB-PUBLIC-KEY-IDENTIFIER', id],
        ['Github-Public-Key-Signature', sig],
      ],
      [
        ['Github-Public-Key-Identifier', id],
        ['Github-Public-Key-Signature', sig],
        ['github-public-key-signature', other],
      ],
      [
        ['Github-Public-Key-Identifier', id],
        ['Github-Public-Key-Signature', other],
        ['Github-Public-Key-Signature', sig],
      ],
    ] as [string, string][][]) {
      const res = await send(headers);
      assert.equal(res.status, 401, res.body);
      assert.match(res.body, /send exactly one github-public-key-/);
      assert.equal(res.headers['www-authenticate'], CHALLENGE);
    }
    const ok = await send([
      ['GITHUB-PUBLIC-KEY-IDENTIFIER', id],
      ['github-public-key-signature', sig],
    ]);
    assert.equal(ok.status, 200, 'header names in any case');
    assert.equal(await status(s.built, leaked.secret), 401);
  });

  it('a signed body that is not the report: 413 over the limit, 415, 400, 422; nothing revoked', async (t) => {
    const s = await scanner(t);
    const { built } = s;
    const leaked = await liveToken(built);
    const entry = { token: leaked.secret, type: 'infracat_api_token' };
    const problem = (res: LightMyRequestResponse, statusCode: number, code: string) => {
      assert.equal(res.statusCode, statusCode, res.body);
      assert.equal(res.headers['content-type'], PROBLEM_TYPE);
      const body = res.json<{ code: string; errors?: { pointer: string; detail: string }[] }>();
      assert.equal(body.code, code);
      assert.equal(secretPieceIn(res.body, leaked.secret), undefined, 'no secret in the problem');
      return body;
    };

    // Over the body limit: 413, signed or not (the bytes are not read past the limit).
    const big = JSON.stringify([{ ...entry, url: 'x'.repeat(BODY_LIMIT_BYTES) }]);
    problem(await s.report(big), 413, 'PAYLOAD_TOO_LARGE');
    // Exactly at the limit it is read (and refused only for its content).
    const padded = `${JSON.stringify([entry])}`.padEnd(BODY_LIMIT_BYTES, ' ');
    assert.equal(Buffer.byteLength(padded), BODY_LIMIT_BYTES);
    assert.equal((await s.report(padded)).statusCode, 200);
    const entry2 = await liveToken(built, 'second');
    const e2 = { token: entry2.secret, type: 'infracat_api_token' };

    // Malformed JSON after a valid signature.
    const m = problem(await s.report(`[${JSON.stringify(e2)}`), 400, 'MALFORMED_JSON');
    assert.ok(m);
    problem(await s.report(Buffer.from([0x5b, 0xff, 0x5d])), 400, 'MALFORMED_JSON');
    problem(await s.report(''), 400, 'MALFORMED_JSON');
    problem(await s.report('[{"__proto__": {"x": 1}, "token": "a", "type": "b"}]'), 400, 'BAD_REQUEST');
    // Signed, but not JSON by its headers.
    const body = JSON.stringify([e2]);
    problem(await s.report(body, { headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    problem(
      await s.report(body, { headers: { 'content-type': 'application/json; charset=latin1' } }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    problem(await s.report(body, { headers: { 'content-encoding': 'gzip' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    const bare = await s.built.app.inject({
      method: 'POST',
      url: PATH,
      payload: body,
      headers: {
        'github-public-key-identifier': s.key.id,
        'github-public-key-signature': signature(s.key, body),
      },
    });
    problem(bare, 415, 'UNSUPPORTED_MEDIA_TYPE');
    // Schema violations.
    const invalid = async (payload: unknown, pointer: string) => {
      const p = problem(await s.report(payload), 422, 'VALIDATION_FAILED');
      assert.ok(
        p.errors?.some((e) => e.pointer === pointer),
        `${JSON.stringify(p.errors)} has ${pointer}`,
      );
    };
    await invalid({ token: e2.token, type: 't' }, '');
    await invalid([{ type: 't' }], '/0/token');
    await invalid([{ token: e2.token }], '/0/type');
    await invalid([e2, { token: 5, type: 't' }], '/1/token');
    await invalid([e2, { token: e2.token, type: 't', url: 7 }], '/1/url');
    await invalid([e2, { token: e2.token, type: 't', source: null }], '/1/source');
    await invalid([e2, 'icat_'], '/1');
    await invalid(
      Array.from({ length: MAX_REPORT_ENTRIES + 1 }, () => ({ token: '', type: '' })),
      '',
    );
    const atCap = await s.report(Array.from({ length: MAX_REPORT_ENTRIES }, () => ({ token: '', type: '' })));
    assert.equal(atCap.statusCode, 200, `${MAX_REPORT_ENTRIES} entries are accepted`);

    assert.equal(await status(built, entry2.secret), 200, 'no refused report revoked anything');
    assert.equal((await revocations(built)).length, 1, 'only the one at the limit');
  });

  it('counts against the anonymous rate limit before the signature is checked', async (t) => {
    const s = await scanner(t, { env: { RATE_LIMIT_ANONYMOUS: '3' } });
    const { app } = s.built;
    const unsigned = () =>
      app.inject({ method: 'POST', url: PATH, payload: '[]', headers: { 'content-type': 'application/json' } });
    const first = await unsigned();
    assert.equal(first.statusCode, 401);
    assert.equal(first.headers['ratelimit-policy'], '"anonymous";q=3;w=60');
    assert.match(String(first.headers.ratelimit), /^"anonymous";r=2;t=\d+$/);
    assert.equal((await s.report([])).statusCode, 200);
    assert.equal((await unsigned()).statusCode, 401);
    const limited = await s.report([]);
    assert.equal(limited.statusCode, 429, 'a signed report counts too');
    assert.equal(limited.json<{ code: string }>().code, 'RATE_LIMITED');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    assert.equal((await unsigned()).statusCode, 429, 'past the limit nothing is verified');
  });

  it('a changed key file is taken in: a new key accepted, a removed one refused, without a restart', async (t) => {
    const s = await scanner(t);
    const next = signingKey();
    writeKeyFile(s.keyFile, [next]);
    utimesSync(s.keyFile, new Date(), new Date(Date.now() + 5000));
    // The file is asked about at most once a second.
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await s.report([], { key: next })).statusCode, 200);
    refusedAsUnsigned(await s.report([]), /names no configured key/);
    const reloaded = s.built.logs.records().find((r) => r.msg === 'secret scanning keys file changed: keys reloaded');
    assert.deepEqual(reloaded?.key_identifiers, [next.id]);
  });

  it('fuzzed: random bodies and signatures are refused; random signed bodies never reach a 5xx', async (t) => {
    const s = await scanner(t, { env: { RATE_LIMIT_ANONYMOUS: '0' } });
    const { app } = s.built;
    const leaked = await liveToken(s.built);
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.base64String({ maxLength: 100 }), async (bytes, sig) => {
        const res = await app.inject({
          method: 'POST',
          url: PATH,
          payload: Buffer.from(bytes),
          headers: {
            'content-type': 'application/json',
            'github-public-key-identifier': s.key.id,
            'github-public-key-signature': sig,
          },
        });
        assert.equal(res.statusCode, 401);
      }),
      { numRuns: 150 },
    );
    const entryish = fc.oneof(
      fc.record({ token: fc.oneof(fc.string(), fc.constant(generateSecret('icat'))), type: fc.string() }),
      fc.anything(),
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.array(entryish, { maxLength: 5 }), fc.anything(), fc.string()), async (value) => {
        const payload = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined');
        const res = await s.report(payload);
        assert.ok([200, 400, 422].includes(res.statusCode), `${res.statusCode} ${res.body}`);
      }),
      { numRuns: 200 },
    );
    assert.equal(await status(s.built, leaked.secret), 200);
  });

  it('off without SECRET_SCANNING_KEYS_FILE: the usual 404, and not in the OpenAPI document', async (t) => {
    const { app } = await build(t);
    const res = await app.inject({
      method: 'POST',
      url: PATH,
      payload: '[]',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.statusCode, 404);
    assert.equal(res.headers['content-type'], PROBLEM_TYPE);
    assert.equal(res.json<{ code: string }>().code, 'NOT_FOUND');
    const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<{ paths: Record<string, unknown> }>();
    assert.equal(doc.paths[PATH], undefined);
  });

  it('on: documented in the OpenAPI document with its body, labels and 401; other methods are 405', async (t) => {
    const s = await scanner(t);
    const { app } = s.built;
    const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<{
      paths: Record<
        string,
        Record<string, { operationId: string; security: unknown[]; responses: Record<string, unknown> }>
      >;
    }>();
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    const op = doc.paths[PATH]?.post;
    assert.ok(op, 'documented');
    assert.equal(op.operationId, 'reportLeakedSecrets');
    assert.deepEqual(op.security, [], 'no bearer token');
    for (const code of ['200', '400', '401', '413', '415', '422', '429', '503']) assert.ok(code in op.responses, code);
    const get = await app.inject({ method: 'GET', url: PATH });
    assert.equal(get.statusCode, 405);
    assert.equal(get.headers.allow, 'POST');
  });

  it('a key file that is not a valid key list stops the start: buildApp throws, serve exits 78', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const { generateKeyPairSync } = await import('node:crypto');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).publicKey.export({
      type: 'spki',
      format: 'pem',
    });
    const file = tmp.file('keys.json');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, JSON.stringify({ public_keys: [{ key_identifier: 'k', key: p384, is_current: true }] }));
    const config = loadConfig({ DATABASE_URL: `sqlite:${tmp.file()}`, SECRET_SCANNING_KEYS_FILE: file });
    const { SqliteStore } = await import('../../src/storage/sqlite/store.js');
    const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 1000 });
    t.after(() => store.close());
    assert.throws(() => buildApp({ config, store, logger: createLogger('silent') }), ConfigError);

    const child = runCli(['serve'], {
      env: { DATABASE_URL: `sqlite:${tmp.file('serve.sqlite')}`, PORT: '0', SECRET_SCANNING_KEYS_FILE: file },
    });
    const { code } = await child.exited;
    assert.equal(code, 78);
    const stderr = child.stderr.join('\n');
    assert.match(
      stderr,
      new RegExp(
        'invalid SECRET_SCANNING_KEYS_FILE ".*keys\\.json": /public_keys/0 \\(key_identifier "k"\\): ' +
          'the key is an EC key on secp384r1, not an EC P-256',
      ),
    );
    const missing = runCli(['serve'], {
      env: {
        DATABASE_URL: `sqlite:${tmp.file('serve2.sqlite')}`,
        PORT: '0',
        SECRET_SCANNING_KEYS_FILE: tmp.file('nope.json'),
      },
    });
    assert.equal((await missing.exited).code, 78);
    assert.match(
      missing.stderr.join('\n'),
      /invalid SECRET_SCANNING_KEYS_FILE ".*nope\.json": cannot read it \(ENOENT/,
    );
  });
});
