// The keys that sign access tokens (ES256: EC P-256), and their public halves as the JWKS
// publishes them.
//
// - JWT_SIGNING_KEY_FILES: the operator's PEM files, one private key each. The first signs;
//   all are published, so a rotation adds the new key first and removes the old one once
//   the tokens it signed have expired (JWT_TTL_S).
// - Unset, on the embedded SQLite database: infracat makes one key at the first start and
//   keeps it beside the database file (`<database>.jwt-key.pem`), private to the service
//   user like the database (src/storage/sqlite/files.ts), and reuses it at every later start.
// - Unset, on PostgreSQL: none. Instances of a fleet must sign with the same keys, and a key
//   is never stored in the database, so signed access tokens are off until the operator
//   gives the files.
//
// Read at start, where anything not exactly understood stops the start (fail closed): an
// unreadable file, one holding anything but one unencrypted EC P-256 private key, the same
// key twice. A private key never leaves this module's objects: not into a log line, an
// error message, the database or an answer; only the public members (kty, crv, x, y) are
// copied out.
import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { ConfigError } from '../config-error.js';
import { makePrivateFileOnce, sharedMode } from '../private-file.js';

const SETTING = 'JWT_SIGNING_KEY_FILES';
/** A PEM private key of P-256 is about 250 bytes; anything near this is not one. */
const MAX_KEY_FILE_BYTES = 64 * 1024;

/** The public members of an EC P-256 key (RFC 7518 section 6.2.1). */
export interface EcPublicJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
}

export interface SigningKey {
  /** RFC 7638 thumbprint of the public key (SHA-256, base64url): the JWT header's `kid`. */
  kid: string;
  /** Signs; never serialised. */
  privateKey: KeyObject;
  publicJwk: EcPublicJwk;
  /** Where it was read from (for the start's log line: the path, never the key). */
  file: string;
}

/** Where the keys come from, as the start's log line says it. */
export type KeyOrigin = 'files' | 'made' | 'reused';

export interface SigningKeys {
  /** The first signs; every one is published. */
  keys: readonly SigningKey[];
  origin: KeyOrigin;
}

/** The file infracat keeps its own key in, beside a SQLite database file. */
export function ownKeyFile(databasePath: string): string {
  return `${databasePath}.jwt-key.pem`;
}

/**
 * RFC 7638 thumbprint of an EC public key: SHA-256 over the required members in
 * lexicographic order, no whitespace. What jose's calculateJwkThumbprint computes (the
 * tests hold the two equal), made here synchronously so the keys are known when the app is
 * built.
 */
export function thumbprint(jwk: EcPublicJwk): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical).digest('base64url');
}

/** The key in a PEM file's text, or throws an Error saying what is wrong (never quoting the text). */
export function parseKeyPem(text: string): KeyObject {
  const labels = [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].map((m) => m[1]!);
  if (labels.length === 0) throw new Error('it holds no PEM block (-----BEGIN PRIVATE KEY-----)');
  if (labels.length > 1) throw new Error(`it holds ${labels.length} PEM blocks; give one key per file`);
  const label = labels[0]!;
  if (label === 'ENCRYPTED PRIVATE KEY' || /Proc-Type:\s*4,ENCRYPTED/.test(text))
    throw new Error('the key is encrypted; give it unencrypted, readable by the service user only');
  if (label !== 'PRIVATE KEY' && label !== 'EC PRIVATE KEY')
    throw new Error(`it holds a ${label}, not a private key (PRIVATE KEY or EC PRIVATE KEY)`);
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem' });
  } catch (err) {
    // OpenSSL's reason (a decoder routine's name), never the key's bytes.
    throw new Error(`the key cannot be read (${(err as Error).message.slice(0, 120)})`);
  }
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (key.asymmetricKeyType !== 'ec' || curve !== 'prime256v1') {
    const what =
      key.asymmetricKeyType === 'ec'
        ? `an EC key on ${curve ?? 'an unnamed curve'}`
        : `a ${key.asymmetricKeyType ?? 'key of an unknown type'} key`;
    throw new Error(`it is ${what}, not an EC P-256 (prime256v1) key: ES256 needs P-256`);
  }
  return key;
}

/** The public members of a P-256 private key. */
function publicJwkOf(key: KeyObject): EcPublicJwk {
  const jwk = key.export({ format: 'jwk' });
  return { kty: 'EC', crv: 'P-256', x: jwk.x!, y: jwk.y! };
}

/** Reads one key file; throws an Error saying what is wrong in it (without the setting or path). */
function readKeyFile(file: string): KeyObject {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new Error(`cannot read it (${(err as Error).message})`);
  }
  try {
    const s = fstatSync(fd);
    if (!s.isFile()) throw new Error('it is not a regular file');
    if (s.size > MAX_KEY_FILE_BYTES) throw new Error(`it is ${s.size} bytes; a P-256 key in PEM is about 250`);
    return parseKeyPem(readFileSync(fd, 'utf8'));
  } finally {
    closeSync(fd);
  }
}

function signingKey(file: string, privateKey: KeyObject): SigningKey {
  const publicJwk = publicJwkOf(privateKey);
  return { kid: thumbprint(publicJwk), privateKey, publicJwk, file };
}

/** The operator's files, in order; a ConfigError naming the setting, the file and the fault. */
function fromFiles(files: readonly string[]): SigningKey[] {
  const keys: SigningKey[] = [];
  for (const file of files) {
    let key: KeyObject;
    try {
      key = readKeyFile(file);
    } catch (err) {
      throw new ConfigError(`invalid ${SETTING}: ${file}: ${(err as Error).message}`);
    }
    const made = signingKey(file, key);
    const same = keys.find((k) => k.kid === made.kid);
    if (same !== undefined)
      throw new ConfigError(`invalid ${SETTING}: ${file} holds the same key as ${same.file}; list each key once`);
    keys.push(made);
  }
  return keys;
}

export type KeyWarning = (message: string, details: Record<string, unknown>) => void;

/** infracat's own key beside the SQLite database: made at the first start, reused after. */
function ownKey(databasePath: string, warn: KeyWarning): SigningKeys {
  const file = ownKeyFile(databasePath);
  const made = makePrivateFileOnce(file, () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  });
  let key: KeyObject;
  try {
    key = readKeyFile(file);
  } catch (err) {
    throw new ConfigError(
      `the signing key file ${file} (made by infracat beside the database) is not usable: ${(err as Error).message}; ` +
        'delete it to have a new key made at the next start (signed access tokens outstanding stop verifying), ' +
        `or set ${SETTING}`,
    );
  }
  // What infracat made is private; a file loosened since is reported, as the database's files are.
  const mode = sharedMode(file);
  if (mode !== null) {
    warn(
      `the signing key file ${file} is accessible to other local users (mode ${mode}): ` +
        'they could sign access tokens; chmod 600 it',
      { path: file, mode },
    );
  }
  return { keys: [signingKey(file, key)], origin: made ? 'made' : 'reused' };
}

export interface KeySettings {
  jwtSigningKeyFiles: readonly string[];
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };
}

/**
 * The signing keys the settings give, or null when signed access tokens are off
 * (PostgreSQL without JWT_SIGNING_KEY_FILES). Throws a ConfigError for a file that is not
 * exactly one P-256 private key.
 */
export function loadSigningKeys(settings: KeySettings, warn: KeyWarning): SigningKeys | null {
  if (settings.jwtSigningKeyFiles.length > 0) return { keys: fromFiles(settings.jwtSigningKeyFiles), origin: 'files' };
  if (settings.database.kind === 'sqlite') return ownKey(settings.database.path, warn);
  return null;
}
