// Webhook signing secrets and signatures (Standard Webhooks), and how secrets are kept.
//
// A secret is `whsec_` + base64 of 32 random bytes; the HMAC-SHA256 key is those bytes
// (the part after `whsec_`, base64-decoded), as every Standard Webhooks library reads it.
// A signature is `v1,` + base64(HMAC(key, `${id}.${timestamp}.${body}`)); during the 24 h
// after a rotation the header carries two, space-separated: the new secret's, then the
// previous one's.
//
// infracat must sign with a secret, so it cannot keep only a hash of it, as it does for
// tokens: it keeps it sealed with AES-256-GCM under a key of WEBHOOK_ENCRYPTION_KEYS (the
// first seals; any opens, so that key can be rotated), bound to its webhook's id (a sealed
// secret copied onto another webhook does not open). A database copy alone reveals no secret.
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
/** The length of a key of WEBHOOK_ENCRYPTION_KEYS, in bytes. */
export const ENCRYPTION_KEY_BYTES = 32;

/** A new signing secret. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The HMAC key of a secret: the bytes after `whsec_`. */
function keyOf(secret: string): Buffer {
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** One `v1,<base64>` signature of a message. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated (the current one first). */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => signature(s, id, timestamp, body)).join(' ');
}

/**
 * A key of WEBHOOK_ENCRYPTION_KEYS: 32 bytes in base64 (or base64url), e.g. the output of
 * `openssl rand -base64 32`. Anything else is refused (config.ts).
 */
export function parseEncryptionKey(text: string): Buffer {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed))
    throw new Error('expected 32 bytes in base64 (openssl rand -base64 32)');
  const key = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (key.length !== ENCRYPTION_KEY_BYTES) throw new Error('expected 32 bytes in base64 (openssl rand -base64 32)');
  return key;
}

/** A key's identifier in a sealed secret: the first 8 hex digits of its SHA-256 (it says which key, not what it is). */
function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/** A sealed secret no key at hand opens (its key left WEBHOOK_ENCRYPTION_KEYS, or it was tampered with). */
export class SealedSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealedSecretError';
  }
}

/** Seals and opens webhook secrets with the keys of WEBHOOK_ENCRYPTION_KEYS. */
export class SecretBox {
  private readonly keys: ReadonlyMap<string, Buffer>;
  private readonly sealing: { id: string; key: Buffer };

  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new Error('a SecretBox needs at least one key');
    this.keys = new Map(keys.map((k) => [keyId(k), k]));
    this.sealing = { id: keyId(keys[0]!), key: keys[0]! };
  }

  /** `v1.<key id>.<iv>.<ciphertext>.<tag>` (base64url), bound to `webhookId`. */
  seal(secret: string, webhookId: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealing.key, iv);
    cipher.setAAD(Buffer.from(webhookId, 'utf8'));
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    const parts = [iv, sealed, cipher.getAuthTag()].map((b) => b.toString('base64url'));
    return ['v1', this.sealing.id, ...parts].join('.');
  }

  /** The secret sealed for `webhookId`; SealedSecretError when no key opens it. */
  open(sealed: string, webhookId: string): string {
    const [version, id, iv, data, tag] = sealed.split('.');
    if (version !== 'v1' || id === undefined || iv === undefined || data === undefined || tag === undefined)
      throw new SealedSecretError('the stored secret is not in a form this infracat reads');
    const key = this.keys.get(id);
    if (key === undefined)
      throw new SealedSecretError(
        `the secret is sealed with key ${id}, which is not among WEBHOOK_ENCRYPTION_KEYS; ` +
          'add it back, or rotate the secret',
      );
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(webhookId, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedSecretError(`the secret does not open with key ${id} (altered, or sealed for another webhook)`);
    }
  }
}
