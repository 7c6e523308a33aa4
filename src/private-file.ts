// Files infracat makes for itself beside the SQLite database and that hold a key (the
// access-token signing key, the webhook secrets' sealing key): private to the service
// user, written whole before anyone can see them, and made once however many processes
// start on the same database at the same moment.
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

/**
 * Writes `make()` to `file` unless the file is there already (another process starting on
 * the same database may have made it first): whole, to a private temporary file, then
 * linked into place, which fails if the name exists. So the file is never seen half
 * written, never with a wider mode, and two starts agree on one content. True when this
 * call made it.
 */
export function makePrivateFileOnce(file: string, make: () => string): boolean {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  if (existsSync(file)) return false;
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, make());
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}

/** The mode of `file` (e.g. `0644`) when other local users may access it; null when it is private. */
export function sharedMode(file: string): string | null {
  if (process.platform === 'win32') return null;
  const mode = statSync(file).mode & 0o777;
  return (mode & 0o077) === 0 ? null : `0${mode.toString(8)}`;
}
