// The keys that sign access tokens and what is published about them: the JWKS and the RFC
// 8414 metadata on both backends (PostgreSQL with JWT_SIGNING_KEY_FILES), infracat's own
// key on SQLite (made once, private, reused), rotation, refused key files, PostgreSQL
// without keys, and no private key in a log line, an answer or the database.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { calculateJwkThumbprint, errors as joseErrors, type JWK } from 'jose';
import { ConfigError } from '../../src/config-error.js';
import { loadConfig } from '../../src/config.js';
import { loadSigningKeys, ownKeyFile } from '../../src/oauth/keys.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { build, mintToken, PROBLEM_TYPE } from '../helpers/app.js';
import { backends, postgresBackend } from '../helpers/backends.js';
import { exchange, exchangeOf, servedJwks, verifyJwt, writeSigningKey } from '../helpers/signing-keys.js';
import { rawSql } from '../helpers/raw-sql.js';
import { tempDir } from '../helpers/sqlite.js';

const JWKS = '/.well-known/jwks.json';
const METADATA = '/.well-known/oauth-authorization-server';

for (const backend of backends()) {
  describe(`published keys and metadata on ${backend.name}`, () => {
    it(
      'JWKS: every key (kid = RFC 7638 thumbprint, ES256, sig), cacheable with an ETag; metadata per RFC 8414; ' +
        'no private key in a log line, an answer or the database',
      async (t) => {
        const tmp = tempDir();
        t.after(() => tmp.remove());
        const a = writeSigningKey(tmp.dir, 'a.pem');
        const b = writeSigningKey(tmp.dir, 'b.pem');
        const db = await backend.fresh(t);
        const { app, logs } = await build(t, {
          store: db.open(),
          env: {
            DATABASE_URL: db.url,
            JWT_SIGNING_KEY_FILES: `${a.file},${b.file}`,
            JWT_ISSUER: 'https://tokens.example.com',
          },
        });

        const res = await app.inject({ method: 'GET', url: JWKS });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        assert.equal(res.headers['cache-control'], 'public, max-age=300');
        const etag = res.headers.etag as string;
        assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
        const { keys } = res.json<{ keys: (JWK & { kid: string })[] }>();
        assert.equal(keys.length, 2, 'every configured key is published');
        for (const [i, key] of keys.entries()) {
          assert.deepEqual(Object.keys(key).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
          assert.equal(key.kty, 'EC');
          assert.equal(key.crv, 'P-256');
          assert.equal(key.alg, 'ES256');
          assert.equal(key.use, 'sig');
          assert.equal(key.kid, await calculateJwkThumbprint(key, 'sha256'), 'kid is the RFC 7638 thumbprint');
          const expected = [a, b][i]!.key.export({ format: 'jwk' });
          assert.equal(key.x, expected.x, 'in the order of the setting');
          assert.equal(key.y, expected.y);
          assert.equal((key as Record<string, unknown>).d, undefined, 'no private member');
        }
        const again = await app.inject({ method: 'GET', url: JWKS, headers: { 'if-none-match': etag } });
        assert.equal(again.statusCode, 304);
        assert.equal(again.body, '');
        assert.equal(again.headers.etag, etag);

        const meta = await app.inject({ method: 'GET', url: METADATA });
        assert.equal(meta.statusCode, 200);
        assert.equal(meta.headers['cache-control'], 'public, max-age=300');
        assert.deepEqual(meta.json(), {
          issuer: 'https://tokens.example.com',
          token_endpoint: 'https://tokens.example.com/api/v1/oauth/token',
          jwks_uri: 'https://tokens.example.com/.well-known/jwks.json',
          grant_types_supported: ['urn:ietf:params:oauth:grant-type:token-exchange'],
          token_endpoint_auth_methods_supported: ['none'],
          response_types_supported: [],
          scopes_supported: app.infracat.tokens.service.registry.names(),
          service_documentation: 'https://tokens.example.com/docs',
        });
        const metaEtag = meta.headers.etag as string;
        assert.equal((await app.inject({ url: METADATA, headers: { 'if-none-match': metaEtag } })).statusCode, 304);
        // Closed query, like every GET of the API.
        assert.equal((await app.inject({ url: `${JWKS}?x=1` })).statusCode, 400);

        // The first key signs.
        const tok = await mintToken(app, ['apps:read']);
        const issued = await exchange(app, exchangeOf(tok.secret));
        assert.equal(issued.statusCode, 200, issued.body);
        const { protectedHeader } = await verifyJwt(app, issued.json<{ access_token: string }>().access_token, {
          issuer: 'https://tokens.example.com',
        });
        assert.equal(protectedHeader.kid, keys[0]!.kid);

        // The private keys: in no log line, no answer, no row of any table.
        await app.infracat.tokens.lastUsed.flush();
        await app.infracat.tokens.usage.flush();
        const tables =
          backend.name === 'postgres'
            ? 'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()'
            : "SELECT name FROM sqlite_master WHERE type = 'table'";
        let rows = '';
        for (const { name } of (await rawSql(backend, db, tables)) as { name: string }[])
          rows += JSON.stringify(await rawSql(backend, db, `SELECT * FROM ${name}`));
        assert.ok(rows.includes(tok.id), 'the dump holds what was written');
        for (const { pem } of [a, b]) {
          for (const [where, text] of [
            ['logs', logs.text],
            ['answers', res.body + meta.body + issued.body],
            ['database', rows],
          ]) {
            assert.ok(!text!.includes(privateScalar(pem)), `no private scalar in the ${where}`);
            assert.ok(!text!.includes(pemBody(pem)), `no PEM in the ${where}`);
          }
        }
        assert.ok(logs.text.includes(a.file), 'the start names the key files');
      },
    );
  });
}

describe('rotation', () => {
  it(
    'a new key signs; tokens of either verify while ' + 'both are published; the old one removed, its tokens fail',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const old = writeSigningKey(tmp.dir, 'old.pem');
      const next = writeSigningKey(tmp.dir, 'new.pem');
      const file = tmp.file();
      // One database, three starts: [old], then [new, old], then [new].
      const start = async (files: string) => {
        const built = await build(t, {
          store: new SqliteStore({ path: file, busyTimeoutMs: 2000 }),
          env: { DATABASE_URL: `sqlite:${file}`, JWT_SIGNING_KEY_FILES: files },
        });
        return built.app;
      };
      const first = await start(old.file);
      const tok = await mintToken(first, ['apps:read']);
      const jwtOf = async (app: typeof first) =>
        (await exchange(app, exchangeOf(tok.secret))).json<{ access_token: string }>().access_token;
      const byOld = await jwtOf(first);
      const oldKid = (await servedJwks(first)).keys[0]!.kid;
      await first.close();

      const both = await start(`${next.file},${old.file}`);
      const byNew = await jwtOf(both);
      const published = (await servedJwks(both)).keys.map((k) => k.kid);
      assert.equal(published.length, 2);
      assert.equal(published[1], oldKid, 'the old key stays published');
      assert.equal((await verifyJwt(both, byNew)).protectedHeader.kid, published[0], 'the new key signs');
      assert.equal((await verifyJwt(both, byOld)).protectedHeader.kid, oldKid, "the old key's tokens still verify");
      await both.close();

      const last = await start(next.file);
      assert.deepEqual(
        (await servedJwks(last)).keys.map((k) => k.kid),
        [published[0]],
      );
      await verifyJwt(last, byNew);
      await assert.rejects(verifyJwt(last, byOld), joseErrors.JWKSNoMatchingKey, "the removed key's tokens fail");
    },
  );
});

