import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DRIVER_PACKAGE } from '../../src/storage/sqlite/driver.js';

describe('SQLite driver', () => {
  it('loads the better-sqlite3 build that works on this Node.js', () => {
    const major = Number(process.versions.node.split('.')[0]);
    assert.equal(DRIVER_PACKAGE, major >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3');
  });

  it('survives garbage collection of closed stores\' statements (no native abort)', () => {
    const script = path.resolve(import.meta.dirname, '../fixtures/gc-stress.ts');
    const res = spawnSync(process.execPath, ['--expose-gc', '--import', import.meta.resolve('tsx'), script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(res.signal, null, `killed by ${String(res.signal)}: ${res.stderr.slice(0, 500)}`);
    assert.equal(res.status, 0, res.stderr.slice(0, 500));
    assert.equal(res.stdout.trim(), 'clean');
  });
});
