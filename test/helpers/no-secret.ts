// What an audit event or a log line must never hold: any 12-character piece of a secret
// (plain or percent-encoded), or a secret's SHA-256 (the stored form: it finds the token).
import assert from 'node:assert/strict';
import { hashSecret } from '../../src/tokens/format.js';
import { secretPieceIn } from './secrets.js';

export function assertNoSecret(text: string, secrets: readonly string[]): void {
  for (const secret of secrets) {
    assert.equal(secretPieceIn(text, secret), undefined, 'a piece of a secret');
    assert.ok(!text.includes(hashSecret(secret)), "a secret's hash");
  }
}
