// The fleet registry on each storage backend (several "instances" = several stores on one
// database), and the arithmetic of the shares it hands the rate limiter.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FleetRegistry, shareOf, STALE_AFTER_BEATS, type FleetOperation } from '../../src/fleet/registry.js';
import type { Store } from '../../src/storage/types.js';
import pg from 'pg';
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import { backends, type Backend, type BackendDb } from '../helpers/backends.js';
import { rawSql } from '../helpers/raw-sql.js';
import { sleep, until } from '../helpers/until.js';

describe('shareOf: a fleet-wide quota split among the live instances', () => {
  it('the shares of ranks 0..n-1 add up to the quota exactly, differ by at most one, and none is 0', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), fc.integer({ min: 1, max: 64 }), (quota, n) => {
        const shares = Array.from({ length: n }, (_, rank) => shareOf(quota, { count: n, rank }));
        const sum = shares.reduce((a, b) => a + b, 0);
        if (quota >= n) assert.equal(sum, quota);
        else assert.equal(sum, n, 'a quota smaller than the fleet: one each');
        assert.ok(Math.max(...shares) - Math.min(...shares) <= 1);
        assert.ok(Math.min(...shares) >= 1);
      }),
    );
  });

  it('alone, the share is the quota (a single instance behaves as before)', () => {
    for (const quota of [1, 2, 7, 600, 10_000_000]) assert.equal(shareOf(quota, { count: 1, rank: 0 }), quota);
  });

  it('a view out of bounds (never sent by storage) is read within bounds: never more than the whole quota', () => {
    assert.equal(shareOf(20, { count: 0, rank: 0 }), 20);
    assert.equal(shareOf(20, { count: 3, rank: 7 }), 6, 'rank clamped to the last');
    assert.equal(shareOf(20, { count: 3, rank: -1 }), 7, 'rank clamped to the first');
  });
});

/**
 * Another session takes the write lock on `instances` and holds it until the returned
 * function releases it: meanwhile a store with a short timeout fails every heartbeat.
 */
async function holdWriteLock(backend: Backend, db: BackendDb): Promise<() => Promise<void>> {
  if (backend.name === 'postgres') {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    await c.query('BEGIN');
    await c.query('LOCK TABLE instances IN EXCLUSIVE MODE');
    return async () => {
      await c.query('COMMIT');
      await c.end();
    };
  }
  const raw = openDatabase(db.url.slice('sqlite:'.length));
  raw.exec('BEGIN IMMEDIATE');
  return () => {
    raw.exec('COMMIT');
    raw.close();
    return Promise.resolve();
  };
}

