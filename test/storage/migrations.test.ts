import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BOOKKEEPING, LATEST_VERSION, VERSIONED, pendingMigrations } from '../../src/storage/migrations.js';

describe('the migration list', () => {
  it('entry 0 is the bookkeeping, idempotent (run at every migrate); the others are versions 1..n in order', () => {
    assert.equal(BOOKKEEPING.version, 0);
    for (const step of BOOKKEEPING.steps) {
      assert.ok(typeof step === 'string' || !('data' in step), 'the bookkeeping is SQL only');
      for (const sql of typeof step === 'string' ? [step] : Object.values(step)) {
        assert.match(sql, /IF NOT EXISTS|ON CONFLICT DO NOTHING/, `idempotent: ${sql}`);
      }
    }
    assert.deepEqual(
      VERSIONED.map((m) => m.version),
      Array.from({ length: LATEST_VERSION }, (_, i) => i + 1),
    );
  });

  it('pending: what is not applied yet, in order, up to a bound; a newer schema than known is refused', () => {
    assert.deepEqual(
      pendingMigrations(new Set()).map((m) => m.version),
      VERSIONED.map((m) => m.version),
    );
    assert.deepEqual(
      pendingMigrations(new Set([1]), 2).map((m) => m.version),
      [2],
    );
    assert.deepEqual(pendingMigrations(new Set(VERSIONED.map((m) => m.version))), []);
    assert.throws(() => pendingMigrations(new Set([LATEST_VERSION + 1])), /newer than this infracat knows/);
  });
});
