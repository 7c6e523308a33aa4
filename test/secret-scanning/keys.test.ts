// SECRET_SCANNING_KEYS_FILE: GitHub's key list read exactly or refused at start (with
// the setting, the file and the fault named), and re-read when it changes.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/config-error.js';
import { KeyRing, MAX_KEY_FILE_BYTES } from '../../src/secret-scanning/keys.js';
import { keyList, signingKey, writeKeyFile } from '../helpers/secret-scanning.js';
import { tempDir } from '../helpers/sqlite.js';

function pem(type: 'ec' | 'rsa' | 'ed25519', curve?: string): string {
  const pair =
    type === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: curve! })
      : type === 'rsa'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : generateKeyPairSync('ed25519');
  return pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
}

function refusal(text: string | null, expected: RegExp, setUp?: (file: string) => void): void {
  const tmp = tempDir();
  try {
    const file = tmp.file('keys.json');
    if (text !== null) writeFileSync(file, text);
    setUp?.(file);
    assert.throws(
      () => new KeyRing(file),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.ok(
          err.message.startsWith(`invalid SECRET_SCANNING_KEYS_FILE ${JSON.stringify(file)}: `),
          `names the setting and the file: ${err.message}`,
        );
        assert.match(err.message, expected);
        return true;
      },
    );
  } finally {
    tmp.remove();
  }
}

const entry = (key: string, id = 'k1') =>
  JSON.stringify({ public_keys: [{ key_identifier: id, key, is_current: true }] });

