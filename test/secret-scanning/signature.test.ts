// The signature headers of a report, read exactly or refused, and the ECDSA P-256 /
// SHA-256 check over the body's exact bytes.
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { readSignatureHeaders, verifySignature } from '../../src/secret-scanning/signature.js';
import { signature, signingKey } from '../helpers/secret-scanning.js';

const ID = 'Github-Public-Key-Identifier';
const SIG = 'Github-Public-Key-Signature';

describe('secret scanning signature', () => {
  const key = signingKey();
  const publicKey = createPublicKey(key.publicPem);
  const body = Buffer.from('[{"token":"x","type":"t","url":"u","source":"content"}]');

  it("verifies the signer's signature over exactly the body's bytes, and nothing else", () => {
    const sig = Buffer.from(signature(key, body), 'base64');
    assert.equal(verifySignature(publicKey, body, sig), true);
    for (let i = 0; i < body.length; i++) {
      const tampered = Buffer.from(body);
      tampered[i] = tampered[i]! ^ 1;
      assert.equal(verifySignature(publicKey, tampered, sig), false, `byte ${i} changed`);
    }
    assert.equal(verifySignature(publicKey, Buffer.concat([body, Buffer.from(' ')]), sig), false, 'a byte added');
    assert.equal(verifySignature(publicKey, body.subarray(0, -1), sig), false, 'a byte dropped');
    const other = createPublicKey(signingKey().publicPem);
    assert.equal(verifySignature(other, body, sig), false, 'another key');
    assert.equal(verifySignature(publicKey, body, Buffer.alloc(0)), false, 'no signature');
    assert.equal(verifySignature(publicKey, body, Buffer.from('not DER at all')), false, 'not DER');
  });

  it('random signatures never verify and never throw', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        assert.equal(verifySignature(publicKey, body, Buffer.from(bytes)), false);
      }),
      { numRuns: 500 },
    );
  });

  it('reads the two headers once each, in any letter case', () => {
    const sig = signature(key, body);
    assert.deepEqual(readSignatureHeaders([ID.toUpperCase(), key.id, SIG.toLowerCase(), sig]), {
      ok: true,
      keyId: key.id,
      signature: Buffer.from(sig, 'base64'),
    });
  });

  it('refuses a missing, empty or repeated header, and a signature that is not canonical base64', () => {
    const sig = signature(key, body);
    const refused = (raw: string[], reason: RegExp) => {
      const read = readSignatureHeaders(raw);
      assert.equal(read.ok, false, JSON.stringify(raw));
      assert.match((read as { reason: string }).reason, reason);
    };
    refused([], /the github-public-key-identifier header is missing/);
    refused([SIG, sig], /the github-public-key-identifier header is missing/);
    refused([ID, key.id], /the github-public-key-signature header is missing/);
    refused([ID, '', SIG, sig], /identifier header is missing/);
    refused([ID, key.id, SIG, ' '], /signature header is missing/);
    refused([ID, key.id, ID, key.id, SIG, sig], /send exactly one github-public-key-identifier header/);
    refused([ID, key.id, SIG, sig, 'github-public-key-signature', sig], /send exactly one github-public-key-signature/);
    const notBase64 = /the github-public-key-signature header is not the base64 of a signature/;
    refused([ID, key.id, SIG, `${sig}!`], notBase64);
    // ECDSA signatures vary (70-72 bytes, random characters): sign until one shows what is tested.
    const signatureWhere = (wanted: (s: string) => boolean): string => {
      for (;;) {
        const s = signature(key, body);
        if (wanted(s)) return s;
      }
    };
    const padded = signatureWhere((s) => s.endsWith('='));
    assert.equal(readSignatureHeaders([ID, key.id, SIG, padded]).ok, true);
    refused([ID, key.id, SIG, padded.replace(/=+$/, '')], notBase64); // padding missing
    refused([ID, key.id, SIG, `${sig}==`], notBase64); // padding extra
    const urlSafe = signatureWhere((s) => s.includes('+') || s.includes('/'));
    refused([ID, key.id, SIG, urlSafe.replaceAll('+', '-').replaceAll('/', '_')], notBase64); // another alphabet
    refused([ID, key.id, SIG, `${sig.slice(0, 10)} ${sig.slice(10)}`], notBase64);
    refused([ID, key.id, SIG, 'AB=='], notBase64); // set bits past the last byte: not how base64 writes 0x00
    refused([ID, key.id, SIG, 'A'.repeat(132)], notBase64); // longer than any P-256 signature
  });
});
