import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BOOKKEEPING, LATEST_VERSION, VERSIONED, pendingMigrations } from '../../src/storage/migrations.js';

describe('the migration list', () => {
  it('entry 0 is the bookkeeping, idempotent (run at every migrate); the others are versions from 1 up, in order', () => {
    assert.equal(BOOKKEEPING.version, 0);
    for (const step of BOOKKEEPING.steps) {
      assert.ok(typeof step === 'string' || !('data' in step), 'the bookkeeping is SQL only');
      for (const sql of typeof step === 'string' ? [step] : Object.values(step)) {
        assert.match(sql, /IF NOT EXISTS|ON CONFLICT DO NOTHING/, `idempotent: ${sql}`);
      }
    }
    // Numbers are handed out ahead of merging, so a number may be unused; never twice, never out of order.
    const versions = VERSIONED.map((m) => m.version);
    assert.equal(versions[0], 1);
    assert.ok(
      versions.every((v, i) => i === 0 || v > versions[i - 1]!),
      `increasing: ${versions.join(', ')}`,
    );
    assert.equal(versions.at(-1), LATEST_VERSION);
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
