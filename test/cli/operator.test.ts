// The operator commands act only on an existing infracat database, always say which one
// they used, and give a documented way back in (--all-scopes); a closed stdout ends a
// command quietly.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import { postgresBackend } from '../helpers/backends.js';
import { CLI, cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

const OPERATOR_COMMANDS: string[][] = [
  ['tokens', 'create', '--name', 'x', '--scopes', 'apps:read'],
  ['tokens', 'list'],
  ['tokens', 'delete', 'tok_01HZZZZZZZZZZZZZZZZZZZZZZZ'],
  ['catalog', 'export'],
  ['catalog', 'apply', path.resolve(import.meta.dirname, '../../catalog/default.yaml'), '--dry-run'],
  ['backup', 'never-written.sqlite'],
];

describe('operator commands never create a database', () => {
  it(
    'a path with no database: exit 66 naming the resolved file and how to create one; nothing is ' + 'created',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      for (const args of OPERATOR_COMMANDS) {
        // A relative path, as a typo or another working directory would give.
        const res = await cli([...args, '--database-url', 'sqlite:./typo/infracat.sqlite'], { cwd: tmp.dir });
        const resolved = path.join(tmp.dir, 'typo/infracat.sqlite');
        assert.equal(res.code, 66, `${args.join(' ')}: ${res.stderr}`);
        assert.ok(res.stderr.includes(`no infracat database at sqlite:${resolved}`), res.stderr);
        assert.match(res.stderr, /infracat migrate/);
        assert.equal(res.stdout, '');
        assert.ok(!existsSync(path.join(tmp.dir, 'typo')), `${args.join(' ')} created nothing`);
        assert.ok(!existsSync(path.join(tmp.dir, 'never-written.sqlite')));
      }
    },
  );

  it('the default location is resolved from the working directory and named', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const res = await cli(['tokens', 'list'], { cwd: tmp.dir, env: { DATABASE_URL: undefined } });
    assert.equal(res.code, 66);
    assert.ok(res.stderr.includes(path.join(tmp.dir, 'data/infracat.sqlite')), res.stderr);
    assert.ok(!existsSync(path.join(tmp.dir, 'data')));
  });

  it(
    "a SQLite file that is not an infracat database (empty, or another program's) is refused, " + 'unchanged',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const other = tmp.file('other.sqlite');
      const db = openDatabase(other);
      db.exec('CREATE TABLE notes (body TEXT)');
      db.close();
      const res = await cli([
        'tokens',
        'create',
        '--name',
        'x',
        '--scopes',
        'apps:read',
        '--database-url',
        `sqlite:${other}`,
      ]);
      assert.equal(res.code, 66, res.stderr);
      assert.match(res.stderr, /holds no infracat schema/);
      const check = openDatabase(other, { readonly: true });
      const tables = check.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[];
      check.close();
      assert.deepEqual(
        tables.map((r) => r.name),
        ['notes'],
        'no infracat table was added',
      );

      const text = tmp.file('notes.txt');
      spawnSync('sh', ['-c', `echo 'not a database at all, just some text here' > '${text}'`]);
      const notDb = await cli(['tokens', 'list', '--database-url', `sqlite:${text}`]);
      assert.equal(notDb.code, 66, notDb.stderr);
      assert.match(notDb.stderr, /is not a SQLite database/);
    },
  );

  it('PostgreSQL: a database without the infracat schema is refused; the password is never printed', async (t) => {
    const pg = postgresBackend(t);
    if (pg === undefined) return;
    const db = await pg.create();
    t.after(() => db.drop());
    const password = decodeURIComponent(new URL(db.url).password);
    const res = await cli(['tokens', 'list', '--database-url', db.url]);
    assert.equal(res.code, 66, res.stderr);
    assert.match(res.stderr, /holds no infracat schema/);
    assert.ok(!res.stderr.includes(password), 'password redacted');
    const migrated = await cli(['migrate', '--database-url', db.url]);
    assert.equal(migrated.code, 0, migrated.stderr);
    const listed = await cli(['tokens', 'list', '--database-url', db.url]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stderr, /^infracat: database postgres:\/\/postgres:\*+@/m);
    assert.ok(!listed.stderr.includes(password));
  });

  it('migrate creates the database; then every command says on stderr which database it used', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const url = `sqlite:${tmp.file()}`;
    const migrated = await cli(['migrate', '--database-url', url]);
    assert.equal(migrated.code, 0, migrated.stderr);
    for (const args of [['tokens', 'list'], ['catalog', 'export'], ['migrate']]) {
      const res = await cli([...args, '--database-url', url]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(
        res.stderr,
        new RegExp(`^infracat: database sqlite:${tmp.file().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'),
      );
    }
  });
});

describe('getting back in: tokens create --all-scopes', () => {
  it('grants every scope of the registry (the configured one), printing the secret once', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}`, SCOPE_RESOURCES: 'api-tokens,apps,billing' };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const res = await cli(['tokens', 'create', '--name', 'recovery', '--all-scopes', '--json'], { env });
    assert.equal(res.code, 0, res.stderr);
    const body = JSON.parse(res.stdout) as { scopes: string[]; token: string };
    assert.deepEqual(body.scopes, [
      'api-tokens:read',
      'api-tokens:write',
      'apps:read',
      'apps:write',
      'billing:read',
      'billing:write',
    ]);
    assert.match(body.token, /^icat_/);
    const list = await cli(['tokens', 'list', '--json'], { env });
    assert.ok(!list.stdout.includes(body.token), 'the secret is shown only once');
  });

  it('--all-scopes with --scopes, or neither, is a usage error (exit 2)', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const both = await cli(['tokens', 'create', '--name', 'x', '--all-scopes', '--scopes', 'apps:read'], { env });
    assert.equal(both.code, 2);
    assert.match(both.stderr, /one of --scopes or --all-scopes/);
    assert.equal((await cli(['tokens', 'create', '--name', 'x'], { env })).code, 2);
  });
});

describe('a closed stdout', () => {
  it('ends the command quietly: no EPIPE stack trace, exit 0', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { ...process.env, DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const tsx = import.meta.resolve('tsx');
    // `true` exits at once without reading, so every write of the command meets a closed pipe.
    const script =
      `"${process.execPath}" --import "${tsx}" "${CLI}" tokens create --name piped --all-scopes | true; ` +
      'echo "status=${PIPESTATUS[0]}" >&2';
    for (let i = 0; i < 3; i++) {
      const res = spawnSync('bash', ['-c', script], { env, encoding: 'utf8' });
      assert.match(res.stderr, /status=0/, res.stderr);
      assert.doesNotMatch(res.stderr, /EPIPE|Error|at /, res.stderr);
    }
  });
});
