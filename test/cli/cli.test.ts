import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SETTINGS } from '../../src/config.js';
import { cli } from '../helpers/process.js';
import { backends } from '../helpers/backends.js';
import { tempDir } from '../helpers/sqlite.js';

describe('infracat command', () => {
  it('every command has --help', async () => {
    const top = await cli(['--help']);
    assert.equal(top.code, 0);
    assert.match(top.stdout, /Usage: infracat <command>/);
    assert.match(top.stdout, /serve/);
    assert.match(top.stdout, /migrate/);
    for (const cmd of ['serve', 'migrate', 'tokens', 'accounts', 'catalog', 'audit', 'backup']) {
      const res = await cli([cmd, '--help']);
      assert.equal(res.code, 0, cmd);
      assert.match(res.stdout, new RegExp(`Usage: infracat ${cmd}`));
      const viaHelp = await cli(['help', cmd]);
      assert.equal(viaHelp.stdout, res.stdout);
    }
    // Every setting with its default and its description (the words, re-wrapped for a terminal).
    const serveHelp = await cli(['serve', '-h']);
    const flat = serveHelp.stdout.replace(/\s+/g, ' ');
    for (const s of SETTINGS) {
      assert.ok(flat.includes(`${s.env}=${s.default === '' ? '(unset)' : s.default}`), `${s.env} and its default`);
      assert.ok(flat.includes(s.description.replace(/\s+/g, ' ')), `${s.env}'s description`);
    }
    assert.ok(
      serveHelp.stdout.split('\n').every((l) => l.length <= 80 || /^ {2}[A-Z_]+=/.test(l)),
      'descriptions are wrapped for a terminal',
    );
  });

  it('--version prints the package version', async () => {
    const res = await cli(['--version']);
    assert.equal(res.code, 0);
    assert.match(res.stdout, /^\d+\.\d+\.\d+$/);
  });

  it('unknown commands and flags exit 2 with a pointer to help', async () => {
    const unknown = await cli(['frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command 'frobnicate'/);
    const badFlag = await cli(['migrate', '--no-such-flag']);
    assert.equal(badFlag.code, 2);
    assert.match(badFlag.stderr, /infracat migrate --help/);
  });

  it('a bad setting stops the start with one clear line (exit 78)', async () => {
    const res = await cli(['serve'], { env: { PORT: 'eighty' } });
    assert.equal(res.code, 78);
    assert.equal(
      res.stderr.trim(),
      'infracat: configuration error: invalid PORT "eighty": expected an integer from 0 to 65535',
    );
    const flag = await cli(['serve', '--database-url', 'mysql://x']);
    assert.equal(flag.code, 78);
    assert.match(flag.stderr, /DATABASE_URL/);
  });

  it('each serve flag sets its setting, over the variable, and is read as the variable would be', async () => {
    const flags = [
      ['--port', 'PORT', '0'],
      ['--host', 'HOST', '127.0.0.1'],
      ['--log-level', 'LOG_LEVEL', 'info'],
      ['--database-url', 'DATABASE_URL', 'sqlite:./data/x.sqlite'],
    ] as const;
    for (const [flag, name, good] of flags) {
      const res = await cli(['serve', `${flag}=:memory: x`], { env: { [name]: good } });
      assert.equal(res.code, 78, `${flag}: ${res.stderr}`);
      assert.match(res.stderr, new RegExp(`^infracat: configuration error: invalid ${name} ":memory: x"`), flag);
    }
  });

  it('migrate creates and migrates a SQLite file, then reports it current', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const file = tmp.file('sub/ic.sqlite');
    const first = await cli(['migrate', '--database-url', `sqlite:${file}`]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /schema at version \d+ \(applied 1/);
    assert.ok(existsSync(file));
    const second = await cli(['migrate'], { env: { DATABASE_URL: `sqlite:${file}` } });
    assert.match(second.stdout, /already current/);
  });

  for (const backend of backends()) {
    it(`migrate on ${backend.name}: several at once apply each migration exactly once`, async (t) => {
      const db = await backend.create();
      t.after(() => db.drop());
      const runs = await Promise.all([1, 2, 3].map(() => cli(['migrate'], { env: { DATABASE_URL: db.url } })));
      for (const r of runs) assert.equal(r.code, 0, r.stderr);
      assert.equal(runs.filter((r) => /applied 1/.test(r.stdout)).length, 1, runs.map((r) => r.stdout).join('\n'));
      assert.equal(runs.filter((r) => /already current/.test(r.stdout)).length, 2);
      const password = new URL(db.url).password;
      if (password !== '') for (const r of runs) assert.ok(!r.stdout.includes(password), 'no password in output');
    });
  }
});