describe('secret scanning key file', () => {
  it("reads GitHub's published format: every key by its identifier, fields GitHub may add ignored", (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const [a, b] = [signingKey(), signingKey()];
    const file = tmp.file('keys.json');
    const list = JSON.parse(keyList([a, b])) as { public_keys: Record<string, unknown>[] };
    list.public_keys[1]!.added_later = 'by GitHub';
    writeFileSync(file, JSON.stringify({ ...list, etag: 'x' }));
    const ring = new KeyRing(file);
    assert.deepEqual(ring.identifiers(), [a.id, b.id]);
  });

  it('refuses at start, naming what is wrong: missing, unreadable or malformed file, empty list', () => {
    refusal(null, /cannot read it \(ENOENT/);
    refusal(null, /it is not a regular file/, (file) => mkdirSync(file));
    refusal('', /it is not JSON/);
    refusal('{"public_keys": [', /it is not JSON/);
    refusal('[]', /it is not GitHub's key list .*: the top level must be object/);
    refusal('{}', /the top level must have required properties public_keys/);
    refusal('{"public_keys": []}', /\/public_keys must not have fewer than 1 items/);
    refusal(
      '{"public_keys": [{"key_identifier": "k1", "key": 5, "is_current": true}]}',
      /\/public_keys\/0\/key must be string/,
    );
    refusal(
      '{"public_keys": [{"key": "x", "is_current": true}]}',
      /\/public_keys\/0 must have required properties key_identifier/,
    );
    refusal(entry(signingKey().publicPem, ''), /\/public_keys\/0\/key_identifier must not have fewer than 1/);
    refusal(entry(signingKey().publicPem, 'has space'), /\/public_keys\/0\/key_identifier must match/);
    const good = JSON.parse(entry(signingKey().publicPem)) as { public_keys: Record<string, unknown>[] };
    good.public_keys[0]!.is_current = 'yes';
    refusal(JSON.stringify(good), /\/public_keys\/0\/is_current must be boolean/);
    refusal(' '.repeat(MAX_KEY_FILE_BYTES + 1), /bytes; a key list is far smaller/);
  });

  it('refuses a key that is not an EC P-256 public key, naming the entry', () => {
    refusal(
      entry(pem('ec', 'secp384r1')),
      /\/public_keys\/0 \(key_identifier "k1"\): the key is an EC key on secp384r1, not an EC P-256/,
    );
    refusal(entry(pem('ec', 'secp256k1')), /EC key on secp256k1, not an EC P-256/);
    refusal(entry(pem('rsa')), /the key is rsa, not an EC P-256/);
    refusal(entry(pem('ed25519')), /the key is ed25519, not an EC P-256/);
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    refusal(
      entry(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()),
      /the key must be a PEM public key \(-----BEGIN PUBLIC KEY-----\), not PRIVATE KEY/,
    );
    refusal(
      entry('-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n'),
      /the key cannot be read as PEM/,
    );
    refusal(entry('MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE'), /the key must be a PEM public key/);
    // One bad key among good ones still stops the start: which key GitHub will use is not ours to guess.
    const a = signingKey();
    const list = JSON.parse(keyList([a])) as { public_keys: Record<string, unknown>[] };
    list.public_keys.push({ key_identifier: 'k2', key: pem('rsa'), is_current: false });
    refusal(JSON.stringify(list), /\/public_keys\/1 \(key_identifier "k2"\): the key is rsa/);
  });

  it('refuses a repeated identifier', () => {
    const [a, b] = [signingKey('same'), signingKey('same')];
    refusal(keyList([a, b]), /\/public_keys\/1 \(key_identifier "same"\) repeats an identifier/);
  });

  it('takes in a changed file: keys in, keys out; renamed over it or behind a swapped symlink', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const [a, b, c] = [signingKey(), signingKey(), signingKey()];
    const file = writeKeyFile(tmp.file('keys.json'), [a]);
    const reloads: string[][] = [];
    const ring = new KeyRing(file, { checkIntervalMs: 0, onReload: (ids) => reloads.push(ids) });
    assert.ok(await ring.get(a.id));
    assert.equal(await ring.get(b.id), undefined);

    // Rewritten in place (GitHub added a key).
    writeKeyFile(file, [b, a]);
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    assert.ok(await ring.get(b.id));
    assert.ok(await ring.get(a.id));

    // Replaced by a rename, the way a careful fetch script writes it (GitHub dropped a key).
    writeKeyFile(tmp.file('keys.json.tmp'), [b]);
    renameSync(tmp.file('keys.json.tmp'), file);
    assert.equal(await ring.get(a.id), undefined, 'a removed key is refused');
    assert.ok(await ring.get(b.id));
    assert.deepEqual(reloads, [[b.id, a.id], [b.id]]);

    // Kubernetes mounts secrets behind a symlink that is swapped.
    const v1 = tmp.file('v1.json');
    const v2 = tmp.file('v2.json');
    writeKeyFile(v1, [a]);
    writeKeyFile(v2, [c]);
    const link = tmp.file('link.json');
    symlinkSync(v1, link);
    const linked = new KeyRing(link, { checkIntervalMs: 0 });
    assert.ok(await linked.get(a.id));
    rmSync(link);
    symlinkSync(v2, link);
    assert.ok(await linked.get(c.id));
    assert.equal(await linked.get(a.id), undefined);
  });

  it('a changed file that is not valid (or gone) keeps the last good keys, reported once per version', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const [a, b] = [signingKey(), signingKey()];
    const file = writeKeyFile(tmp.file('keys.json'), [a]);
    const errors: string[] = [];
    const ring = new KeyRing(file, { checkIntervalMs: 0, onReloadError: (m) => errors.push(m) });

    writeFileSync(file, '{"public_keys": [{"key_identifier": "half-writ');
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    assert.ok(await ring.get(a.id), 'the last good keys stay');
    assert.ok(await ring.get(a.id));
    assert.equal(errors.length, 1, 'once per version of the file');
    assert.match(
      errors[0]!,
      /^SECRET_SCANNING_KEYS_FILE ".*keys\.json" changed but it is not JSON .*; the last good keys stay in use$/,
    );

    rmSync(file);
    assert.ok(await ring.get(a.id));
    assert.ok(await ring.get(a.id));
    assert.equal(errors.length, 2);
    assert.match(errors[1]!, /changed but cannot read it \(ENOENT/);

    writeKeyFile(file, [b]);
    assert.ok(await ring.get(b.id), 'a valid file is taken again');
    assert.equal(await ring.get(a.id), undefined);
  });

  it('asks whether the file changed at most once per interval, and only when a key is looked up', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const [a, b] = [signingKey(), signingKey()];
    const file = writeKeyFile(tmp.file('keys.json'), [a]);
    let now = 1_000_000;
    const ring = new KeyRing(file, { checkIntervalMs: 1000, now: () => now });
    writeKeyFile(file, [b]);
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    now += 999;
    assert.ok(await ring.get(a.id), 'within the interval: from memory, the file not looked at');
    assert.equal(await ring.get(b.id), undefined);
    now += 1;
    assert.ok(await ring.get(b.id), 'the interval passed: the change is taken');
    assert.equal(await ring.get(a.id), undefined);
  });
});
