import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A temporary directory for SQLite files; remove() deletes it. */
export function tempDir(prefix = 'infracat-test-'): { dir: string; file(name?: string): string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return {
    dir,
    file: (name = 'infracat.sqlite') => path.join(dir, name),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