for (const backend of backends()) {
  describe(`fleet registry (${backend.name})`, () => {
    it(
      'each heartbeat counts the live instances; a graceful stop ' +
        'deletes the row and the others rebalance at their next heartbeat',
      async (t) => {
        const db = await backend.fresh(t);
        const stores: Store[] = [db.open(), db.open(), db.open()];
        t.after(async () => {
          for (const s of stores) await s.close();
        });
        const [a, b, c] = stores.map((s) => new FleetRegistry({ store: s.instances, heartbeatMs: 60_000 }));
        assert.equal(a!.count, 1, 'alone until the first heartbeat');
        await a!.start();
        await b!.start();
        await c!.start();
        assert.deepEqual([a!.count, b!.count, c!.count], [1, 2, 3], 'each saw the ones before it');
        await Promise.all([a!.beat(), b!.beat()]);
        assert.deepEqual([a!.count, b!.count, c!.count], [3, 3, 3]);
        assert.deepEqual([a!.rank, b!.rank, c!.rank].sort(), [0, 1, 2]);

        await c!.stop();
        assert.deepEqual(
          await rawSql(backend, db, 'SELECT id FROM instances WHERE id = ?', [c!.id]),
          [],
          'row deleted',
        );
        assert.deepEqual([a!.count, b!.count], [3, 3], 'until their next heartbeat');
        await Promise.all([a!.beat(), b!.beat()]);
        assert.deepEqual([a!.count, b!.count], [2, 2]);
        assert.deepEqual([a!.rank, b!.rank].sort(), [0, 1]);
        await c!.beat();
        assert.equal(
          (await rawSql(backend, db, 'SELECT id FROM instances')).length,
          2,
          'a stopped registry beats no more',
        );
        await a!.stop();
        await b!.stop();
      },
    );

    it(
      'an instance whose heartbeats stop (no graceful ' + 'stop) drops out after STALE_AFTER_BEATS intervals',
      async (t) => {
        const db = await backend.fresh(t);
        const stores: Store[] = [db.open(), db.open()];
        t.after(async () => {
          for (const s of stores) await s.close();
        });
        const live = new FleetRegistry({ store: stores[0]!.instances, heartbeatMs: 50 });
        // Beats once by hand, never on a timer: a process that froze or was killed.
        const frozenMs = 300;
        const frozen = new FleetRegistry({ store: stores[1]!.instances, heartbeatMs: frozenMs });
        const beatAt = Date.now();
        await frozen.beat();
        await live.start();
        t.after(() => live.stop());
        assert.equal(live.count, 2, 'the frozen one counts while its row is fresh');
        await until(() => live.count === 1, 'the frozen instance drops out');
        assert.ok(Date.now() - beatAt >= STALE_AFTER_BEATS * frozenMs, 'not before its expiry');
        const rows = await rawSql(backend, db, 'SELECT id FROM instances WHERE id = ?', [frozen.id]);
        assert.equal(rows.length, 1, 'its row stays (pruned an hour after it expired)');
      },
    );

    it('heartbeats start at start(), then run on the INSTANCE_HEARTBEAT_MS timer', async (t) => {
      const db = await backend.fresh(t);
      const stores: Store[] = [db.open(), db.open()];
      t.after(async () => {
        for (const s of stores) await s.close();
      });
      const [a, b] = stores.map((s) => new FleetRegistry({ store: s.instances, heartbeatMs: 100 }));
      t.after(async () => {
        await a!.stop();
        await b!.stop();
      });
      await a!.start();
      // Read before b starts: on a busy machine a's 100 ms timer may beat again while b starts.
      assert.equal(a!.count, 1, 'alone at its first heartbeat');
      await b!.start();
      await until(() => a!.count === 2, 'the first instance learns of the second by its own timer');
      await until(() => a!.stats.beats >= 3, 'more heartbeats');
    });

    it('a failed heartbeat keeps the last count (never "alone"), is counted and reported', async (t) => {
      const db = await backend.fresh(t);
      const stores: Store[] = [db.open(), db.open(), db.open()];
      t.after(async () => {
        for (const s of stores) await s.close();
      });
      const errors: FleetOperation[] = [];
      const changes: [number, number][] = [];
      const broken = new FleetRegistry({
        store: stores[0]!.instances,
        heartbeatMs: 60_000,
        onError: (_err, failed) => errors.push(failed),
        onChange: (count, previous) => changes.push([count, previous]),
      });
      const others = [stores[1]!, stores[2]!].map(
        (s) => new FleetRegistry({ store: s.instances, heartbeatMs: 60_000 }),
      );
      for (const o of others) await o.start();
      await broken.start();
      assert.equal(broken.count, 3);
      assert.deepEqual(changes, [[3, 1]]);
      const lastBeatAt = broken.stats.lastBeatAt;

      await stores[0]!.close(); // this instance's storage is gone: every statement fails
      await broken.beat();
      await broken.beat();
      assert.equal(broken.count, 3, 'the last known count, not 1');
      assert.deepEqual(broken.stats, { beats: 1, failures: 2, lastBeatAt });
      assert.deepEqual(errors, ['heartbeat', 'heartbeat']);

      await others[1]!.stop();
      await broken.stop();
      assert.deepEqual(errors, ['heartbeat', 'heartbeat', 'leave'], 'leaving failed too: the row expires by itself');
      await others[0]!.beat();
      assert.equal(others[0]!.count, 2, 'the broken one still counts until its row expires');
      await others[0]!.stop();
    });

    it(
      'after an outage longer than the staleness bound, the first ' +
        'heartbeat back does not shrink the count; the next one may',
      async (t) => {
        const db = await backend.fresh(t);
        const stores: Store[] = [db.open({ timeoutMs: 200 }), db.open(), db.open()];
        t.after(async () => {
          for (const s of stores) await s.close();
        });
        const first = new FleetRegistry({ store: stores[0]!.instances, heartbeatMs: 60_000 });
        // The two others beat once, with rows that expire 1.2 s later (wide enough for a busy
        // machine to get to the first beat in time): they are not back yet.
        const others = [stores[1]!, stores[2]!].map((s) => new FleetRegistry({ store: s.instances, heartbeatMs: 400 }));
        for (const o of others) await o.beat();
        await first.beat();
        assert.equal(first.count, 3);

        const release = await holdWriteLock(backend, db);
        await first.beat();
        assert.equal(first.stats.failures, 1);
        await sleep(1300);
        await release();

        await first.beat();
        assert.equal(first.stats.beats, 2, 'storage answers again');
        assert.equal(first.count, 3, 'the others rows expired during the outage, yet the count is not shrunk at once');
        await first.beat();
        assert.equal(first.count, 1, 'a second heartbeat that sees them gone is believed');
        await first.stop();
      },
    );

    it(
      'concurrent beats share one heartbeat; stop waits ' + 'for one in flight, so the row is not written back',
      async (t) => {
        const db = await backend.fresh(t);
        const store = db.open();
        t.after(() => store.close());
        const r = new FleetRegistry({ store: store.instances, heartbeatMs: 60_000 });
        const queries = store.stats.queries;
        await Promise.all([r.beat(), r.beat(), r.beat()]);
        assert.equal(r.stats.beats, 1);
        assert.equal(store.stats.queries - queries, 3, 'one upsert, one count, and the first prune of dead rows');
        const inFlight = r.beat();
        await r.stop();
        await inFlight;
        assert.deepEqual(await rawSql(backend, db, 'SELECT id FROM instances'), []);
      },
    );
  });
}
