// The public keys GitHub signs secret-scanning reports with, read from the operator's
// file (SECRET_SCANNING_KEYS_FILE) in the format GitHub publishes them in
// (GET https://api.github.com/meta/public_keys/secret_scanning):
//   {"public_keys": [{"key_identifier": "...", "key": "-----BEGIN PUBLIC KEY-----...", "is_current": true}]}
//
// Read at start, where anything not exactly understood stops the start (fail closed):
// an unreadable file, text that is not that JSON, an empty list, a repeated identifier,
// a key that is not an EC P-256 public key (a private key included: it has no business
// in this file). The message names the setting, the file and what is wrong in it.
//
// GitHub rotates its keys (a new identifier appears, an old one goes), and operators
// fetch the list on a schedule; so the file is re-read when it changes, without a
// restart. The request path stays cheap: the keys live in memory, and whether the file
// changed is asked (one stat) at most once per `checkIntervalMs`, only when a report
// arrives. A changed file that cannot be read or is not valid keeps the last good keys
// (a half-written file must not open or close the endpoint) and is reported once per
// version of the file; the next change is read as any other.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { closeSync, fstatSync, openSync, promises as fsp, readFileSync, type Stats } from 'node:fs';
import { Type } from 'typebox';
import { Errors } from 'typebox/value';
import { ConfigError } from '../config-error.js';

const SETTING = 'SECRET_SCANNING_KEYS_FILE';
/** GitHub's list is a few KiB; anything near this is not that list. */
export const MAX_KEY_FILE_BYTES = 1024 * 1024;
/** How often, at most, a report makes the ring ask whether the file changed. */
export const KEY_FILE_CHECK_MS = 1000;

/** The file's shape. Fields GitHub may add later are allowed (and ignored). */
const KeyFileSchema = Type.Object({
  public_keys: Type.Array(
    Type.Object({
      // What the Github-Public-Key-Identifier header carries: visible ASCII.
      key_identifier: Type.String({ minLength: 1, maxLength: 256, pattern: '^[\\x21-\\x7e]+$' }),
      key: Type.String({ minLength: 1 }),
      is_current: Type.Optional(Type.Boolean()),
    }),
    { minItems: 1 },
  ),
});

/** The keys by identifier. */
export type KeySet = ReadonlyMap<string, KeyObject>;

/** The keys in the file's text; throws an Error saying what is wrong (without the setting or path). */
export function parseKeyFile(text: string): KeySet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`it is not JSON (${(err as Error).message.slice(0, 120)})`);
  }
  const errors = Errors(KeyFileSchema, parsed);
  if (errors.length > 0) {
    const first = errors[0]!;
    const where = first.instancePath === '' ? 'the top level' : first.instancePath;
    throw new Error(
      `it is not GitHub's key list {"public_keys": [{"key_identifier", "key", "is_current"}, ...]}: ` +
        `${where} ${first.message}`,
    );
  }
  const keys = new Map<string, KeyObject>();
  const entries = (parsed as { public_keys: { key_identifier: string; key: string }[] }).public_keys;
  for (const [i, entry] of entries.entries()) {
    const id = entry.key_identifier;
    const where = `/public_keys/${i} (key_identifier ${JSON.stringify(id)})`;
    if (keys.has(id)) throw new Error(`${where} repeats an identifier: which key would it mean?`);
    keys.set(id, publicP256Key(entry.key, where));
  }
  return keys;
}

/** The PEM text as an EC P-256 public key, or throws naming `where`. */
function publicP256Key(pem: string, where: string): KeyObject {
  // createPublicKey() would also take a private key and derive its public half: refuse one
  // instead (a private key in this file is a mistake to point out, not to use).
  if (!/^\s*-----BEGIN PUBLIC KEY-----/.test(pem)) {
    const label = /-----BEGIN ([A-Z0-9 ]+)-----/.exec(pem)?.[1];
    throw new Error(
      `${where}: the key must be a PEM public key (-----BEGIN PUBLIC KEY-----)` +
        (label !== undefined ? `, not ${label}` : ''),
    );
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch (err) {
    throw new Error(`${where}: the key cannot be read as PEM (${(err as Error).message})`);
  }
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (key.asymmetricKeyType !== 'ec' || curve !== 'prime256v1') {
    const what = key.asymmetricKeyType === 'ec' ? `an EC key on ${curve ?? 'an unnamed curve'}` : key.asymmetricKeyType;
    throw new Error(`${where}: the key is ${what ?? 'of an unknown type'}, not an EC P-256 (prime256v1) key`);
  }
  return key;
}

/** What identifies one version of the file: a rewrite, a rename over it or a swapped symlink changes it. */
function versionOf(s: Stats): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
}

