// Start-up failures say what failed, where, the cause and what to do, with a sysexits
// code (docs/operations.md): never a raw Node message, never a password.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import type { TestContext } from 'node:test';
import { describe, it } from 'node:test';
import { isCI } from '../helpers/apt.js';
import { freePort } from '../helpers/embedded-pg.js';
import { admin as asAdmin, postgresBackend } from '../helpers/backends.js';
import { cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

const BASE = { BOOTSTRAP_ADMIN_TOKEN: 'false', DATABASE_TIMEOUT_MS: '2000' };

/** A tmpfs of our own that can be turned read-only (root only; required under CI). */
function readOnlyMount(t: TestContext): { dir: string; makeReadOnly(): void } | undefined {
  const tmp = tempDir();
  const dir = `${tmp.dir}/mnt`;
  mkdirSync(dir);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0) {
    tmp.remove();
    if (isCI()) throw new Error(`cannot mount a tmpfs for the read-only test: ${mounted.stderr}`);
    t.skip(`needs root to mount a tmpfs: ${mounted.stderr.trim()}`);
    return undefined;
  }
  t.after(() => {
    spawnSync('umount', [dir]);
    tmp.remove();
  });
  return {
    dir,
    makeReadOnly: () => {
      const ro = spawnSync('mount', ['-o', 'remount,ro', dir], { encoding: 'utf8' });
      assert.equal(ro.status, 0, ro.stderr);
    },
  };
}

describe('start-up failures', () => {
  it('port in use: exit 69 naming the address and what to do', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const blocker = createServer();
    const port = await new Promise<number>((resolve) =>
      blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)),
    );
    t.after(() => blocker.close());
    const res = await cli(['serve', '--port', String(port)], {
      env: { ...BASE, DATABASE_URL: `sqlite:${tmp.file()}` },
    });
    assert.equal(res.code, 69, res.stderr);
    assert.match(
      res.stderr,
      new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use \\(.*EADDRINUSE.*\\)\\. .*PORT`),
    );
  });

  it('port in use: the address named is the one the settings gave, read as the server reads them', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const blocker = createServer();
    const port = await new Promise<number>((resolve) =>
      blocker.listen(0, '127.0.0.1', () => {
        resolve((blocker.address() as { port: number }).port);
      }),
    );
    t.after(() => blocker.close());
    // An empty HOST counts as unset (the default address), a padded PORT is trimmed, a flag wins over both.
    const env = { ...BASE, DATABASE_URL: `sqlite:${tmp.file()}`, HOST: '', PORT: ` ${port} ` };
    const fromEnv = await cli(['serve'], { env });
    assert.equal(fromEnv.code, 69, fromEnv.stderr);
    assert.match(fromEnv.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use`));
    const fromFlag = await cli(['serve', `--port=${port}`], { env: { ...env, PORT: '1' } });
    assert.equal(fromFlag.code, 69, fromFlag.stderr);
    assert.match(fromFlag.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use`));
  });

  it('a HOST that is not an address of this machine: exit 78', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const res = await cli(['serve', '--host', '192.0.2.1', '--port', '0'], {
      env: { ...BASE, DATABASE_URL: `sqlite:${tmp.file()}` },
    });
    assert.equal(res.code, 78, res.stderr);
    assert.match(res.stderr, /cannot listen on 192\.0\.2\.1:0: HOST is not an address of this machine/);
  });

  it('a bare path in DATABASE_URL: exit 78 suggesting sqlite:PATH', async () => {
    const res = await cli(['serve'], { env: { ...BASE, DATABASE_URL: '/var/lib/infracat/ic.sqlite' } });
    assert.equal(res.code, 78);
    assert.match(res.stderr, /for a SQLite file write sqlite:\/var\/lib\/infracat\/ic\.sqlite/);
  });

  it(
    'PostgreSQL unreachable, host unknown, login refused, database missing: the cause, the redacted URL, the ' + 'fix',
    async (t) => {
      const port = await freePort();
      const refused = await cli(['serve'], {
        env: { ...BASE, DATABASE_URL: `postgres://infracat:s3cret-pw@127.0.0.1:${port}/infracat` },
      });
      assert.equal(refused.code, 69, refused.stderr);
      assert.match(
        refused.stderr,
        new RegExp(
          `cannot reach the database postgres://infracat:\\*\\*\\*@127\\.0\\.0\\.1:${port}/infracat: ` +
            `connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\. Nothing accepts connections there`,
        ),
      );
      const unknown = await cli(['migrate'], {
        env: { ...BASE, DATABASE_URL: 'postgres://infracat:s3cret-pw@db.invalid:5432/infracat' },
      });
      assert.equal(unknown.code, 69, unknown.stderr);
      assert.match(unknown.stderr, /ENOTFOUND db\.invalid.*does not resolve/);
      for (const r of [refused, unknown]) assert.ok(!r.stderr.includes('s3cret-pw'), 'the password never appears');

      const pg = postgresBackend(t);
      if (pg === undefined) return;
      const admin = pg.adminUrl;
      const wrong = new URL(admin);
      wrong.password = 'not-the-password';
      const login = await cli(['serve'], { env: { ...BASE, DATABASE_URL: wrong.toString() } });
      assert.equal(login.code, 78, login.stderr);
      assert.match(
        login.stderr,
        /refused the login: password authentication failed.*Check the user and password in DATABASE_URL/,
      );
      assert.ok(!login.stderr.includes('not-the-password'));
      const missing = new URL(admin);
      missing.pathname = '/no_such_database';
      const nodb = await cli(['serve'], { env: { ...BASE, DATABASE_URL: missing.toString() } });
      assert.equal(nodb.code, 78, nodb.stderr);
      assert.match(nodb.stderr, /database "no_such_database" does not exist\. Create it/);
    },
  );

  it('SQLite on a read-only filesystem: exit 74 naming the file and the fix, not "ENOENT"', async (t) => {
    const mount = readOnlyMount(t);
    if (mount === undefined) return;
    const url = `sqlite:${mount.dir}/infracat.sqlite`;
    assert.equal((await cli(['migrate'], { env: { DATABASE_URL: url } })).code, 0);
    mount.makeReadOnly();
    const res = await cli(['serve', '--port', '0'], { env: { ...BASE, DATABASE_URL: url } });
    assert.equal(res.code, 74, res.stderr);
    assert.ok(res.stderr.includes(`the database ${url} is read-only`), res.stderr);
    assert.match(res.stderr, /read-only filesystem \(EROFS\).*writable/);
    // A database to be created under it: the same cause, not mkdir's ENOENT.
    const below = await cli(['serve', '--port', '0'], {
      env: { ...BASE, DATABASE_URL: `sqlite:${mount.dir}/sub/ic.sqlite` },
    });
    assert.equal(below.code, 74, below.stderr);
    assert.doesNotMatch(below.stderr, /ENOENT/);
    assert.match(below.stderr, /read-only filesystem \(EROFS\)/);
  });

  it('PostgreSQL read-only (a standby): exit 74 at start', async (t) => {
    const pg = postgresBackend(t);
    if (pg === undefined) return;
    const db = await pg.create();
    t.after(() => db.drop());
    assert.equal((await cli(['migrate'], { env: { DATABASE_URL: db.url } })).code, 0);
    const name = new URL(db.url).pathname.slice(1);
    await asAdmin(pg.adminUrl, `ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    const res = await cli(['serve', '--port', '0'], { env: { ...BASE, DATABASE_URL: db.url } });
    assert.equal(res.code, 74, res.stderr);
    assert.match(res.stderr, /is read-only .*Point DATABASE_URL at the primary/);
  });
});
