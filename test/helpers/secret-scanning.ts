// GitHub's side of secret scanning, played locally: P-256 key pairs, the key list file
// in GitHub's published format, and signed reports. No network.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';

export interface SigningKey {
  id: string;
  privateKey: KeyObject;
  publicPem: string;
}

let counter = 0;

/** A fresh P-256 key pair with an identifier shaped like GitHub's (hex). */
export function signingKey(id = `${(++counter).toString(16).padStart(4, '0')}${'ab'.repeat(30)}`): SigningKey {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { id, privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

/** GitHub's key list, as its published JSON text. */
export function keyList(keys: readonly SigningKey[]): string {
  return JSON.stringify({
    public_keys: keys.map((k, i) => ({ key_identifier: k.id, key: k.publicPem, is_current: i === 0 })),
  });
}

export function writeKeyFile(file: string, keys: readonly SigningKey[]): string {
  writeFileSync(file, keyList(keys));
  return file;
}

/** Base64 of the DER ECDSA signature (SHA-256) over exactly `body`. */
export function signature(key: SigningKey, body: string | Buffer): string {
  return sign('sha256', Buffer.from(body), { key: key.privateKey, dsaEncoding: 'der' }).toString('base64');
}

/** The headers GitHub sends with a report signed by `key`. */
export function signedHeaders(
  key: SigningKey,
  body: string | Buffer,
): { 'content-type': string; 'github-public-key-identifier': string; 'github-public-key-signature': string } {
  return {
    'content-type': 'application/json',
    'github-public-key-identifier': key.id,
    'github-public-key-signature': signature(key, body),
  };
}