describe("infracat's own key on SQLite", () => {
  it(
    'made at the first start beside the database (0600), ' +
      'reused at later starts, never in logs, answers or the database',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const file = path.join(tmp.dir, 'fresh/dir/infracat.sqlite');
      const start = () =>
        build(t, {
          store: new SqliteStore({ path: file, busyTimeoutMs: 2000 }),
          env: { DATABASE_URL: `sqlite:${file}` },
        });
      const first = await start();
      const keyFile = ownKeyFile(file);
      assert.equal(keyFile, `${file}.jwt-key.pem`);
      assert.equal(statSync(keyFile).mode & 0o777, 0o600, 'private to the service user');
      assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);
      const pem = readFileSync(keyFile, 'utf8');
      assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);
      const kid = (await servedJwks(first.app)).keys[0]!.kid;
      const made = first.logs.records().find((r) => String(r.msg).startsWith('signed access tokens: signing with key'));
      assert.equal(made?.msg, `signed access tokens: signing with key ${kid} (made now, beside the database)`);

      // Signing and the answers never show the private key.
      const tok = await mintToken(first.app, ['apps:read']);
      const issued = await exchange(first.app, exchangeOf(tok.secret));
      const d = privateScalar(pem);
      for (const where of [first.logs.text, issued.body, (await first.app.inject({ url: JWKS })).body]) {
        assert.ok(!where.includes(d), 'no private scalar');
        assert.ok(!where.includes(pemBody(pem)), 'no PEM');
      }
      await first.app.close();
      const stored = readFileSync(file);
      assert.equal(stored.indexOf(d), -1, 'not in the database file');
      assert.equal(stored.indexOf(pemBody(pem)), -1);
      assert.equal(stored.indexOf(Buffer.from(pemBody(pem), 'base64')), -1, 'not even as DER');

      const second = await start();
      assert.equal((await servedJwks(second.app)).keys[0]!.kid, kid, 'the same key at the next start');
      assert.equal(readFileSync(keyFile, 'utf8'), pem);
      assert.ok(second.logs.text.includes(`signing with key ${kid} (beside the database)`));
      assert.ok(!second.logs.text.includes(pemBody(pem)));
      await verifyJwt(second.app, issued.json<{ access_token: string }>().access_token);
    },
  );

  it('a loosened key file is reported; an unusable one stops the start naming the file', (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const db = tmp.file();
    const settings = { jwtSigningKeyFiles: [] as string[], database: { kind: 'sqlite' as const, path: db } };
    const warnings: string[] = [];
    const made = loadSigningKeys(settings, (message) => void warnings.push(message));
    assert.equal(made?.origin, 'made');
    assert.equal(warnings.length, 0);
    execFileSync('chmod', ['644', ownKeyFile(db)]);
    const reused = loadSigningKeys(settings, (message) => void warnings.push(message));
    assert.equal(reused?.origin, 'reused');
    assert.equal(reused?.keys[0]!.kid, made?.keys[0]!.kid);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /accessible to other local users \(mode 0644\).*chmod 600/);
    writeFileSync(ownKeyFile(db), 'garbage');
    assert.throws(
      () => loadSigningKeys(settings, () => undefined),
      (err: unknown) =>
        err instanceof ConfigError && err.message.includes(ownKeyFile(db)) && /delete it/.test(err.message),
    );
  });
});

