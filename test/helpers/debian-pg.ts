// Debian's own PostgreSQL 15 (package postgresql-15, what Debian 12 ships) as a throwaway
// test server: initdb into a temporary directory, the server on a free port of 127.0.0.1
// with its unix socket in that directory, removed by destroy(). Nothing of
// postgresql-common's (pg_createcluster, the `main` cluster, systemd) is used or touched.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ensureDebianBinary } from './apt.js';
import { freePort, serverBaseDir, TEST_PG_PASSWORD, type PostgresServer } from './pg-server.js';

export const DEBIAN_PG_MAJOR = 15;
export const DEBIAN_PG_PACKAGE = `postgresql-${DEBIAN_PG_MAJOR}`;
const BIN = `/usr/lib/postgresql/${DEBIAN_PG_MAJOR}/bin`;
const START_TIMEOUT_MS = 30_000;

export function debianPostgresInstalled(): boolean {
  return existsSync(path.join(BIN, 'postgres')) && existsSync(path.join(BIN, 'initdb'));
}

/**
 * The directory of the Debian binaries. Under CI a missing package is installed with
 * apt-get, and one that cannot be throws; its postinst creates Debian's `main` cluster,
 * which stays stopped (apt.ts's policy-rc.d). Undefined outside CI when the package is missing.
 */
export function ensureDebianPostgres(): string | undefined {
  const postgres = ensureDebianBinary(DEBIAN_PG_PACKAGE, [path.join(BIN, 'postgres')]);
  return postgres === undefined ? undefined : path.dirname(postgres);
}

/**
 * PostgreSQL refuses to run as root: as root the server runs as the `postgres` user, which
 * postgresql-common's postinst creates (the embedded server's harness may have created it
 * first; the postinst accepts that user).
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string): number => {
    const res = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
    if (res.status !== 0) throw new Error(`running as root and there is no \`postgres\` user: ${res.stderr.trim()}`);
    return Number.parseInt(res.stdout, 10);
  };
  return { uid: id('-u'), gid: id('-g') };
}

async function run(file: string, args: string[], user: object, log: string): Promise<void> {
  const fd = openSync(log, 'a');
  try {
    const child = spawn(file, args, { ...user, stdio: ['ignore', fd, fd], env: { ...process.env, LC_ALL: 'C' } });
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    if (code !== 0) throw new Error(`${path.basename(file)} failed (${code ?? signal}); its log:\n${tail(log)}`);
  } finally {
    closeSync(fd);
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Starts a new server from Debian's binaries (installing them first under CI). */
export async function startDebianPostgres(): Promise<PostgresServer> {
  const bin = ensureDebianPostgres();
  if (bin === undefined)
    throw new Error(`${DEBIAN_PG_PACKAGE} is not installed (apt-get install ${DEBIAN_PG_PACKAGE})`);
  const base = serverBaseDir();
  const data = path.join(base, 'data');
  const log = path.join(base, 'postgres.log');
  const port = await freePort();
  const url = `postgres://postgres:${TEST_PG_PASSWORD}@127.0.0.1:${port}/postgres`;
  const user = serverUser();
  const as = user ?? {};
  let proc: ChildProcess | undefined;

  // Should the test process end without destroy() (a crash past node:test's hooks), the
  // server does not outlive it: an immediate shutdown, and the directory goes.
  const onExit = (): void => {
    proc?.kill('SIGQUIT');
    rmSync(base, { recursive: true, force: true });
  };

  const start = async (): Promise<void> => {
    if (proc !== undefined) return;
    const fd = openSync(log, 'a');
    const child = spawn(
      path.join(bin, 'postgres'),
      [
        ...['-D', data, '-p', String(port)],
        ...['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${base}`],
        // A throwaway server: no fsync (speed); connections as the embedded server allows.
        ...['-c', 'fsync=off', '-c', 'max_connections=200', '-c', 'lc_messages=C'],
      ],
      { ...as, stdio: ['ignore', fd, fd], env: { ...process.env, LC_ALL: 'C' } },
    );
    closeSync(fd);
    // Never what keeps the test process alive: destroy() or onExit stops it.
    child.unref();
    let exited: string | undefined;
    child.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
    child.once('error', (err) => (exited = `could not be run: ${err.message}`));
    proc = child;
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
      try {
        await c.connect();
        await c.end();
        return;
      } catch (err) {
        await c.end().catch(() => undefined);
        if (exited !== undefined || Date.now() > deadline) {
          proc = undefined;
          child.kill('SIGQUIT');
          const why = exited ?? String(err);
          throw new Error(`the ${DEBIAN_PG_PACKAGE} server did not start (${why}); its log:\n${tail(log)}`);
        }
      }
      await sleep(100);
    }
  };

  const stop = async (): Promise<void> => {
    const child = proc;
    proc = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGINT'); // fast shutdown: disconnects clients, then a clean stop
    const immediate = setTimeout(() => child.kill('SIGQUIT'), 10_000);
    await exited;
    clearTimeout(immediate);
  };

  process.once('exit', onExit);
  try {
    if (user !== undefined) chownSync(base, user.uid, user.gid);
    // initdb reads the password from a file (never on a command line), removed at once.
    const pwfile = path.join(base, 'pwfile');
    writeFileSync(pwfile, `${TEST_PG_PASSWORD}\n`, { mode: 0o600 });
    if (user !== undefined) chownSync(pwfile, user.uid, user.gid);
    try {
      await run(
        path.join(bin, 'initdb'),
        [
          '-D',
          data,
          '-U',
          'postgres',
          `--pwfile=${pwfile}`,
          '--auth=scram-sha-256',
          '--locale=C',
          '--encoding=UTF8',
          '--no-sync',
        ],
        as,
        log,
      );
    } finally {
      rmSync(pwfile, { force: true });
    }
    await start();
  } catch (err) {
    process.removeListener('exit', onExit);
    await stop().catch(() => undefined);
    rmSync(base, { recursive: true, force: true });
    throw new Error(`could not start Debian's PostgreSQL ${DEBIAN_PG_MAJOR}: ${String(err)}`);
  }
  return {
    url,
    port,
    stop,
    start,
    async destroy() {
      await stop().catch(() => undefined);
      process.removeListener('exit', onExit);
      rmSync(base, { recursive: true, force: true });
    },
  };
}
