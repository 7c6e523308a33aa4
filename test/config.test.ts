import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, DEFAULT_SQLITE_PATH, describeDatabase, loadConfig, SETTINGS } from '../src/config.js';

function expectError(env: Record<string, string>, pattern: RegExp): void {
  assert.throws(() => loadConfig(env), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.ok(!err.message.includes('\n'), 'one line');
    assert.match(err.message, pattern);
    return true;
  });
}

describe('configuration', () => {
  it('defaults: port 8080, loopback, info, SQLite at ./data/infracat.sqlite', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.logLevel, 'info');
    assert.deepEqual(c.database, { kind: 'sqlite', path: path.resolve(DEFAULT_SQLITE_PATH) });
    assert.equal(c.databasePoolMax, 10);
    assert.equal(c.databaseTimeoutMs, 5000);
    assert.equal(c.shutdownTimeoutMs, 10000);
    assert.ok(Object.isFrozen(c));
  });

  it('empty values count as unset', () => {
    assert.equal(loadConfig({ PORT: '', DATABASE_URL: '' }).port, 8080);
  });

  it('DATABASE_URL selects the backend', () => {
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:/var/lib/ic.db' }).database, { kind: 'sqlite', path: '/var/lib/ic.db' });
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:rel/x.sqlite' }).database, { kind: 'sqlite', path: path.resolve('rel/x.sqlite') });
    assert.deepEqual(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/ic' }).database, { kind: 'postgres', url: 'postgres://u:p@db:5432/ic' });
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://db/ic' }).database.kind, 'postgres');
  });

  it('a bare path in DATABASE_URL is refused with the sqlite: form to write instead', () => {
    for (const p of ['/var/lib/infracat/ic.sqlite', './data/infracat.sqlite', '../x.db', 'infracat.sqlite3']) {
      expectError({ DATABASE_URL: p }, new RegExp(`a bare path is not a database URL; for a SQLite file write sqlite:${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    }
    expectError({ DATABASE_URL: 'mysql://db/ic' }, /expected unset, sqlite:PATH, postgres/);
  });

  it('flags override environment variables', () => {
    const c = loadConfig({ PORT: '1000', LOG_LEVEL: 'warn' }, { PORT: '2000' });
    assert.equal(c.port, 2000);
    assert.equal(c.logLevel, 'warn');
  });

  it('bad values fail with one clear line naming the setting', () => {
    expectError({ PORT: 'eighty' }, /^invalid PORT "eighty": expected an integer from 0 to 65535$/);
    expectError({ PORT: '70000' }, /PORT/);
    expectError({ PORT: '-1' }, /PORT/);
    expectError({ LOG_LEVEL: 'loud' }, /LOG_LEVEL.*expected one of fatal, error/);
    expectError({ DATABASE_URL: 'mysql://x' }, /DATABASE_URL.*sqlite:PATH, postgres/);
    expectError({ DATABASE_URL: 'sqlite:' }, /DATABASE_URL.*file path/);
    expectError({ DATABASE_URL: 'sqlite::memory:' }, /DATABASE_URL.*in-memory/);
    expectError({ DATABASE_POOL_MAX: '0' }, /DATABASE_POOL_MAX/);
    expectError({ HOST: 'two words' }, /HOST/);
  });

  it('passwords never appear in messages or descriptions', () => {
    assert.equal(describeDatabase(loadConfig({ DATABASE_URL: 'postgres://app:hunter2@db/ic' }).database), 'postgres://app:***@db/ic');
    expectError({ DATABASE_URL: 'postgres://app:hunter2@' }, /^(?!.*hunter2)/);
  });

  it('README documents every setting with its default', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const s of SETTINGS) {
      const row = readme.split('\n').find((l) => l.startsWith(`| \`${s.env}\``));
      assert.ok(row, `README has a row for ${s.env}`);
      assert.ok(row.includes(s.default === '' ? '(unset)' : `\`${s.default}\``), `README shows the default of ${s.env}`);
    }
  });
});

describe('error catalog documentation', () => {
  it('docs/errors.md lists every code with its status', async () => {
    const { ERRORS } = await import('../src/errors.js');
    const doc = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
    for (const [code, { status }] of Object.entries(ERRORS)) {
      assert.ok(doc.includes(`| \`${code}\` | ${status} |`), `docs/errors.md documents ${code}`);
    }
  });
});