describe('JWT_SIGNING_KEY_FILES', () => {
  it('refuses anything but one unencrypted EC P-256 private key per file, naming the file, never quoting it', (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const write = (name: string, text: string) => {
      const file = path.join(tmp.dir, name);
      writeFileSync(file, text);
      return file;
    };
    const p256 = writeSigningKey(tmp.dir, 'good.pem');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    const pub = createPublicKey(p256.key).export({ type: 'spki', format: 'pem' }) as string;
    const sec1 = p256.key.export({ type: 'sec1', format: 'pem' }) as string;
    const encrypted = p256.key.export({
      type: 'pkcs8',
      format: 'pem',
      cipher: 'aes-256-cbc',
      passphrase: 'secret',
    }) as string;
    const cases: [string, RegExp][] = [
      [write('missing.pem', ''), /holds no PEM block/],
      [path.join(tmp.dir, 'absent.pem'), /cannot read it/],
      [tmp.dir, /not a regular file/],
      [write('rsa.pem', rsa as string), /a rsa key, not an EC P-256/],
      [write('p384.pem', p384 as string), /an EC key on secp384r1, not an EC P-256/],
      [write('pub.pem', pub), /a PUBLIC KEY, not a private key/],
      [write('enc.pem', encrypted), /encrypted/],
      [write('two.pem', p256.pem + p256.pem), /2 PEM blocks/],
      [write('broken.pem', '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'), /cannot be read/],
    ];
    for (const [file, reason] of cases) {
      assert.throws(
        () => loadConfigAndKeys(file),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError, file);
          assert.ok(err.message.startsWith(`invalid JWT_SIGNING_KEY_FILES: ${file}: `), err.message);
          assert.match(err.message, reason);
          assert.ok(!err.message.includes(pemBody(p256.pem)), 'never the key');
          return true;
        },
      );
    }
    // Both PEM forms of a P-256 key are read: PKCS#8 and SEC 1 (EC PRIVATE KEY), the same key.
    const sec1File = write('sec1.pem', sec1);
    assert.throws(
      () => loadConfigAndKeys(`${p256.file},${sec1File}`),
      /holds the same key as .*good\.pem; list each key once/,
    );
    assert.equal(loadConfigAndKeys(sec1File)?.keys[0]!.kid, loadConfigAndKeys(p256.file)?.keys[0]!.kid);
  });
});

