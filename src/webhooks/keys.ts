// The keys that seal webhook signing secrets in storage (src/webhooks/secrets.ts).
//
// - WEBHOOK_ENCRYPTION_KEYS: the operator's keys; the first seals, every one opens.
// - Unset, on the embedded SQLite database: infracat makes one key at the first start (of
//   the server or of `infracat webhooks`) and keeps it beside the database file
//   (`<database>.webhook-key`), private to the service user like the database, and reuses
//   it after. Copying the database without that file copies no usable secret.
// - Unset, on PostgreSQL: none. Every instance of a fleet must open the same secrets and a
//   key is never stored in the database, so webhooks cannot be given a secret until the
//   operator sets the keys (503 WEBHOOKS_NOT_CONFIGURED).
//
// A file that is not exactly one key stops the start (fail closed); a key never reaches a
// log line, an error message or an answer.
import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { ConfigError } from '../config-error.js';
import { makePrivateFileOnce, sharedMode } from '../private-file.js';
import { ENCRYPTION_KEY_BYTES, parseEncryptionKey } from './secrets.js';

/** A key in base64 is 44 characters; anything much longer is not one. */
const MAX_KEY_FILE_BYTES = 1024;

/** Where the keys come from, as the start's log line says it. */
export type EncryptionKeyOrigin = 'setting' | 'made' | 'reused';

export interface EncryptionKeys {
  /** The first seals; every one opens. */
  keys: readonly Buffer[];
  origin: EncryptionKeyOrigin;
  /** The file of infracat's own key; absent for WEBHOOK_ENCRYPTION_KEYS. */
  file?: string;
}

export interface EncryptionKeySettings {
  webhookEncryptionKeys: readonly Buffer[];
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };
}

/** The file infracat keeps its own sealing key in, beside a SQLite database file. */
export function ownEncryptionKeyFile(databasePath: string): string {
  return `${databasePath}.webhook-key`;
}

function readKey(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const s = fstatSync(fd);
    if (!s.isFile()) throw new Error('it is not a regular file');
    if (s.size > MAX_KEY_FILE_BYTES) throw new Error(`it is ${s.size} bytes; a key in base64 is 44`);
    return parseEncryptionKey(readFileSync(fd, 'utf8'));
  } finally {
    closeSync(fd);
  }
}

/** infracat's own key beside the SQLite database: made at the first start, reused after. */
function ownKey(
  databasePath: string,
  warn: (message: string, details: Record<string, unknown>) => void,
): EncryptionKeys {
  const file = ownEncryptionKeyFile(databasePath);
  const made = makePrivateFileOnce(file, () => `${randomBytes(ENCRYPTION_KEY_BYTES).toString('base64')}\n`);
  let key: Buffer;
  try {
    key = readKey(file);
  } catch (err) {
    throw new ConfigError(
      `the webhook key file ${file} (made by infracat beside the database) is not usable: ${(err as Error).message}; ` +
        'restore it, or set WEBHOOK_ENCRYPTION_KEYS (without the key the stored webhook secrets cannot be opened)',
    );
  }
  const mode = sharedMode(file);
  if (mode !== null) {
    warn(
      `the webhook key file ${file} is accessible to other local users (mode ${mode}): ` +
        'with a copy of the database they could read the webhook secrets; chmod 600 it',
      { path: file, mode },
    );
  }
  return { keys: [key], origin: made ? 'made' : 'reused', file };
}

/**
 * The keys the settings give, or null when webhooks cannot be given a secret (PostgreSQL
 * without WEBHOOK_ENCRYPTION_KEYS). Throws a ConfigError for an own key file that is not
 * exactly one key.
 */
export function loadEncryptionKeys(
  settings: EncryptionKeySettings,
  warn: (message: string, details: Record<string, unknown>) => void,
): EncryptionKeys | null {
  if (settings.webhookEncryptionKeys.length > 0) return { keys: settings.webhookEncryptionKeys, origin: 'setting' };
  if (settings.database.kind === 'sqlite') return ownKey(settings.database.path, warn);
  return null;
}