function tooLarge(size: number): Error {
  return new Error(`it is ${size} bytes; a key list is far smaller (at most ${MAX_KEY_FILE_BYTES})`);
}

/** Reads the file at start: its keys and version, or a ConfigError naming the setting, the file and the fault. */
function loadKeyFileSync(path: string): { keys: KeySet; version: string } {
  try {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (err) {
      throw new Error(`cannot read it (${(err as Error).message})`);
    }
    try {
      // The version of exactly what is read: stat and read the same open file.
      const s = fstatSync(fd);
      if (!s.isFile()) throw new Error('it is not a regular file');
      if (s.size > MAX_KEY_FILE_BYTES) throw tooLarge(s.size);
      return { keys: parseKeyFile(readFileSync(fd, 'utf8')), version: versionOf(s) };
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw new ConfigError(`invalid ${SETTING} ${JSON.stringify(path)}: ${(err as Error).message}`);
  }
}

/** The same, at run time; throws an Error saying what is wrong. */
async function loadKeyFile(path: string): Promise<{ keys: KeySet; version: string }> {
  const cannotRead = (err: unknown) => new Error(`cannot read it (${(err as Error).message})`);
  const handle = await fsp.open(path, 'r').catch((err: unknown) => {
    throw cannotRead(err);
  });
  try {
    const s = await handle.stat();
    if (!s.isFile()) throw new Error('it is not a regular file');
    if (s.size > MAX_KEY_FILE_BYTES) throw tooLarge(s.size);
    const text = await handle.readFile('utf8').catch((err: unknown) => {
      throw cannotRead(err);
    });
    return { keys: parseKeyFile(text), version: versionOf(s) };
  } finally {
    await handle.close();
  }
}

export interface KeyRingOptions {
  /** How often, at most, to ask whether the file changed (default KEY_FILE_CHECK_MS; 0: at every lookup). */
  checkIntervalMs?: number;
  now?: () => number;
  /** Told the identifiers after a changed file was read. */
  onReload?: (identifiers: string[]) => void;
  /** Told why a changed file was not taken (the last good keys stay). Once per version of the file. */
  onReloadError?: (message: string) => void;
}

/** The configured keys, kept current with the file. */
export class KeyRing {
  private keys: KeySet;
  private version: string;
  private checkedAt: number;
  private checking: Promise<void> | null = null;
  /** The version of the file whose failure was last reported, so it is reported once. */
  private failedVersion: string | null = null;
  private readonly checkIntervalMs: number;
  private readonly now: () => number;

  /** Reads the file now; throws a ConfigError when it is not a valid key list (see the top of this file). */
  constructor(
    readonly path: string,
    private readonly options: KeyRingOptions = {},
  ) {
    ({ keys: this.keys, version: this.version } = loadKeyFileSync(path));
    this.checkIntervalMs = options.checkIntervalMs ?? KEY_FILE_CHECK_MS;
    this.now = options.now ?? Date.now;
    this.checkedAt = this.now();
  }

  /** The identifiers now in use. */
  identifiers(): string[] {
    return [...this.keys.keys()];
  }

  /** The key of that identifier, after taking in a changed file (checked at most once per interval); or undefined. */
  async get(identifier: string): Promise<KeyObject | undefined> {
    if (this.now() - this.checkedAt >= this.checkIntervalMs) {
      // Concurrent reports share one check.
      this.checking ??= this.refresh().finally(() => {
        this.checkedAt = this.now();
        this.checking = null;
      });
      await this.checking;
    }
    return this.keys.get(identifier);
  }

  private async refresh(): Promise<void> {
    let version: string;
    try {
      version = versionOf(await fsp.stat(this.path));
    } catch (err) {
      this.failed(`missing:${(err as NodeJS.ErrnoException).code ?? ''}`, `cannot read it (${(err as Error).message})`);
      return;
    }
    if (version === this.version) {
      this.failedVersion = null; // back to the file in use (a failure after this is news again)
      return;
    }
    if (version === this.failedVersion) return;
    try {
      const loaded = await loadKeyFile(this.path);
      this.keys = loaded.keys;
      this.version = loaded.version;
      this.failedVersion = null;
      this.options.onReload?.(this.identifiers());
    } catch (err) {
      this.failed(version, (err as Error).message);
    }
  }

  private failed(version: string, why: string): void {
    if (version === this.failedVersion) return;
    this.failedVersion = version;
    this.options.onReloadError?.(
      `${SETTING} ${JSON.stringify(this.path)} changed but ${why}; the last good keys stay in use`,
    );
  }
}
