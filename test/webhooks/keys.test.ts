// The keys that seal webhook secrets: the operator's (WEBHOOK_ENCRYPTION_KEYS), or on SQLite
// infracat's own, made once beside the database and reused; none on PostgreSQL without the
// setting. The server and `infracat webhooks` opening the same own key: test/cli/webhooks.test.ts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/config-error.js';
import { loadEncryptionKeys, ownEncryptionKeyFile } from '../../src/webhooks/keys.js';
import { SecretBox } from '../../src/webhooks/secrets.js';
import { tempDir } from '../helpers/sqlite.js';

const sqliteAt = (file: string) => ({ kind: 'sqlite' as const, path: file });
const collect = (into: string[]) => (message: string) => void into.push(message);

describe('webhook encryption keys', () => {
  it('WEBHOOK_ENCRYPTION_KEYS: those keys, in order, and no file made', (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const db = tmp.file();
    const given = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    const keys = loadEncryptionKeys({ webhookEncryptionKeys: given, database: sqliteAt(db) }, () => undefined);
    assert.equal(keys?.origin, 'setting');
    assert.deepEqual(keys?.keys, given);
    assert.throws(() => statSync(ownEncryptionKeyFile(db)), /ENOENT/);
  });

  it('on PostgreSQL without the setting: none', () => {
    const keys = loadEncryptionKeys(
      { webhookEncryptionKeys: [], database: { kind: 'postgres', url: 'postgres://localhost/x' } },
      () => undefined,
    );
    assert.equal(keys, null);
  });

  it('on SQLite without the setting: made once beside the database (0600), then reused; its seals open', (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const db = path.join(tmp.dir, 'fresh/dir/infracat.sqlite');
    const settings = { webhookEncryptionKeys: [], database: sqliteAt(db) };
    const warnings: string[] = [];
    const made = loadEncryptionKeys(settings, collect(warnings));
    const file = ownEncryptionKeyFile(db);
    assert.equal(file, `${db}.webhook-key`);
    assert.equal(made?.origin, 'made');
    assert.equal(made?.file, file);
    assert.equal(statSync(file).mode & 0o777, 0o600, 'private to the service user');
    assert.match(readFileSync(file, 'utf8'), /^[A-Za-z0-9+/]{43}=\n$/);
    const sealed = new SecretBox(made.keys).seal('whsec_x', 'whk_1');

    const reused = loadEncryptionKeys(settings, collect(warnings));
    assert.equal(reused?.origin, 'reused');
    assert.deepEqual(reused?.keys, made?.keys);
    assert.equal(new SecretBox(reused.keys).open(sealed, 'whk_1'), 'whsec_x');
    assert.deepEqual(warnings, []);
  });

  it('a loosened key file is reported; an unusable one stops the start naming the file, never quoting it', (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const db = tmp.file();
    const settings = { webhookEncryptionKeys: [], database: sqliteAt(db) };
    loadEncryptionKeys(settings, () => undefined);
    const file = ownEncryptionKeyFile(db);
    execFileSync('chmod', ['644', file]);
    const warnings: string[] = [];
    assert.equal(loadEncryptionKeys(settings, collect(warnings))?.origin, 'reused');
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /accessible to other local users \(mode 0644\).*chmod 600/);
    writeFileSync(file, 'not-a-key-but-a-secret-looking-text');
    assert.throws(
      () => loadEncryptionKeys(settings, () => undefined),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message.includes(file) &&
        /WEBHOOK_ENCRYPTION_KEYS/.test(err.message) &&
        !err.message.includes('secret-looking'),
    );
  });
});
