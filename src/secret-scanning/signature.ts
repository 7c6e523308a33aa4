// GitHub's signature on a secret-scanning report: `Github-Public-Key-Identifier` names
// one of the configured keys, `Github-Public-Key-Signature` is the base64 of a DER
// ECDSA signature (P-256, SHA-256) over the exact bytes of the request body.
//
// Read exactly or refused: each header present once (Node keeps the first of a repeated
// header and drops the rest, where a proxy may have acted on another), the signature in
// canonical base64 (no other alphabet, no missing or extra padding, nothing around it),
// no longer than a P-256 DER signature can be.
import { verify, type KeyObject } from 'node:crypto';

export const KEY_ID_HEADER = 'github-public-key-identifier';
/**
 * The challenge of this endpoint's 401s. RFC 9110 asks every 401 for one; this scheme is
 * not Bearer (no token opens this endpoint), so it names the signature GitHub must send.
 */
export const SIGNATURE_CHALLENGE = 'GitHub-Public-Key-Signature realm="infracat"';
export const SIGNATURE_HEADER = 'github-public-key-signature';

/** A DER ECDSA P-256 signature is at most 72 bytes: 96 base64 characters. Room to spare, no more. */
const MAX_SIGNATURE_CHARS = 128;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export type SignatureHeaders = { ok: true; keyId: string; signature: Buffer } | { ok: false; reason: string };

/** One header's value, if it occurs exactly once; the reason otherwise. */
function single(rawHeaders: readonly string[], name: string): { value: string } | { reason: string } {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() !== name) continue;
    if (value !== undefined) return { reason: `send exactly one ${name} header` };
    value = rawHeaders[i + 1]!;
  }
  if (value === undefined || value.trim() === '') return { reason: `the ${name} header is missing` };
  return { value: value.trim() };
}

/** The identifier and signature the request carries, or why they cannot be read. */
export function readSignatureHeaders(rawHeaders: readonly string[]): SignatureHeaders {
  const keyId = single(rawHeaders, KEY_ID_HEADER);
  if ('reason' in keyId) return { ok: false, reason: keyId.reason };
  const signature = single(rawHeaders, SIGNATURE_HEADER);
  if ('reason' in signature) return { ok: false, reason: signature.reason };
  const text = signature.value;
  const bytes = text.length <= MAX_SIGNATURE_CHARS && BASE64.test(text) ? Buffer.from(text, 'base64') : null;
  // Canonical too: Node ignores set bits in the last character's padding ("AB==" reads as "AA==").
  if (bytes === null || bytes.toString('base64') !== text) {
    return { ok: false, reason: `the ${SIGNATURE_HEADER} header is not the base64 of a signature` };
  }
  return { ok: true, keyId: keyId.value, signature: bytes };
}

/** Whether `signature` (DER ECDSA) is `key`'s over exactly `body`, hashed with SHA-256. */
export function verifySignature(key: KeyObject, body: Buffer, signature: Buffer): boolean {
  try {
    return verify('sha256', body, { key, dsaEncoding: 'der' }, signature);
  } catch {
    // Bytes OpenSSL cannot even read as DER are no signature either.
    return false;
  }
}
