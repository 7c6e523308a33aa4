// Signing secrets: the signature standardwebhooks computes, and how secrets are sealed in
// storage (bound to their webhook, opened by any configured key, refused by none).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  generateSecret,
  SealedSecretError,
  SecretBox,
  signature,
  signatureHeader,
} from '../../src/webhooks/secrets.js';

const keyA = Buffer.alloc(32, 1);
const keyB = Buffer.alloc(32, 2);

describe('webhook secrets', () => {
  it('a signature is the one the standardwebhooks package makes; two verify with either secret', () => {
    const secret = generateSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = '{"type":"webhook.test","timestamp":"2026-11-21T19:00:00.000Z","data":{}}';
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    const ts = at.getTime() / 1000;
    assert.equal(signature(secret, 'evt_1', ts, body), new Webhook(secret).sign('evt_1', at, body));
    const other = generateSecret();
    const headers = {
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(ts),
      'webhook-signature': signatureHeader([secret, other], 'evt_1', ts, body),
    };
    new Webhook(secret).verify(body, headers);
    new Webhook(other).verify(body, headers);
    assert.throws(() => new Webhook(generateSecret()).verify(body, headers));
  });

  it('sealed: opens for its webhook only, with any configured key; a missing key says which', () => {
    const secret = generateSecret();
    const box = new SecretBox([keyA]);
    const sealed = box.seal(secret, 'whk_1');
    assert.ok(!sealed.includes(secret.slice(6)));
    assert.notEqual(box.seal(secret, 'whk_1'), sealed, 'a fresh nonce each time');
    assert.equal(box.open(sealed, 'whk_1'), secret);
    assert.throws(() => box.open(sealed, 'whk_2'), SealedSecretError);
    const tampered = sealed.slice(0, -3) + (sealed.endsWith('AAA') ? 'BBB' : 'AAA');
    assert.throws(() => box.open(tampered, 'whk_1'), SealedSecretError);
    // A new key first: new secrets are sealed with it, the old ones still open.
    const rotated = new SecretBox([keyB, keyA]);
    assert.equal(rotated.open(sealed, 'whk_1'), secret);
    const fresh = rotated.seal(secret, 'whk_1');
    assert.throws(() => box.open(fresh, 'whk_1'), /not among WEBHOOK_ENCRYPTION_KEYS/);
    assert.throws(() => box.open('plaintext', 'whk_1'), SealedSecretError);
  });
});
