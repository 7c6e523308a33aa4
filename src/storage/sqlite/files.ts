// The SQLite database is private to the service user: it holds the token hashes. What
// infracat creates, it creates private: missing directories 0700, the database file 0600
// (SQLite gives its -wal and -shm files the database file's mode). What already exists
// is the operator's choice and is left as it is, but access by other local users is
// reported, so a deployment made with looser modes gets told.
import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';

export type StorageWarning = (message: string, details: Record<string, unknown>) => void;

/** Creates what is missing of `file` and its directories privately; reports what others can reach. */
export function preparePrivateFile(file: string, warn?: StorageWarning): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Created here, before SQLite opens it, so it never exists with the umask's mode.
  closeSync(openSync(file, 'a', 0o600));
  // Windows has no such mode bits (Node reports made-up ones).
  if (warn === undefined || process.platform === 'win32') return;
  const dirMode = statSync(dir).mode & 0o777;
  if ((dirMode & 0o022) !== 0) {
    warn(
      `the directory ${dir} of the SQLite database is writable by other local users (mode ${octal(dirMode)}): ` +
        'they could replace or plant its files; chmod 700 it',
      { path: dir, mode: octal(dirMode) },
    );
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    if (f !== file && !existsSync(f)) continue;
    const mode = statSync(f).mode & 0o777;
    if ((mode & 0o077) === 0) continue;
    const what = (mode & 0o044) !== 0 ? 'readable' : 'writable';
    warn(
      `the SQLite file ${f} is ${what} by other local users (mode ${octal(mode)}); it holds token hashes: chmod 600 it`,
      { path: f, mode: octal(mode) },
    );
  }
}

const octal = (mode: number): string => `0${mode.toString(8).padStart(3, '0')}`;