describe('PostgreSQL without JWT_SIGNING_KEY_FILES', () => {
  it(
    'signed access tokens are off: the documents 404 ' +
      'SIGNED_TOKENS_OFF, the exchange unsupported_grant_type, both naming the setting',
    async (t) => {
      const pg = postgresBackend(t);
      if (pg === undefined) return;
      const db = await pg.fresh(t);
      const { app, logs } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url } });
      for (const url of [JWKS, METADATA]) {
        const res = await app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 404, url);
        assert.equal(res.headers['content-type'], PROBLEM_TYPE);
        const body = res.json<{ code: string; detail: string }>();
        assert.equal(body.code, 'SIGNED_TOKENS_OFF');
        assert.match(body.detail, /JWT_SIGNING_KEY_FILES/);
      }
      const tok = await mintToken(app, ['apps:read']);
      const res = await exchange(app, exchangeOf(tok.secret));
      assert.equal(res.statusCode, 400);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      const body = res.json<{ error: string; error_description: string }>();
      assert.equal(body.error, 'unsupported_grant_type');
      assert.match(body.error_description, /JWT_SIGNING_KEY_FILES/);
      assert.equal(app.infracat.tokens.lastUsed.pending(tok.id), undefined, 'the token was not even verified');
      assert.ok(logs.text.includes('signed access tokens are off: on PostgreSQL they need JWT_SIGNING_KEY_FILES'));
      // Documented where it happens.
      const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<{
        paths: Record<string, { get: { responses: Record<string, unknown> } }>;
      }>();
      assert.ok('404' in doc.paths[JWKS]!.get.responses);
    },
  );
});

/** The keys of one JWT_SIGNING_KEY_FILES value, as a start reads them (on PostgreSQL: nothing is made). */
function loadConfigAndKeys(files: string) {
  const config = loadConfig({ DATABASE_URL: 'postgres://u@db/ic', JWT_SIGNING_KEY_FILES: files });
  return loadSigningKeys(config, () => undefined);
}

/** The base64 body of a PEM (its lines joined). */
function pemBody(pem: string): string {
  return pem
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'))
    .join('');
}

/** The private scalar `d` of a PEM key, base64url as a JWK would show it. */
function privateScalar(pem: string): string {
  return createPrivateKey(pem).export({ format: 'jwk' }).d!;
}
