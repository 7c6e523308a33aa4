// The storage contract: every backend of test/helpers/backends.ts runs exactly these
// tests. A backend that fails one is not done.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import pg from 'pg';
import { LATEST_VERSION, VERSIONED } from '../../src/storage/migrations.js';
import type { AccountRecord, AuditEventRecord, InstanceRecord, Store, TokenRecord } from '../../src/storage/types.js';
import { ev, rev } from '../helpers/audit.js';
import { backends, debianPostgres, type Backend, type BackendDb } from '../helpers/backends.js';
import { insertRows, rawSql } from '../helpers/raw-sql.js';
import { ACCOUNTS, API_TOKENS } from '../../src/storage/tables.js';
import { BATCH_ROWS } from '../../src/storage/sql-store.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { TOKENS_BEFORE_CONDITIONS } from '../helpers/older-tables.js';

const ALL_VERSIONS = VERSIONED.map((m) => m.version);

let seq = 0;
function sampleToken(over: Partial<TokenRecord> = {}): TokenRecord {
  seq += 1;
  return {
    id: `tok_${String(seq).padStart(6, '0')}_${randomUUID().slice(0, 8)}`,
    name: `token ${seq}`,
    scopes: ['apps:read'],
    secretHash: randomBytes(32).toString('hex'),
    createdAt: 1_700_000_000_000 + seq,
    expiresAt: null,
    lastUsedAt: null,
    lastUsedIp: null,
    accountId: OPERATOR_ACCOUNT_ID,
    previousSecretHash: null,
    previousExpiresAt: null,
    allowedCidrs: null,
    notBefore: null,
    enabled: true,
    ...over,
  };
}

let accountSeq = 0;
function sampleAccount(over: Partial<AccountRecord> = {}): AccountRecord {
  accountSeq += 1;
  return {
    id: `acc_${String(accountSeq).padStart(6, '0')}_${randomUUID().slice(0, 8)}`,
    name: `account ${accountSeq}`,
    externalId: null,
    status: 'active',
    createdAt: 1_700_000_000_000 + accountSeq,
    rateLimit: null,
    ...over,
  };
}

/** An instance's heartbeat row at `at`, live for `ttl` ms. */
function beat(id: string, at: number, ttl = 6000, started = at): InstanceRecord {
  return { id, host: 'host-1', pid: 4242, startedAt: started, heartbeatAt: at, expiresAt: at + ttl };
}

const NOW = 1_800_000_000_000;
const NO_LIMIT = { maxLive: 1_000_000, now: NOW };

for (const backend of backends()) runStoreContract(backend);
// Debian's PostgreSQL 15 as well as the embedded server: users run what their distribution ships.
const debian = debianPostgres();
runStoreContract(debian.backend, debian.skip);

function runStoreContract(backend: Backend, skip: string | false = false): void {
  // `open()` may be called several times on one database: one Store per "instance".
  describe(`storage contract: ${backend.label}`, { skip }, () => {
    let db: BackendDb;
    let store: Store;
    const opened: Store[] = [];
    const open = (): Store => {
      const s = db.open();
      opened.push(s);
      return s;
    };

    before(async () => {
      db = await backend.create();
      store = open();
      const report = await store.migrate();
      assert.deepEqual(report.applied, ALL_VERSIONS);
      assert.equal(report.version, LATEST_VERSION);
    });

    after(async () => {
      for (const s of opened) await s.close();
      await db.drop();
    });

    if (backend.name === 'postgres') {
      const { server } = backend;
      const expected =
        server === undefined
          ? 'any version (your server)'
          : `${server.major}.x${server.debian ? ', a Debian build' : ''}`;
      // So that nobody mistakes one PostgreSQL half for the other: the server says what it is.
      it(`runs on the server it is named after: SHOW server_version is ${expected}`, async (t) => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        let version: string;
        try {
          version = (await c.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
        } finally {
          await c.end();
        }
        t.diagnostic(`server_version ${version}`);
        assert.match(version, /^\d+\.\d+/);
        if (server === undefined) return;
        assert.ok(version.startsWith(`${server.major}.`), `expected PostgreSQL ${server.major}, got ${version}`);
        // Debian's builds say so in their version ("15.18 (Debian 15.18-0+deb12u1)"); the embedded one does not.
        assert.equal(/\(Debian /.test(version), server.debian, version);
      });
    }

    it('migrate is idempotent: a second run applies nothing', async () => {
      const again = await store.migrate();
      assert.deepEqual(again.applied, []);
      assert.equal(again.version, LATEST_VERSION);
    });

    it('ping resolves while the database is reachable', async () => {
      await store.ping();
    });

    it('create stores every field; get and findByHash return it unchanged', async () => {
      const t = sampleToken({
        name: 'déploiement ✓ 🚀',
        scopes: ['apps:read', 'apps:write'],
        expiresAt: NOW + 60_000,
        lastUsedAt: null,
      });
      assert.equal(await store.tokens.create(t, NO_LIMIT, ev()), 'created');
      assert.deepEqual(await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id), t);
      assert.deepEqual(await store.tokens.findByHash(t.secretHash), {
        ...t,
        accountStatus: 'active',
        accountRateLimit: null,
      });
      assert.equal(await store.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_unknown'), null);
      assert.equal(await store.tokens.findByHash('0'.repeat(64)), null);
    });

    it('a second token with the same secret hash or id is refused', async () => {
      const t = sampleToken();
      await store.tokens.create(t, NO_LIMIT, ev());
      await assert.rejects(store.tokens.create(sampleToken({ secretHash: t.secretHash }), NO_LIMIT, ev()));
      await assert.rejects(store.tokens.create(sampleToken({ id: t.id }), NO_LIMIT, ev()));
    });

    it('list returns live tokens oldest first and leaves expired ones out', async () => {
      const fresh = await backend.create();
      const s = fresh.open();
      try {
        await s.migrate();
        const b = sampleToken({ createdAt: 2000, id: 'tok_b' });
        const a = sampleToken({ createdAt: 1000, id: 'tok_a' });
        const c = sampleToken({ createdAt: 2000, id: 'tok_c', expiresAt: NOW + 1 });
        const expired = sampleToken({ createdAt: 500, id: 'tok_x', expiresAt: NOW });
        for (const t of [b, a, c, expired]) await s.tokens.create(t, NO_LIMIT, ev());
        assert.deepEqual(
          (await s.tokens.list(OPERATOR_ACCOUNT_ID, NOW, { limit: 1000 })).map((t) => t.id),
          ['tok_a', 'tok_b', 'tok_c'],
        );
        assert.deepEqual(
          (await s.tokens.list(OPERATOR_ACCOUNT_ID, NOW + 1, { limit: 1000 })).map((t) => t.id),
          ['tok_a', 'tok_b'],
        );
        assert.equal(await s.tokens.count(), 4, 'count includes expired tokens');
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it(
      'list takes the retention bound: tokens expired after it stay listed; purgeExpired deletes only those ' +
        'before it',
      async () => {
        const fresh = await backend.create();
        const s = fresh.open();
        try {
          await s.migrate();
          const DAY = 86_400_000;
          const forever = sampleToken({ createdAt: 1, id: 'tok_forever', expiresAt: null });
          const live = sampleToken({ createdAt: 2, id: 'tok_live', expiresAt: NOW + DAY });
          const recent = sampleToken({ createdAt: 3, id: 'tok_recent', expiresAt: NOW - DAY });
          const old = sampleToken({ createdAt: 4, id: 'tok_old', expiresAt: NOW - 40 * DAY });
          const edge = sampleToken({ createdAt: 5, id: 'tok_edge', expiresAt: NOW - 30 * DAY });
          for (const t of [forever, live, recent, old, edge]) await s.tokens.create(t, NO_LIMIT, ev());
          const retainedSince = NOW - 30 * DAY;
          assert.deepEqual(
            (await s.tokens.list(OPERATOR_ACCOUNT_ID, retainedSince, { limit: 1000 })).map((t) => t.id),
            ['tok_forever', 'tok_live', 'tok_recent'],
          );
          assert.equal(await s.tokens.purgeExpired(retainedSince, 1000, () => ev()), 2, 'the old and the edge token');
          assert.equal(await s.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_old'), null);
          assert.equal(await s.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_edge'), null);
          assert.notEqual(
            await s.tokens.get(OPERATOR_ACCOUNT_ID, 'tok_recent'),
            null,
            'an expired token within the retention stays',
          );
          assert.equal(await s.tokens.count(), 3);
          assert.equal(await s.tokens.purgeExpired(retainedSince, 1000, () => ev()), 0, 'idempotent');
          assert.equal(
            await s.tokens.create(sampleToken({ id: 'tok_cap' }), { maxLive: 3, now: NOW }, ev()),
            'created',
            'the cap counts live tokens only (forever, live, cap)',
          );
        } finally {
          await s.close();
          await fresh.drop();
        }
      },
    );

    it('delete removes the token once and reports whether it existed', async () => {
      const t = sampleToken();
      await store.tokens.create(t, NO_LIMIT, ev());
      assert.equal(await store.tokens.delete(OPERATOR_ACCOUNT_ID, t.id, ev()), true);
      assert.equal(await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id), null);
      assert.equal(await store.tokens.findByHash(t.secretHash), null);
      assert.equal(await store.tokens.delete(OPERATOR_ACCOUNT_ID, t.id, ev()), false);
      assert.ok(!(await store.tokens.list(OPERATOR_ACCOUNT_ID, NOW, { limit: 1000 })).some((x) => x.id === t.id));
    });

    it('touch sets last_used_at, never moves it backwards, and takes the latest of a batch', async () => {
      const t = sampleToken();
      await store.tokens.create(t, NO_LIMIT, ev());
      await store.tokens.touch([{ id: t.id, at: 5000 }]);
      assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id))?.lastUsedAt, 5000);
      await store.tokens.touch([{ id: t.id, at: 4000 }]);
      assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id))?.lastUsedAt, 5000, 'an older time does not win');
      await store.tokens.touch([
        { id: t.id, at: 7000 },
        { id: t.id, at: 6000 },
        { id: 'tok_missing', at: 9000 },
      ]);
      assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id))?.lastUsedAt, 7000);
      await store.tokens.touch([]);
    });

    it('touch records the address of the use it keeps: the latest one, never an older one', async () => {
      const t = sampleToken();
      await store.tokens.create(t, NO_LIMIT, ev());
      await store.tokens.touch([
        { id: t.id, at: 5000, ip: '203.0.113.5' },
        { id: t.id, at: 4000, ip: '198.51.100.4' },
      ]);
      let got = await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id);
      assert.deepEqual([got?.lastUsedAt, got?.lastUsedIp], [5000, '203.0.113.5']);
      await store.tokens.touch([{ id: t.id, at: 4500, ip: '198.51.100.4' }]);
      got = await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id);
      assert.equal(got?.lastUsedIp, '203.0.113.5', 'an older use does not change it');
      await store.tokens.touch([{ id: t.id, at: 6000, ip: null }]);
      got = await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id);
      assert.deepEqual([got?.lastUsedAt, got?.lastUsedIp], [6000, null], 'a use from an unknown address');
    });

    it('addUsage adds to each (token, hour) row, whoever adds; usage reads a range oldest first', async () => {
      const H = 3_600_000;
      const cell = (tokenId: string, hour: number, counts: number[]) => ({ tokenId, hour, counts });
      const zeros = [0, 0, 0, 0, 0, 0, 0, 0];
      await store.tokens.addUsage([
        cell('tok_u1', 10 * H, [3, 1, 0, 0, 0, 2, 0, 0]),
        cell('tok_u1', 11 * H, [1, ...zeros.slice(1)]),
      ]);
      const other = open();
      try {
        // Another instance adds to the same rows (and to a token's hour nobody had yet).
        await other.tokens.addUsage([
          cell('tok_u1', 10 * H, [2, 0, 0, 0, 0, 1, 4, 0]),
          cell('tok_u2', 10 * H, [9, ...zeros.slice(1)]),
        ]);
      } finally {
        await other.close();
      }
      assert.deepEqual(await store.tokens.usage('tok_u1', 10 * H, 12 * H), [
        cell('tok_u1', 10 * H, [5, 1, 0, 0, 0, 3, 4, 0]),
        cell('tok_u1', 11 * H, [1, ...zeros.slice(1)]),
      ]);
      assert.deepEqual(await store.tokens.usage('tok_u1', 11 * H, 12 * H), [
        cell('tok_u1', 11 * H, [1, ...zeros.slice(1)]),
      ]);
      assert.deepEqual(await store.tokens.usage('tok_u1', 12 * H, 20 * H), [], 'no row: no use');
      assert.deepEqual(await store.tokens.usage('tok_u2', 0, 20 * H), [cell('tok_u2', 10 * H, [9, ...zeros.slice(1)])]);
      await store.tokens.addUsage([]);
    });

    it('addUsage sends one statement per BATCH_ROWS cells of its dialect, and every count arrives', async () => {
      const H = 3_600_000;
      const n = BATCH_ROWS[backend.name] * 2 + 7;
      const cells = Array.from({ length: n }, (_, i) => ({
        tokenId: `tok_chunk${String(i % 300).padStart(4, '0')}`,
        hour: (100 + Math.floor(i / 300)) * H,
        counts: [i, 1, 0, 0, 0, 0, 0, 2],
      }));
      const s = open();
      try {
        const before = s.stats.queries;
        await s.tokens.addUsage(cells);
        assert.equal(s.stats.queries - before, 3, 'one statement per chunk');
        await s.tokens.addUsage(cells);
      } finally {
        await s.close();
      }
      for (const id of ['tok_chunk0000', 'tok_chunk0299']) {
        const mine = cells.filter((c) => c.tokenId === id);
        assert.deepEqual(
          await store.tokens.usage(id, 0, 1000 * H),
          mine.map((c) => ({ ...c, counts: c.counts.map((x) => 2 * x) })),
          id,
        );
      }
    });

    it('pruneUsage deletes the hours before the bound, oldest first, at most a batch per call', async () => {
      const H = 3_600_000;
      const base = 0; // before every other hour of this suite: the bound prunes only these
      const cells = Array.from({ length: 60 }, (_, i) => ({
        tokenId: `tok_prune${i % 12}`,
        hour: base + Math.floor(i / 12) * H,
        counts: [1, 0, 0, 0, 0, 0, 0, 0],
      }));
      await store.tokens.addUsage(cells);
      const bound = base + 3 * H; // three hours of 12 rows before it: 36 rows
      assert.equal(await store.tokens.pruneUsage(bound, 20), 20, 'one batch');
      assert.equal(await store.tokens.pruneUsage(bound, 20), 16, 'the rest');
      assert.equal(await store.tokens.pruneUsage(bound, 20), 0, 'idempotent');
      for (let i = 0; i < 12; i++) {
        const left = await store.tokens.usage(`tok_prune${i}`, 0, base + 10 * H);
        assert.deepEqual(
          left.map((c) => c.hour),
          [base + 3 * H, base + 4 * H],
          'hours from the bound on are kept',
        );
      }
    });

    it('upgrade to schema 15: tokens keep every field, last_used_ip null; usage starts empty', async () => {
      const older = await backend.create();
      const s = older.open();
      try {
        await s.migrate({ upTo: 11 });
        const t = sampleToken({ lastUsedAt: 1234 });
        await insertRows(backend, older, TOKENS_BEFORE_CONDITIONS, [t]);
        const report = await s.migrate();
        assert.ok(report.applied.includes(15), JSON.stringify(report));
        assert.deepEqual(await s.tokens.get(OPERATOR_ACCOUNT_ID, t.id), { ...t, lastUsedIp: null });
        assert.deepEqual(await s.tokens.usage(t.id, 0, Number.MAX_SAFE_INTEGER), []);
      } finally {
        await s.close();
        await older.drop();
      }
    });

    it('upgrade to schema 16: tokens used before it are listed by last use, and move when used again', async () => {
      const older = await backend.create();
      const s = older.open();
      try {
        await s.migrate({ upTo: 15 });
        // Seeded as rows: the store's writes also fill tables of later schemas.
        const account = sampleAccount();
        await insertRows(backend, older, ACCOUNTS, [account]);
        const [early, late, never] = [
          sampleToken({ lastUsedAt: 1000 }),
          sampleToken({ lastUsedAt: 2000 }),
          sampleToken(),
        ].map((t) => ({ ...t, accountId: account.id }));
        await insertRows(backend, older, API_TOKENS, [early!, late!, never!]);
        const report = await s.migrate();
        assert.ok(report.applied.includes(16), JSON.stringify(report));
        const order = async () => (await s.tokens.listByLastUse(account.id, NOW, { limit: 10 })).map((t) => t.id);
        assert.deepEqual(await order(), [late!.id, early!.id, never!.id]);
        await s.tokens.touch([{ id: early!.id, at: 3000 }]);
        assert.deepEqual(await order(), [early!.id, late!.id, never!.id]);
      } finally {
        await s.close();
        await older.drop();
      }
    });

    it('touch updates many tokens in one batch', async () => {
      const tokens = Array.from({ length: 50 }, () => sampleToken());
      for (const t of tokens) await store.tokens.create(t, NO_LIMIT, ev());
      await store.tokens.touch(tokens.map((t, i) => ({ id: t.id, at: 10_000 + i })));
      for (const [i, t] of tokens.entries())
        assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id))?.lastUsedAt, 10_000 + i);
    });

    it(
      'touch sends one statement per BATCH_ROWS tokens: every token gets its time, an older time never ' +
        'overwrites a newer one, a token deleted meanwhile is no error',
      async () => {
        const rows = BATCH_ROWS[backend.name];
        const n = rows * 2 + rows / 2;
        const tokens = Array.from({ length: n }, () => sampleToken());
        await insertRows(backend, db, API_TOKENS, tokens);
        const s = open();
        // The first ten already carry a later time; the last is deleted before the flush.
        await s.tokens.touch(tokens.slice(0, 10).map((t) => ({ id: t.id, at: 900_000 })));
        const gone = tokens.at(-1)!;
        assert.equal(await s.tokens.delete(OPERATOR_ACCOUNT_ID, gone.id, ev()), true);
        const before = s.stats.queries;
        await s.tokens.touch(tokens.map((t, i) => ({ id: t.id, at: 100_000 + i })));
        assert.equal(s.stats.queries - before, Math.ceil(n / rows), 'one statement per chunk');
        const stored = new Map(
          (
            (await rawSql(backend, db, 'SELECT id, last_used_at FROM api_tokens')) as {
              id: string;
              last_used_at: number | string | null;
            }[]
          ).map((r) => [r.id, r.last_used_at === null ? null : Number(r.last_used_at)]),
        );
        for (const [i, t] of tokens.entries()) {
          if (t === gone) assert.equal(stored.has(t.id), false);
          else assert.equal(stored.get(t.id), i < 10 ? 900_000 : 100_000 + i, `token ${i}`);
        }
        assert.equal(s.stats.queries - before, Math.ceil(n / rows), 'nothing more sent');
      },
    );

    it('create refuses past maxLive live tokens; expired tokens do not count', async () => {
      const fresh = await backend.create();
      const s = fresh.open();
      try {
        await s.migrate();
        await s.tokens.create(sampleToken({ expiresAt: NOW - 1 }), { maxLive: 2, now: NOW }, ev());
        assert.equal(await s.tokens.create(sampleToken(), { maxLive: 2, now: NOW }, ev()), 'created');
        assert.equal(await s.tokens.create(sampleToken(), { maxLive: 2, now: NOW }, ev()), 'created');
        const over = sampleToken();
        assert.equal(await s.tokens.create(over, { maxLive: 2, now: NOW }, ev()), 'limit_reached');
        assert.equal(await s.tokens.get(OPERATOR_ACCOUNT_ID, over.id), null, 'a refused token is not stored');
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it('the live-token cap holds when several instances create at once', async () => {
      const fresh = await backend.create();
      const instances = [fresh.open(), fresh.open(), fresh.open()];
      try {
        await instances[0]!.migrate();
        const results = await Promise.all(
          Array.from({ length: 24 }, (_, i) =>
            instances[i % 3]!.tokens.create(sampleToken(), { maxLive: 5, now: NOW }, ev()),
          ),
        );
        assert.equal(results.filter((r) => r === 'created').length, 5);
        assert.equal(await instances[1]!.tokens.count(), 5);
      } finally {
        for (const s of instances) await s.close();
        await fresh.drop();
      }
    });

    it(
      'bootstrap: mints on the first call for an empty database, never again, not even after every token is ' +
        'deleted',
      async () => {
        const fresh = await backend.create();
        const s = fresh.open();
        const other = fresh.open();
        try {
          await s.migrate();
          const admin = sampleToken({ scopes: ['apps:read', 'apps:write'] });
          assert.equal(await s.tokens.bootstrap(admin, ev()), true);
          assert.deepEqual(await s.tokens.get(OPERATOR_ACCOUNT_ID, admin.id), admin);
          const second = sampleToken();
          assert.equal(await s.tokens.bootstrap(second, ev()), false);
          assert.equal(await s.tokens.get(OPERATOR_ACCOUNT_ID, second.id), null);
          assert.equal(await s.tokens.delete(OPERATOR_ACCOUNT_ID, admin.id, ev()), true);
          assert.equal(await s.tokens.count(), 0);
          assert.equal(
            await s.tokens.bootstrap(sampleToken(), ev()),
            false,
            'an empty store again is not a first start',
          );
          assert.equal(await other.tokens.bootstrap(sampleToken(), ev()), false, 'nor for another instance');
          await s.migrate();
          assert.equal(await other.tokens.bootstrap(sampleToken(), ev()), false, 'nor after migrate runs again');
          assert.equal(await s.tokens.count(), 0);
        } finally {
          await s.close();
          await other.close();
          await fresh.drop();
        }
      },
    );

    it(
      'bootstrap: decided by the first call even when it mints nothing (turned off, or tokens already ' + 'stored)',
      async () => {
        const off = await backend.create();
        const s = off.open();
        const had = await backend.create();
        const h = had.open();
        try {
          await s.migrate();
          assert.equal(await s.tokens.bootstrap(null, null), false, 'turned off: nothing minted');
          const later = sampleToken();
          assert.equal(
            await s.tokens.bootstrap(later, ev()),
            false,
            'and a later start with it on mints nothing either',
          );
          assert.equal(await s.tokens.count(), 0);

          await h.migrate();
          const existing = sampleToken();
          await h.tokens.create(existing, NO_LIMIT, ev());
          const refused = sampleToken();
          assert.equal(
            await h.tokens.bootstrap(refused, ev()),
            false,
            'tokens already stored (e.g. made with the CLI first)',
          );
          assert.equal(await h.tokens.get(OPERATOR_ACCOUNT_ID, refused.id), null);
          await h.tokens.delete(OPERATOR_ACCOUNT_ID, existing.id, ev());
          assert.equal(await h.tokens.bootstrap(sampleToken(), ev()), false);
          assert.equal(await h.tokens.count(), 0);
        } finally {
          await s.close();
          await h.close();
          await off.drop();
          await had.drop();
        }
      },
    );

    it('bootstrap: exactly one of several racing instances mints', async () => {
      const fresh = await backend.create();
      const instances = [fresh.open(), fresh.open(), fresh.open(), fresh.open()];
      try {
        await instances[0]!.migrate();
        const wins = await Promise.all(instances.map((s) => s.tokens.bootstrap(sampleToken(), ev())));
        assert.equal(wins.filter(Boolean).length, 1);
        assert.equal(await instances[0]!.tokens.count(), 1);
        assert.equal(await instances[2]!.tokens.bootstrap(sampleToken(), ev()), false);
      } finally {
        for (const s of instances) await s.close();
        await fresh.drop();
      }
    });

    it('upgrade to schema 3: a database already in use counts as bootstrapped; an untouched one does not', async () => {
      const cases: { name: string; use(s: Store, db: BackendDb): Promise<void>; bootstraps: boolean }[] = [
        {
          name: 'tokens stored',
          // As release 2 stored them (this release's insert names account_id, migration 4's).
          use: (_s, db) => insertLegacyToken(backend, db, sampleToken()),
          bootstraps: false,
        },
        {
          name: 'a catalog applied (every started server seeds one)',
          use: (_s, db) => insertLegacyCatalog(backend, db),
          bootstraps: false,
        },
        { name: 'untouched', use: async () => undefined, bootstraps: true },
      ];
      for (const c of cases) {
        const fresh = await backend.create();
        const s = fresh.open();
        try {
          assert.deepEqual(
            await s.migrate({ upTo: 2 }),
            { applied: [1, 2], version: 2 },
            'the schema of the release before',
          );
          await c.use(s, fresh);
          assert.deepEqual(await s.migrate(), { applied: ALL_VERSIONS.filter((v) => v > 2), version: LATEST_VERSION });
          for (const t of await s.tokens.list(OPERATOR_ACCOUNT_ID, NOW, { limit: 1000 }))
            await s.tokens.delete(OPERATOR_ACCOUNT_ID, t.id, ev());
          assert.equal(await s.tokens.bootstrap(sampleToken(), ev()), c.bootstraps, c.name);
        } finally {
          await s.close();
          await fresh.drop();
        }
      }
    });

    it('migrations are safe when several instances start together on one database', async () => {
      const fresh = await backend.create();
      const instances = Array.from({ length: 5 }, () => fresh.open());
      try {
        const reports = await Promise.all(instances.map((s) => s.migrate()));
        const applied = reports.flatMap((r) => r.applied).sort((a, b) => a - b);
        assert.deepEqual(applied, ALL_VERSIONS, 'each migration applied exactly once');
        for (const r of reports) assert.equal(r.version, LATEST_VERSION);
        assert.equal(await instances[4]!.tokens.count(), 0);
      } finally {
        for (const s of instances) await s.close();
        await fresh.drop();
      }
    });

    it('writes are visible to another instance and survive close and reopen', async () => {
      const t = sampleToken();
      await store.tokens.create(t, NO_LIMIT, ev());
      const other = open();
      assert.deepEqual(await other.tokens.get(OPERATOR_ACCOUNT_ID, t.id), t);
      await other.close();
      const reopened = open();
      assert.deepEqual(await reopened.tokens.findByHash(t.secretHash), {
        ...t,
        accountStatus: 'active',
        accountRateLimit: null,
      });
    });

    it('accounts: migration 4 creates the operator account, active, oldest of all', async () => {
      const operator = await store.accounts.get(OPERATOR_ACCOUNT_ID);
      assert.ok(operator !== null);
      assert.equal(operator.name, 'operator');
      assert.equal(operator.externalId, null);
      assert.equal(operator.status, 'active');
      assert.ok(operator.createdAt > 0, 'created when the database was first migrated');
      assert.equal((await store.accounts.list({}, { limit: 1000 }))[0]?.id, OPERATOR_ACCOUNT_ID);
    });

    it('accounts: create stores every field; get returns it; unknown ids are null', async () => {
      const a = sampleAccount({ name: 'Ünïcode ✓ 🚀', externalId: 'cust-42 ✓' });
      assert.equal(await store.accounts.create(a, ev()), 'created');
      assert.deepEqual(await store.accounts.get(a.id), a);
      assert.equal(await store.accounts.get('acc_unknown'), null);
      const b = sampleAccount();
      const c = sampleAccount();
      assert.equal(await store.accounts.create(b, ev()), 'created');
      assert.equal(await store.accounts.create(c, ev()), 'created', 'several accounts without an external_id');
    });

    it('accounts: a duplicate external_id is refused by the index, nothing stored, even when racing', async () => {
      const first = sampleAccount({ externalId: `dup-${randomUUID()}` });
      assert.equal(await store.accounts.create(first, ev()), 'created');
      const second = sampleAccount({ externalId: first.externalId });
      assert.equal(await store.accounts.create(second, ev()), 'external_id_taken');
      assert.equal(await store.accounts.get(second.id), null);
      const other = open();
      const racing = Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? store : other).accounts.create(sampleAccount({ externalId: 'race-' + first.externalId }), ev()),
      );
      const results = await Promise.all(racing);
      assert.equal(results.filter((r) => r === 'created').length, 1);
    });

    it('accounts: list is oldest first and filters by status and external_id', async () => {
      const fresh = await backend.create();
      const s = fresh.open();
      try {
        await s.migrate();
        const since = (await s.accounts.get(OPERATOR_ACCOUNT_ID))!.createdAt;
        const late = sampleAccount({ createdAt: since + 3000, externalId: 'x-late' });
        const early = sampleAccount({ createdAt: since + 1000, status: 'suspended' });
        const mid = sampleAccount({ createdAt: since + 2000, externalId: 'x-mid' });
        for (const a of [late, early, mid]) await s.accounts.create(a, ev());
        const ids = (as: AccountRecord[]) => as.map((a) => a.id);
        assert.deepEqual(ids(await s.accounts.list({}, { limit: 1000 })), [
          OPERATOR_ACCOUNT_ID,
          early.id,
          mid.id,
          late.id,
        ]);
        assert.deepEqual(ids(await s.accounts.list({ status: 'suspended' }, { limit: 1000 })), [early.id]);
        assert.deepEqual(ids(await s.accounts.list({ status: 'active' }, { limit: 1000 })), [
          OPERATOR_ACCOUNT_ID,
          mid.id,
          late.id,
        ]);
        assert.deepEqual(ids(await s.accounts.list({ externalId: 'x-mid' }, { limit: 1000 })), [mid.id]);
        assert.deepEqual(ids(await s.accounts.list({ externalId: 'x-mid', status: 'suspended' }, { limit: 1000 })), []);
        assert.deepEqual(ids(await s.accounts.list({ externalId: 'nobody' }, { limit: 1000 })), []);
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it('tokens: list pages by (created_at, id): at most limit rows after the position, ties by id', async () => {
      const account = sampleAccount();
      await store.accounts.create(account, ev());
      const at = (createdAt: number, id: string, expiresAt: number | null = null) =>
        sampleToken({ accountId: account.id, createdAt, id: `${id}_${account.id}`, expiresAt });
      // Created out of order; three share a created_at; one expired before the retention.
      const rows = [at(30, 'tok_c'), at(10, 'tok_b'), at(10, 'tok_a'), at(20, 'tok_d'), at(10, 'tok_e')];
      const gone = at(15, 'tok_gone', NOW - 10);
      for (const t of [...rows, gone]) await store.tokens.create(t, NO_LIMIT, ev());
      const order = ['tok_a', 'tok_b', 'tok_e', 'tok_d', 'tok_c'].map((id) => `${id}_${account.id}`);
      const ids = (ts: TokenRecord[]) => ts.map((t) => t.id);
      assert.deepEqual(ids(await store.tokens.list(account.id, NOW, { limit: 1000 })), order);
      assert.deepEqual(ids(await store.tokens.list(account.id, NOW, { limit: 2 })), order.slice(0, 2));
      const second = await store.tokens.list(account.id, NOW, { limit: 2, after: { createdAt: 10, id: order[1]! } });
      assert.deepEqual(ids(second), order.slice(2, 4), 'after a tie: the rest of the tie, then later rows');
      assert.deepEqual(
        ids(await store.tokens.list(account.id, NOW, { limit: 2, after: { createdAt: 20, id: order[3]! } })),
        order.slice(4),
      );
      assert.deepEqual(
        ids(await store.tokens.list(account.id, NOW, { limit: 2, after: { createdAt: 30, id: order[4]! } })),
        [],
        'after the last row: an empty page',
      );
      // A position whose row is gone (deleted meanwhile) still says where the page starts.
      assert.deepEqual(
        ids(await store.tokens.list(account.id, NOW, { limit: 10, after: { createdAt: 15, id: gone.id } })),
        order.slice(3),
      );
    });

    it('tokens: a walk page by page sees every row there at its start once, while rows are created', async () => {
      const account = sampleAccount();
      await store.accounts.create(account, ev());
      let clock = 1000;
      const make = async () => {
        clock += 1;
        const t = sampleToken({ accountId: account.id, createdAt: clock % 3 === 0 ? clock - 1 : clock });
        await store.tokens.create(t, NO_LIMIT, ev());
        return t.id;
      };
      const before: string[] = [];
      for (let i = 0; i < 23; i++) before.push(await make());
      const walked: string[] = [];
      let after: { createdAt: number; id: string } | undefined;
      for (let pages = 0; ; pages++) {
        assert.ok(pages < 100, 'the walk ends');
        const rows = await store.tokens.list(account.id, NOW, { limit: 4, after });
        walked.push(...rows.map((t) => t.id));
        if (rows.length < 4) break;
        after = { createdAt: rows.at(-1)!.createdAt, id: rows.at(-1)!.id };
        await make();
      }
      assert.equal(new Set(walked).size, walked.length, 'no row twice');
      for (const id of before) assert.ok(walked.includes(id), `${id} was on a page`);
      const all = await store.tokens.list(account.id, NOW, { limit: 1000 });
      assert.deepEqual(
        walked,
        all.map((t) => t.id),
        'rows created during the walk come at its end, in order',
      );
    });

    it('tokens: listByLastUse pages by last use: the most recent first, never-used last, ties by id', async () => {
      const s = open();
      const account = sampleAccount();
      await s.accounts.create(account, ev());
      const at = (id: string, lastUsedAt: number | null, expiresAt: number | null = null) =>
        sampleToken({ accountId: account.id, id: `${id}_${account.id}`, lastUsedAt, expiresAt });
      // Created out of order of use; two share a use's millisecond, three were never used
      // (one created before the others), one expired before the retention; 0 is a use too.
      const rows = [
        at('tok_e', null),
        at('tok_a', 100),
        at('tok_c', 300),
        at('tok_d', null),
        at('tok_b', 300),
        at('tok_f', 200),
        at('tok_0', 0),
        at('tok_g', null),
      ];
      const gone = at('tok_gone', 250, NOW - 10);
      for (const t of [...rows, gone]) await s.tokens.create(t, NO_LIMIT, ev());
      const order = ['tok_b', 'tok_c', 'tok_f', 'tok_a', 'tok_0', 'tok_d', 'tok_e', 'tok_g'].map(
        (id) => `${id}_${account.id}`,
      );
      const ids = (ts: TokenRecord[]) => ts.map((t) => t.id);
      const page = (limit: number, after?: { lastUsedAt: number | null; id: string }) =>
        s.tokens.listByLastUse(account.id, NOW, { limit, after });
      try {
        assert.deepEqual(ids(await page(1000)), order);
        assert.deepEqual(ids(await page(2)), order.slice(0, 2));
        assert.deepEqual(
          ids(await page(2, { lastUsedAt: 300, id: order[0]! })),
          order.slice(1, 3),
          'the rest of a tie, then later uses',
        );
        assert.deepEqual(
          ids(await page(3, { lastUsedAt: 100, id: order[3]! })),
          order.slice(4, 7),
          'into the never-used',
        );
        assert.deepEqual(
          ids(await page(5, { lastUsedAt: null, id: order[5]! })),
          order.slice(6),
          'among the never-used',
        );
        assert.deepEqual(ids(await page(2, { lastUsedAt: null, id: order[7]! })), [], 'after the last: empty');
        // A position whose row is gone (expired, deleted, or used again) still says where the page starts.
        assert.deepEqual(ids(await page(2, { lastUsedAt: 250, id: gone.id })), order.slice(2, 4));
        // One statement for a first page, and for a page the rest of a tie fills; two otherwise.
        const sent = async (call: () => Promise<unknown>) => {
          const before = s.stats.queries;
          await call();
          return s.stats.queries - before;
        };
        assert.equal(await sent(() => page(3)), 1);
        assert.equal(await sent(() => page(1, { lastUsedAt: null, id: order[5]! })), 1);
        assert.equal(await sent(() => page(3, { lastUsedAt: 300, id: order[0]! })), 2);
      } finally {
        await s.close();
      }
    });

    it('accounts: list pages by (created_at, id), with every filter', async () => {
      const fresh = await backend.create();
      const s = fresh.open();
      try {
        await s.migrate();
        const since = (await s.accounts.get(OPERATOR_ACCOUNT_ID))!.createdAt;
        const made: AccountRecord[] = [];
        for (let i = 0; i < 11; i++) {
          const a = sampleAccount({
            createdAt: since + 100 + Math.floor(i / 2),
            status: i % 3 === 0 ? 'suspended' : 'active',
            externalId: i === 7 ? 'x-seven' : null,
          });
          made.push(a);
          await s.accounts.create(a, ev());
        }
        const walk = async (filter: { status?: 'active' | 'suspended'; externalId?: string }, limit: number) => {
          const out: string[] = [];
          let after: { createdAt: number; id: string } | undefined;
          for (;;) {
            const rows = await s.accounts.list(filter, { limit, after });
            assert.ok(rows.length <= limit);
            out.push(...rows.map((a) => a.id));
            if (rows.length < limit) return out;
            after = { createdAt: rows.at(-1)!.createdAt, id: rows.at(-1)!.id };
          }
        };
        const everyone = await s.accounts.list({}, { limit: 1000 });
        assert.equal(everyone[0]?.id, OPERATOR_ACCOUNT_ID);
        const sorted = [...everyone].sort((x, y) => x.createdAt - y.createdAt || (x.id < y.id ? -1 : 1));
        assert.deepEqual(
          everyone.map((a) => a.id),
          sorted.map((a) => a.id),
        );
        for (const limit of [1, 2, 3, 12, 13]) {
          assert.deepEqual(
            await walk({}, limit),
            everyone.map((a) => a.id),
            `every account, pages of ${limit}`,
          );
          assert.deepEqual(
            await walk({ status: 'suspended' }, limit),
            everyone.filter((a) => a.status === 'suspended').map((a) => a.id),
          );
          assert.deepEqual(
            await walk({ status: 'active' }, limit),
            everyone.filter((a) => a.status === 'active').map((a) => a.id),
          );
          assert.deepEqual(await walk({ externalId: 'x-seven' }, limit), [made[7]!.id]);
          assert.deepEqual(await walk({ externalId: 'x-seven', status: 'suspended' }, limit), []);
        }
        const last = everyone.at(-1)!;
        assert.deepEqual(
          await s.accounts.list({}, { limit: 5, after: { createdAt: last.createdAt, id: last.id } }),
          [],
        );
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it('create keeps an account within the stored bound: its earliest-expired go first, each audited', async () => {
      const account = sampleAccount();
      const other = sampleAccount();
      for (const a of [account, other]) await store.accounts.create(a, ev());
      const purgeEvent = (t: TokenRecord) =>
        ev({ accountId: t.accountId, action: 'api_token.expired_purged', targetId: t.id, details: { reason: 'x' } });
      // A token that never expires and one of another account: never purged.
      const keeper = sampleToken({ accountId: account.id, createdAt: 1 });
      await store.tokens.create(keeper, NO_LIMIT, ev());
      const theirs = sampleToken({ accountId: other.id, createdAt: 1, expiresAt: NOW - 1000 });
      await store.tokens.create(theirs, NO_LIMIT, ev());
      // Two-second tokens, one after the other: each has expired when the next is created.
      const made: TokenRecord[] = [];
      for (let i = 0; i < 40; i++) {
        const now = NOW + i * 3000;
        const t = sampleToken({ accountId: account.id, createdAt: now, expiresAt: now + 2000 });
        const limits = { maxLive: 3, now, stored: { max: 5, eventFor: purgeEvent } };
        assert.equal(await store.tokens.create(t, limits, ev({ accountId: account.id, targetId: t.id })), 'created');
        made.push(t);
        const held = await store.tokens.list(account.id, 0, { limit: 1000 });
        assert.ok(held.length <= 5, `after ${i + 1} creations the account holds ${held.length}`);
      }
      const held = (await store.tokens.list(account.id, 0, { limit: 1000 })).map((t) => t.id);
      assert.deepEqual(held, [keeper.id, ...made.slice(-4).map((t) => t.id)], 'the latest ones and the keeper stay');
      assert.notEqual(await store.tokens.get(other.id, theirs.id), null, "another account's tokens are not touched");
      const purged = await store.audit.list({ accountId: account.id, action: 'api_token.expired_purged', limit: 1000 });
      assert.deepEqual(
        purged.map((e) => e.targetId).sort(),
        made
          .slice(0, -4)
          .map((t) => t.id)
          .sort(),
        'one event per purged token, in the same transaction',
      );
    });

    it('create under the stored bound purges only expired tokens: too few, refused with nothing changed', async () => {
      const account = sampleAccount();
      await store.accounts.create(account, ev());
      const mk = (expiresAt: number | null) => sampleToken({ accountId: account.id, expiresAt });
      let events = 0;
      const eventFor = () => {
        events += 1;
        return ev({ accountId: account.id, action: 'api_token.expired_purged' });
      };
      for (const t of [mk(null), mk(NOW + 1), mk(NOW)]) await store.tokens.create(t, NO_LIMIT, ev());
      // Bound 3, one expired: room for one (the expired one goes).
      const fourth = mk(null);
      assert.equal(
        await store.tokens.create(fourth, { maxLive: 10, now: NOW, stored: { max: 3, eventFor } }, ev()),
        'created',
      );
      assert.equal(events, 1);
      // Bound 3, none expired: refused, nothing deleted or written.
      const fifth = mk(null);
      assert.equal(
        await store.tokens.create(fifth, { maxLive: 10, now: NOW, stored: { max: 3, eventFor } }, ev()),
        'limit_reached',
      );
      assert.equal(events, 1);
      assert.equal(await store.tokens.get(account.id, fifth.id), null);
      assert.equal((await store.tokens.list(account.id, 0, { limit: 1000 })).length, 3);
    });

    it("accounts: update changes the given fields; findByHash carries the account's status", async () => {
      const a = sampleAccount();
      await store.accounts.create(a, ev());
      const t = sampleToken({ accountId: a.id });
      assert.equal(await store.tokens.create(t, NO_LIMIT, ev()), 'created');
      assert.deepEqual(await store.accounts.update(a.id, { status: 'suspended' }, ev()), { ...a, status: 'suspended' });
      assert.equal((await store.tokens.findByHash(t.secretHash))?.accountStatus, 'suspended');
      assert.deepEqual(await store.accounts.update(a.id, { name: 'renamed' }, ev()), {
        ...a,
        name: 'renamed',
        status: 'suspended',
      });
      assert.deepEqual(await store.accounts.update(a.id, {}, ev()), { ...a, name: 'renamed', status: 'suspended' });
      assert.deepEqual(await store.accounts.update(a.id, { status: 'active' }, ev()), { ...a, name: 'renamed' });
      assert.equal((await store.tokens.findByHash(t.secretHash))?.accountStatus, 'active');
      assert.equal(await store.accounts.update('acc_unknown', { status: 'suspended' }, ev()), null);
    });

    it("tokens: get, delete and list see only the given account's tokens", async () => {
      const a = sampleAccount();
      const b = sampleAccount();
      await store.accounts.create(a, ev());
      await store.accounts.create(b, ev());
      const ta = sampleToken({ accountId: a.id });
      const tb = sampleToken({ accountId: b.id });
      await store.tokens.create(ta, NO_LIMIT, ev());
      await store.tokens.create(tb, NO_LIMIT, ev());
      assert.equal(await store.tokens.get(b.id, ta.id), null);
      assert.equal(await store.tokens.get(OPERATOR_ACCOUNT_ID, ta.id), null);
      assert.deepEqual(await store.tokens.get(a.id, ta.id), ta);
      assert.deepEqual(
        (await store.tokens.list(a.id, NOW, { limit: 1000 })).map((t) => t.id),
        [ta.id],
      );
      assert.equal(await store.tokens.delete(b.id, ta.id, ev()), false, 'another account cannot delete it');
      assert.deepEqual(await store.tokens.get(a.id, ta.id), ta, 'still there');
      assert.equal(await store.tokens.delete(a.id, ta.id, ev()), true);
      assert.deepEqual(await store.tokens.get(b.id, tb.id), tb);
    });

    it('tokens: create into an account that does not exist stores nothing; the cap counts per account', async () => {
      const orphan = sampleToken({ accountId: 'acc_missing' });
      assert.equal(await store.tokens.create(orphan, NO_LIMIT, ev()), 'no_account');
      assert.equal(await store.tokens.findByHash(orphan.secretHash), null);
      const a = sampleAccount();
      const b = sampleAccount();
      await store.accounts.create(a, ev());
      await store.accounts.create(b, ev());
      const cap = { maxLive: 2, now: NOW };
      assert.equal(await store.tokens.create(sampleToken({ accountId: a.id }), cap, ev()), 'created');
      assert.equal(await store.tokens.create(sampleToken({ accountId: a.id }), cap, ev()), 'created');
      assert.equal(await store.tokens.create(sampleToken({ accountId: a.id }), cap, ev()), 'limit_reached');
      assert.equal(
        await store.tokens.create(sampleToken({ accountId: b.id }), cap, ev()),
        'created',
        'b has its own cap',
      );
    });

    it("accounts: delete removes the account and its tokens, nobody else's, once", async () => {
      const a = sampleAccount();
      const b = sampleAccount();
      await store.accounts.create(a, ev());
      await store.accounts.create(b, ev());
      const ta = [sampleToken({ accountId: a.id }), sampleToken({ accountId: a.id })];
      const tb = sampleToken({ accountId: b.id });
      for (const t of [...ta, tb]) await store.tokens.create(t, NO_LIMIT, ev());
      assert.equal(await store.accounts.delete(a.id, ev()), true);
      assert.equal(await store.accounts.get(a.id), null);
      for (const t of ta) assert.equal(await store.tokens.findByHash(t.secretHash), null);
      assert.notEqual(await store.tokens.findByHash(tb.secretHash), null);
      assert.equal(await store.accounts.delete(a.id, ev()), false);
      assert.equal(await store.tokens.create(sampleToken({ accountId: a.id }), NO_LIMIT, ev()), 'no_account');
    });

    it('accounts: tokens created while their account is deleted on another instance never outlive it', async () => {
      const other = open();
      for (let round = 0; round < 5; round++) {
        const a = sampleAccount();
        await store.accounts.create(a, ev());
        const made = Array.from({ length: 4 }, () => sampleToken({ accountId: a.id }));
        await Promise.all([
          ...made.map((t, i) => (i % 2 === 0 ? store : other).tokens.create(t, NO_LIMIT, ev())),
          other.accounts.delete(a.id, ev()),
        ]);
        for (const t of made) assert.equal(await store.tokens.findByHash(t.secretHash), null, `round ${round}`);
      }
    });

    it('upgrade to schema 4: existing tokens land in the operator account and keep working', async () => {
      const fresh = await backend.create();
      const s = fresh.open();
      try {
        await s.migrate({ upTo: 3 });
        const legacy = sampleToken();
        // Stored as release 3 stored tokens: without the account_id column.
        await insertLegacyToken(backend, fresh, legacy);
        const instances = [s, fresh.open(), fresh.open()];
        const reports = await Promise.all(instances.map((i) => i.migrate({ upTo: 4 })));
        assert.deepEqual(
          reports.flatMap((r) => r.applied),
          [4],
          'migration 4 applied once',
        );
        for (const i of instances.slice(1)) await i.close();
        await s.migrate();
        assert.deepEqual(await s.tokens.findByHash(legacy.secretHash), {
          ...legacy,
          accountStatus: 'active',
          accountRateLimit: null,
        });
        assert.deepEqual(
          (await s.accounts.list({}, { limit: 1000 })).map((a) => a.id),
          [OPERATOR_ACCOUNT_ID],
          'exactly one operator account',
        );
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it('catalog: empty at first; apply stores version 1; current returns the document unchanged', async () => {
      const fresh = await backend.create();
      const s = fresh.open();
      try {
        await s.migrate();
        assert.equal(await s.catalog.latestVersion(), 0);
        assert.equal(await s.catalog.current(), null);
        const doc = JSON.stringify({ name: 'Ubuntu 24.04 — LTS ✓', items: Array.from({ length: 500 }, (_, i) => i) });
        assert.equal(await s.catalog.apply(rev(doc, 1234), 0, ev()), true);
        assert.equal(await s.catalog.latestVersion(), 1);
        assert.deepEqual(await s.catalog.current(), { ...rev(doc, 1234), version: 1 });
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it('catalog: apply is optimistic: a stale expected version changes nothing', async () => {
      const fresh = await backend.create();
      const s = fresh.open();
      try {
        await s.migrate();
        assert.equal(await s.catalog.apply(rev('{"v":1}', 1), 0, ev()), true);
        assert.equal(await s.catalog.apply(rev('{"v":"stale"}', 2), 0, ev()), false);
        assert.equal((await s.catalog.current())?.document, '{"v":1}');
        assert.equal(await s.catalog.apply(rev('{"v":2}', 3), 1, ev()), true);
        assert.deepEqual(await s.catalog.current(), { ...rev('{"v":2}', 3), version: 2 });
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it('catalog: of several instances applying at once on the same version, exactly one wins', async () => {
      const fresh = await backend.create();
      const instances = [fresh.open(), fresh.open(), fresh.open()];
      try {
        await instances[0]!.migrate();
        const wins = await Promise.all(instances.map((s, i) => s.catalog.apply(rev(`{"by":${i}}`, i), 0, ev())));
        assert.equal(wins.filter(Boolean).length, 1);
        assert.equal(await instances[2]!.catalog.latestVersion(), 1);
      } finally {
        for (const s of instances) await s.close();
        await fresh.drop();
      }
    });

    it('catalog: revision(n) and revisions(limit, before) keep applied_by, summary and changes', async () => {
      const fresh = await backend.create();
      const s = fresh.open();
      try {
        await s.migrate();
        assert.equal(await s.catalog.revision(1), null);
        assert.deepEqual(await s.catalog.revisions(10), []);
        const actors = [
          { type: 'api_token', id: 'tok_abc', name: 'deploy — bot ✓' },
          { type: 'cli', id: null, name: 'alice' },
          { type: 'system', id: null, name: 'infracat' },
        ] as const;
        for (let v = 1; v <= 7; v++) {
          const revision = {
            document: `{"v":${v}}`,
            appliedAt: 1_000 * v,
            appliedBy: { ...actors[v % 3]! },
            summary: v === 7 ? `rollback to version 3: ${v} added, 0 changed, 0 removed` : `${v} added`,
            // Counts per kind; none recorded on the first (as on revisions from before they were).
            changes:
              v === 1
                ? null
                : {
                    settings: v % 2,
                    added: { images: 0, plans: v, regions: 0 },
                    removed: { images: 1, plans: 0, regions: 0 },
                    changed: { images: 0, plans: 0, regions: v * 1000 },
                  },
          };
          assert.equal(await s.catalog.apply(revision, v - 1, ev()), true);
        }
        assert.deepEqual(await s.catalog.revision(3), {
          version: 3,
          document: '{"v":3}',
          appliedAt: 3_000,
          appliedBy: { type: 'api_token', id: 'tok_abc', name: 'deploy — bot ✓' },
          summary: '3 added',
          changes: {
            settings: 1,
            added: { images: 0, plans: 3, regions: 0 },
            removed: { images: 1, plans: 0, regions: 0 },
            changed: { images: 0, plans: 0, regions: 3000 },
          },
        });
        assert.equal(await s.catalog.revision(8), null);
        assert.equal(await s.catalog.revision(0), null);
        const all = await s.catalog.revisions(100);
        assert.deepEqual(
          all.map((r) => r.version),
          [7, 6, 5, 4, 3, 2, 1],
          'newest first',
        );
        assert.ok(
          all.every((r) => !('document' in r)),
          'no documents in the history',
        );
        assert.deepEqual(all[0], {
          version: 7,
          appliedAt: 7_000,
          appliedBy: { type: 'cli', id: null, name: 'alice' },
          summary: 'rollback to version 3: 7 added, 0 changed, 0 removed',
          changes: {
            settings: 1,
            added: { images: 0, plans: 7, regions: 0 },
            removed: { images: 1, plans: 0, regions: 0 },
            changed: { images: 0, plans: 0, regions: 7000 },
          },
        });
        assert.equal((await s.catalog.revisions(1, 2))[0]!.changes, null);
        assert.deepEqual(
          (await s.catalog.revisions(3)).map((r) => r.version),
          [7, 6, 5],
        );
        assert.deepEqual(
          (await s.catalog.revisions(3, 5)).map((r) => r.version),
          [4, 3, 2],
        );
        assert.deepEqual(
          (await s.catalog.revisions(3, 2)).map((r) => r.version),
          [1],
        );
        assert.deepEqual(await s.catalog.revisions(3, 1), []);
        assert.deepEqual(
          (await s.catalog.revisions(2, 100)).map((r) => r.version),
          [7, 6],
        );
        // Another instance reads the same.
        const other = fresh.open();
        try {
          assert.deepEqual(await other.catalog.revisions(100), all);
        } finally {
          await other.close();
        }
      } finally {
        await s.close();
        await fresh.drop();
      }
    });

    it('stats.queries counts each statement the store sends, the same on every backend', async () => {
      const s = open();
      const t = sampleToken();
      const sent = async (call: () => Promise<unknown>): Promise<number> => {
        const before = s.stats.queries;
        await call();
        return s.stats.queries - before;
      };
      assert.equal(
        await sent(() => s.tokens.create(t, NO_LIMIT, ev())),
        4,
        'count, then insert the token, its event and its webhook deliveries (the lock is not a statement)',
      );
      assert.equal(await sent(() => s.tokens.bootstrap(null, null)), 2, 'count, then the marker');
      assert.equal(await sent(() => s.tokens.get(OPERATOR_ACCOUNT_ID, t.id)), 1);
      assert.equal(await sent(() => s.tokens.findByHash(t.secretHash)), 1);
      assert.equal(await sent(() => s.tokens.list(OPERATOR_ACCOUNT_ID, NOW, { limit: 1000 })), 1);
      assert.equal(
        await sent(() =>
          s.tokens.touch([
            { id: t.id, at: 1 },
            { id: 'tok_other', at: 2 },
            { id: t.id, at: 3 },
          ]),
        ),
        1,
        'one statement for the batch',
      );
      assert.equal(await sent(() => s.tokens.touch([])), 0);
      assert.equal(
        await sent(() => s.tokens.delete(OPERATOR_ACCOUNT_ID, t.id, ev({ action: 'api_token.deleted' }))),
        3,
        'the delete, then its event and its webhook deliveries',
      );
      assert.equal(await sent(() => s.catalog.latestVersion()), 1);
      assert.equal(await sent(() => s.catalog.current()), 1);
      assert.equal(await sent(() => s.ping()), 1);
      assert.equal(await sent(() => s.checkWritable()), 1);
      assert.equal(await sent(() => s.schemaVersion()), 2, 'whether the table exists, then its newest version');
      assert.equal(await sent(() => s.instances.heartbeat(beat('ins_stats', NOW))), 2, 'the upsert, then the count');
      assert.equal(await sent(() => s.instances.leave('ins_stats')), 1);
      assert.equal(await sent(() => s.instances.prune(0)), 1);
      assert.equal(open().stats.queries, 0, 'counted per store');
    });

    it('a statement sent while a transaction is open is not part of it (a rollback never takes it along)', async () => {
      const kept = sampleToken();
      const doomed = sampleToken();
      await store.tokens.create(kept, NO_LIMIT, ev());
      await store.tokens.create(doomed, NO_LIMIT, ev());
      // The create rolls back (the hash is taken) while the delete and touch are sent.
      const [refused, deleted] = await Promise.allSettled([
        store.tokens.create(sampleToken({ secretHash: kept.secretHash }), NO_LIMIT, ev()),
        store.tokens.delete(OPERATOR_ACCOUNT_ID, doomed.id, ev()),
        store.tokens.touch([{ id: kept.id, at: 4242 }]),
      ]);
      assert.equal(refused.status, 'rejected');
      assert.deepEqual(deleted, { status: 'fulfilled', value: true });
      const other = open();
      assert.equal(await other.tokens.get(OPERATOR_ACCOUNT_ID, doomed.id), null, 'the acknowledged delete stuck');
      assert.equal((await other.tokens.get(OPERATOR_ACCOUNT_ID, kept.id))?.lastUsedAt, 4242);
    });

    it('schemaVersion: 0 for an empty database (nothing written), the latest once migrated', async () => {
      const empty = await backend.create();
      const s = empty.open();
      try {
        assert.equal(await s.schemaVersion(), 0);
        assert.equal(await s.schemaVersion(), 0, 'asking created nothing');
        await s.migrate();
        assert.equal(await s.schemaVersion(), LATEST_VERSION);
      } finally {
        await s.close();
        await empty.drop();
      }
    });

    it('stores opened, used and closed many times, then garbage-collected: the process exits cleanly', () => {
      // better-sqlite3 12 built against Node >= 24.19 headers aborted the process here.
      const script = path.resolve(import.meta.dirname, '../fixtures/gc-stress.ts');
      const res = spawnSync(process.execPath, ['--expose-gc', '--import', import.meta.resolve('tsx'), script], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, DATABASE_URL: db.url },
      });
      assert.equal(res.signal, null, `killed by ${String(res.signal)}: ${res.stderr.slice(0, 500)}`);
      assert.equal(res.status, 0, res.stderr.slice(0, 500));
      assert.equal(res.stdout.trim(), 'clean');
    });

    // --- the audit trail and token rotation ---

    /** The events of `targetId`, oldest first. */
    const trail = async (s: Store, targetId: string) =>
      (await s.audit.list({ targetId, limit: 100 })).map((e) => e.action).reverse();

    it('token conditions: stored on create, set, cleared, kept by update and by rotation, read by hash', async () => {
      const upd = (id: string) => ev({ action: 'api_token.updated', targetId: id });
      const t = sampleToken({ allowedCidrs: ['10.0.0.0/8', '2001:db8::/32'], notBefore: NOW, enabled: false });
      assert.equal(await store.tokens.create(t, NO_LIMIT, ev({ targetId: t.id })), 'created');
      assert.deepEqual(await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id), t);
      const renamed = await store.tokens.update(OPERATOR_ACCOUNT_ID, t.id, { name: 'kept' }, upd(t.id));
      assert.deepEqual(renamed, { ...t, name: 'kept' }, 'conditions left out are kept');
      const cleared = await store.tokens.update(
        OPERATOR_ACCOUNT_ID,
        t.id,
        { allowedCidrs: null, notBefore: null, enabled: true },
        upd(t.id),
      );
      assert.deepEqual(cleared, { ...t, name: 'kept', allowedCidrs: null, notBefore: null, enabled: true });
      const set = await store.tokens.update(
        OPERATOR_ACCOUNT_ID,
        t.id,
        { allowedCidrs: ['192.0.2.0/24'], notBefore: NOW + 5, enabled: false },
        upd(t.id),
      );
      assert.deepEqual([set?.allowedCidrs, set?.notBefore, set?.enabled], [['192.0.2.0/24'], NOW + 5, false]);
      const secretHash = randomBytes(32).toString('hex');
      const rotated = await store.tokens.rotate(
        OPERATOR_ACCOUNT_ID,
        t.id,
        { secretHash, previousExpiresAt: null, expiresAt: null },
        ev({ action: 'api_token.rotated', targetId: t.id }),
      );
      assert.deepEqual(
        [rotated?.allowedCidrs, rotated?.notBefore, rotated?.enabled],
        [['192.0.2.0/24'], NOW + 5, false],
      );
      const found = await store.tokens.findByHash(secretHash);
      assert.deepEqual([found?.allowedCidrs, found?.notBefore, found?.enabled], [['192.0.2.0/24'], NOW + 5, false]);
    });

    it('audit: every mutation writes its event with the change, and none when nothing changed', async () => {
      const a = sampleAccount();
      assert.equal(await store.accounts.create(a, ev({ action: 'account.created', targetId: a.id })), 'created');
      assert.equal(
        await store.accounts.create(
          sampleAccount({ externalId: null, id: a.id }),
          ev({ action: 'account.created', targetId: a.id }),
        ),
        'external_id_taken',
        'same id: nothing stored',
      );
      const t = sampleToken({ accountId: a.id });
      assert.equal(await store.tokens.create(t, NO_LIMIT, ev({ targetId: t.id })), 'created');
      const capped = sampleToken({ accountId: a.id });
      assert.equal(
        await store.tokens.create(capped, { maxLive: 1, now: NOW }, ev({ targetId: capped.id })),
        'limit_reached',
      );
      const orphan = sampleToken({ accountId: 'acc_nobody' });
      assert.equal(await store.tokens.create(orphan, NO_LIMIT, ev({ targetId: orphan.id })), 'no_account');
      const renamed = await store.tokens.update(
        a.id,
        t.id,
        { name: 'renamed' },
        ev({ action: 'api_token.updated', targetId: t.id }),
      );
      assert.equal(renamed?.name, 'renamed');
      assert.equal(
        await store.tokens.update(a.id, 'tok_unknown', { name: 'x' }, ev({ targetId: 'tok_unknown' })),
        null,
      );
      assert.deepEqual(
        await store.accounts.update(a.id, { status: 'suspended' }, ev({ action: 'account.suspended', targetId: a.id })),
        { ...a, status: 'suspended' },
      );
      assert.equal(await store.accounts.update('acc_unknown', { name: 'x' }, ev({ targetId: 'acc_unknown' })), null);
      assert.equal(await store.tokens.delete(a.id, t.id, ev({ action: 'api_token.deleted', targetId: t.id })), true);
      assert.equal(await store.tokens.delete(a.id, t.id, ev({ action: 'api_token.deleted', targetId: t.id })), false);
      assert.equal(await store.accounts.delete(a.id, ev({ action: 'account.deleted', targetId: a.id })), true);
      assert.equal(await store.accounts.delete(a.id, ev({ action: 'account.deleted', targetId: a.id })), false);

      assert.deepEqual(await trail(store, t.id), ['api_token.created', 'api_token.updated', 'api_token.deleted']);
      assert.deepEqual(await trail(store, a.id), ['account.created', 'account.suspended', 'account.deleted']);
      for (const id of [capped.id, orphan.id, 'tok_unknown', 'acc_unknown'])
        assert.deepEqual(await trail(store, id), [], `${id}: nothing changed, nothing recorded`);
    });

    it('audit: the event is in the same transaction: when it cannot be written, the change is not made', async () => {
      const taken = ev({ targetId: 'tok_first' });
      const first = sampleToken({ id: 'tok_first_' + randomUUID().slice(0, 8) });
      assert.equal(await store.tokens.create(first, NO_LIMIT, taken), 'created');
      // An event id already used: its insert fails, and takes the change down with it.
      const t = sampleToken();
      await assert.rejects(store.tokens.create(t, NO_LIMIT, { ...ev(), id: taken.id }));
      assert.equal(await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id), null, 'no token without its event');
      await assert.rejects(store.tokens.delete(OPERATOR_ACCOUNT_ID, first.id, { ...ev(), id: taken.id }));
      assert.notEqual(await store.tokens.get(OPERATOR_ACCOUNT_ID, first.id), null, 'no delete without its event');
      await assert.rejects(
        store.tokens.update(OPERATOR_ACCOUNT_ID, first.id, { name: 'x' }, { ...ev(), id: taken.id }),
      );
      assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, first.id))?.name, first.name);
      const rotated = { secretHash: randomBytes(32).toString('hex'), previousExpiresAt: NOW, expiresAt: null };
      await assert.rejects(store.tokens.rotate(OPERATOR_ACCOUNT_ID, first.id, rotated, { ...ev(), id: taken.id }));
      assert.equal((await store.tokens.get(OPERATOR_ACCOUNT_ID, first.id))?.secretHash, first.secretHash);
      const a = sampleAccount();
      await assert.rejects(store.accounts.create(a, { ...ev(), id: taken.id }));
      assert.equal(await store.accounts.get(a.id), null, 'no account without its event');
      const latest = await store.catalog.latestVersion();
      await assert.rejects(store.catalog.apply(rev('{"x":1}', NOW), latest, { ...ev(), id: taken.id }));
      assert.equal(await store.catalog.latestVersion(), latest, 'no catalog revision without its event');
    });

    it('audit: list is newest first, filters by account, action, target and time, pages by cursor', async () => {
      const acc = `acc_list_${randomUUID().slice(0, 8)}`;
      const base = 1_900_000_000_000;
      const made: AuditEventRecord[] = [];
      for (let i = 0; i < 7; i++) {
        const e = ev({
          accountId: acc,
          action: i % 2 === 0 ? 'api_token.created' : 'api_token.deleted',
          occurredAt: base + i * 1000,
          targetId: `tok_t${i % 3}`,
        });
        made.push(e);
        const t = sampleToken();
        assert.equal(await store.tokens.create(t, NO_LIMIT, e), 'created');
      }
      const ids = (list: AuditEventRecord[]) => list.map((e) => e.id);
      const newestFirst = [...made].reverse();
      assert.deepEqual(await store.audit.list({ accountId: acc, limit: 100 }), newestFirst, 'every field round-trips');
      assert.deepEqual(
        ids(await store.audit.list({ accountId: acc, action: 'api_token.deleted', limit: 100 })),
        ids(newestFirst.filter((e) => e.action === 'api_token.deleted')),
      );
      assert.deepEqual(
        ids(await store.audit.list({ accountId: acc, targetId: 'tok_t1', limit: 100 })),
        ids(newestFirst.filter((e) => e.targetId === 'tok_t1')),
      );
      assert.deepEqual(
        ids(await store.audit.list({ accountId: acc, since: base + 2000, until: base + 5000, limit: 100 })),
        ids(newestFirst.filter((e) => e.occurredAt >= base + 2000 && e.occurredAt < base + 5000)),
        'since inclusive, until exclusive',
      );
      const page1 = await store.audit.list({ accountId: acc, limit: 3 });
      const page2 = await store.audit.list({ accountId: acc, limit: 3, before: page1.at(-1)!.id });
      const page3 = await store.audit.list({ accountId: acc, limit: 3, before: page2.at(-1)!.id });
      assert.deepEqual(ids([...page1, ...page2, ...page3]), ids(newestFirst), 'pages neither skip nor repeat');
      assert.equal(page3.length, 1);
      const everyone = await store.audit.list({ limit: 1000 });
      assert.ok(ids(everyone).includes(made[0]!.id), 'without an account: every account');
      const others = await countOlder(store, base + 3000);
      // In batches of at most `limit`, the oldest first, until a batch comes back short.
      let pruned = 0;
      for (let n = -1; n !== 0; pruned += n) {
        n = await store.audit.prune(base + 3000, 2);
        assert.ok(n <= 2, `a batch deletes at most limit (${n})`);
      }
      assert.equal(pruned, 3 + others);
      assert.deepEqual(
        ids(await store.audit.list({ accountId: acc, limit: 100 })),
        ids(newestFirst.filter((e) => e.occurredAt >= base + 3000)),
        'prune deletes what occurred before the bound',
      );
    });

    it('rotation: the previous secret finds the token until replaced; rotating again keeps at most two', async () => {
      const t = sampleToken();
      await store.tokens.create(t, NO_LIMIT, ev());
      const second = randomBytes(32).toString('hex');
      const after = await store.tokens.rotate(
        OPERATOR_ACCOUNT_ID,
        t.id,
        { secretHash: second, previousExpiresAt: NOW + 60_000, expiresAt: NOW + 86_400_000 },
        ev({ action: 'api_token.rotated', targetId: t.id }),
      );
      assert.deepEqual(after, {
        ...t,
        secretHash: second,
        previousSecretHash: t.secretHash,
        previousExpiresAt: NOW + 60_000,
        expiresAt: NOW + 86_400_000,
      });
      assert.equal((await store.tokens.findByHash(second))?.id, t.id, 'by the new secret');
      assert.equal((await store.tokens.findByHash(t.secretHash))?.id, t.id, 'and by the previous one');
      const third = randomBytes(32).toString('hex');
      const again = await store.tokens.rotate(
        OPERATOR_ACCOUNT_ID,
        t.id,
        { secretHash: third, previousExpiresAt: NOW + 1000, expiresAt: null },
        ev({ action: 'api_token.rotated', targetId: t.id }),
      );
      assert.equal(again?.previousSecretHash, second);
      assert.equal(await store.tokens.findByHash(t.secretHash), null, 'the first secret is gone at once');
      assert.equal(
        await store.tokens.endGrace(OPERATOR_ACCOUNT_ID, t.id, t.secretHash, ev()),
        false,
        'not the previous',
      );
      assert.equal(await store.tokens.endGrace(OPERATOR_ACCOUNT_ID, t.id, second, ev({ targetId: t.id })), true);
      assert.equal(await store.tokens.findByHash(second), null, 'grace ended');
      const fourth = randomBytes(32).toString('hex');
      const noGrace = await store.tokens.rotate(
        OPERATOR_ACCOUNT_ID,
        t.id,
        { secretHash: fourth, previousExpiresAt: null, expiresAt: null },
        ev({ targetId: t.id }),
      );
      assert.equal(noGrace?.previousSecretHash, null, 'no grace period: no previous secret');
      assert.equal(await store.tokens.findByHash(third), null);
      assert.equal(
        await store.tokens.rotate(
          'acc_other',
          t.id,
          { secretHash: 'f'.repeat(64), previousExpiresAt: null, expiresAt: null },
          ev(),
        ),
        null,
        "another account's token: not found, not rotated",
      );
      assert.equal((await store.tokens.findByHash(fourth))?.id, t.id);
    });

    it('rotation: concurrent rotations on several instances each move the then-current secret', async () => {
      const t = sampleToken();
      await store.tokens.create(t, NO_LIMIT, ev());
      const instances = [store, open(), open()];
      const hashes = instances.map(() => randomBytes(32).toString('hex'));
      await Promise.all(
        instances.map((s, i) =>
          s.tokens.rotate(
            OPERATOR_ACCOUNT_ID,
            t.id,
            { secretHash: hashes[i]!, previousExpiresAt: NOW + 60_000, expiresAt: null },
            ev({ action: 'api_token.rotated', targetId: t.id }),
          ),
        ),
      );
      const final = (await store.tokens.get(OPERATOR_ACCOUNT_ID, t.id))!;
      assert.ok(hashes.includes(final.secretHash));
      assert.ok(final.previousSecretHash !== null && [t.secretHash, ...hashes].includes(final.previousSecretHash));
      assert.notEqual(final.previousSecretHash, final.secretHash);
      const found = await Promise.all([t.secretHash, ...hashes].map((h) => store.tokens.findByHash(h)));
      assert.equal(found.filter((x) => x !== null).length, 2, 'exactly two live secrets');
      assert.deepEqual(await trail(store, t.id), Array(3).fill('api_token.rotated'), 'one event each');
    });

    it('purgeExpired writes one event per purged token, in batches of at most `limit`', async () => {
      const s = open();
      const old = [sampleToken({ expiresAt: 10 }), sampleToken({ expiresAt: 11 }), sampleToken({ expiresAt: 12 })];
      for (const t of old) await s.tokens.create(t, NO_LIMIT, ev({ targetId: t.id }));
      const seen: string[] = [];
      const eventFor = (t: TokenRecord) => {
        seen.push(t.id);
        return ev({ action: 'api_token.expired_purged', targetId: t.id });
      };
      let purged = 0;
      for (;;) {
        const n = await s.tokens.purgeExpired(100, 2, eventFor);
        assert.ok(n <= 2);
        purged += n;
        if (n < 2) break;
      }
      assert.ok(purged >= 3);
      for (const t of old) {
        assert.equal(await s.tokens.get(OPERATOR_ACCOUNT_ID, t.id), null);
        assert.deepEqual(await trail(s, t.id), ['api_token.created', 'api_token.expired_purged']);
      }
    });

    it('audit: which secret of a token acted round-trips; events from before migration 9 read null', async () => {
      const older = await backend.create();
      const s = older.open();
      try {
        assert.deepEqual(await s.migrate({ upTo: 7 }), { applied: [1, 2, 3, 4, 5, 6, 7], version: 7 });
        // As releases of schema 5 to 7 wrote an event: without actor_credential.
        await rawSql(
          backend,
          older,
          `INSERT INTO audit_events (id, account_id, action, occurred_at, actor_type, actor_id, actor_name,
             target_type, target_id, target_name, ip, user_agent, request_id, details)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            'evt_0001_old',
            OPERATOR_ACCOUNT_ID,
            'api_token.created',
            NOW,
            'api_token',
            'tok_old',
            'old',
            'api_token',
            'tok_x',
            'x',
            null,
            null,
            null,
            '{}',
          ],
        );
        assert.equal((await s.migrate()).version, LATEST_VERSION);
        const tokenActor = { actorType: 'api_token' as const, actorId: 'tok_new', targetId: 'tok_x' };
        for (const [id, actorCredential] of [
          ['evt_0002_current', 'current'],
          ['evt_0003_previous', 'previous'],
        ] as const)
          await s.tokens.create(sampleToken(), NO_LIMIT, ev({ id, ...tokenActor, actorCredential }));
        const events = await s.audit.list({ targetId: 'tok_x', limit: 10 });
        assert.deepEqual(
          events.map((e) => [e.id, e.actorCredential]),
          [
            ['evt_0003_previous', 'previous'],
            ['evt_0002_current', 'current'],
            ['evt_0001_old', null],
          ],
        );
      } finally {
        await s.close();
        await older.drop();
      }
    });

    describe('instances (migration 7)', () => {
      // Only these tests write instance rows; each starts from an empty table.
      const empty = async (): Promise<void> => {
        await store.instances.prune(Number.MAX_SAFE_INTEGER);
      };

      it(
        'a heartbeat registers the instance; every instance ' +
          'counts the rows whose expiry is ahead, with a rank each',
        async () => {
          await empty();
          const [a, b, c] = [open(), open(), open()];
          assert.deepEqual(await a.instances.heartbeat(beat('ins_a', NOW)), { count: 1, rank: 0 });
          assert.deepEqual(await b.instances.heartbeat(beat('ins_b', NOW + 10)), { count: 2, rank: 1 });
          assert.deepEqual(await c.instances.heartbeat(beat('ins_c', NOW + 20)), { count: 3, rank: 2 });
          assert.deepEqual(await a.instances.heartbeat(beat('ins_a', NOW + 2000)), { count: 3, rank: 0 }, 'a refresh');
          // b beats no more: past its expiry (NOW + 6010) it no longer counts, for anyone.
          assert.deepEqual(await a.instances.heartbeat(beat('ins_a', NOW + 6015)), { count: 2, rank: 0 });
          assert.deepEqual(await c.instances.heartbeat(beat('ins_c', NOW + 6020)), { count: 2, rank: 1 });
          assert.deepEqual(
            await c.instances.heartbeat(beat('ins_c', NOW + 6030, 100_000)),
            { count: 2, rank: 1 },
            'an instance with a longer interval writes a later expiry',
          );
          assert.deepEqual(await a.instances.heartbeat(beat('ins_a', NOW + 20_000)), { count: 2, rank: 0 });
        },
      );

      it(
        'a refresh keeps host, pid and started_at; leave deletes ' +
          'the row once; prune only rows expired before the bound',
        async () => {
          await empty();
          await store.instances.heartbeat(beat('ins_p', NOW, 6000));
          await store.instances.heartbeat({ ...beat('ins_p', NOW + 2000, 6000), host: 'other', pid: 1, startedAt: 5 });
          const rows = await rawSql(backend, db, 'SELECT * FROM instances WHERE id = ?', ['ins_p']);
          assert.deepEqual(
            rows
              .map((r) => ({ ...(r as Record<string, unknown>) }))
              .map((r) => ({
                id: r.id,
                host: r.host,
                pid: Number(r.pid),
                started_at: Number(r.started_at),
                heartbeat_at: Number(r.heartbeat_at),
                expires_at: Number(r.expires_at),
              })),
            [
              {
                id: 'ins_p',
                host: 'host-1',
                pid: 4242,
                started_at: NOW,
                heartbeat_at: NOW + 2000,
                expires_at: NOW + 8000,
              },
            ],
          );
          assert.equal(await store.instances.leave('ins_p'), true);
          assert.equal(await store.instances.leave('ins_p'), false, 'gone already');
          assert.deepEqual(await store.instances.heartbeat(beat('ins_q', NOW, 6000)), { count: 1, rank: 0 });

          await store.instances.heartbeat(beat('ins_dead1', NOW - 10_000, 6000)); // expired at NOW - 4000
          await store.instances.heartbeat(beat('ins_dead2', NOW - 3000, 6000)); // expires at NOW + 3000
          assert.equal(await store.instances.prune(NOW), 1, 'only the row expired before the bound');
          assert.deepEqual(await store.instances.heartbeat(beat('ins_q', NOW + 1000, 6000)), { count: 2, rank: 1 });
          assert.equal(await store.instances.prune(Number.MAX_SAFE_INTEGER), 2);
        },
      );

      it('upgrade to schema 7: a database at schema 6 gains the table and keeps its tokens', async () => {
        const older = await backend.create();
        const s = older.open();
        try {
          assert.deepEqual(await s.migrate({ upTo: 6 }), { applied: [1, 2, 3, 4, 5, 6], version: 6 });
          const t = sampleToken();
          // As release 6 stored it (this release's store writes newer columns).
          await insertRows(backend, older, TOKENS_BEFORE_CONDITIONS, [t]);
          assert.deepEqual(await s.migrate({ upTo: 7 }), { applied: [7], version: 7 });
          assert.deepEqual(await s.instances.heartbeat(beat('ins_up', NOW)), { count: 1, rank: 0 });
          // The token conditions' migration reads as none: anywhere, at once, enabled.
          await s.migrate();
          assert.deepEqual(await s.tokens.get(OPERATOR_ACCOUNT_ID, t.id), t);
        } finally {
          await s.close();
          await older.drop();
        }
      });

      it('instances heartbeating at once each count all of them, and their ranks are 0..n-1', async () => {
        await empty();
        const fleet = Array.from({ length: 5 }, (_, i) => ({ id: `ins_${randomUUID()}`, store: open(), i }));
        await Promise.all(fleet.map((f) => f.store.instances.heartbeat(beat(f.id, NOW + f.i))));
        const views = await Promise.all(fleet.map((f) => f.store.instances.heartbeat(beat(f.id, NOW + 100 + f.i))));
        assert.deepEqual(
          views.map((v) => v.count),
          [5, 5, 5, 5, 5],
        );
        assert.deepEqual(
          views.map((v) => v.rank).sort((x, y) => x - y),
          [0, 1, 2, 3, 4],
        );
      });
    });

    it('close is idempotent', async () => {
      const s = open();
      await s.ping();
      await s.close();
      await s.close();
    });
  });
}

/** Inserts a token row as schema 3 stored it (no account_id), through the backend's own client. */
async function insertLegacyToken(backend: Backend, db: BackendDb, t: TokenRecord): Promise<void> {
  const values = [t.id, t.name, JSON.stringify(t.scopes), t.secretHash, t.createdAt, t.expiresAt, t.lastUsedAt];
  const sql =
    'INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, expires_at, last_used_at) VALUES ' +
    (backend.name === 'postgres' ? '($1, $2, $3, $4, $5, $6, $7)' : '(?, ?, ?, ?, ?, ?, ?)');
  await legacyInsert(backend, db, sql, values);
}

/** A catalog revision as the releases before the audit trail stored one (no event). */
async function insertLegacyCatalog(backend: Backend, db: BackendDb): Promise<void> {
  const sql =
    'INSERT INTO catalog_revisions (version, document, applied_at) VALUES ' +
    (backend.name === 'postgres' ? '($1, $2, $3)' : '(?, ?, ?)');
  await legacyInsert(backend, db, sql, [1, '{}', NOW]);
}

async function legacyInsert(backend: Backend, db: BackendDb, sql: string, values: unknown[]): Promise<void> {
  if (backend.name === 'postgres') {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query(sql, values);
    } finally {
      await c.end();
    }
  } else {
    const file = db.url.slice('sqlite:'.length);
    const raw = openDatabase(file);
    try {
      raw.prepare(sql).run(...values);
    } finally {
      raw.close();
    }
  }
}

/** Events that occurred before `at` outside the list test's own account (other tests' events). */
async function countOlder(store: Store, at: number): Promise<number> {
  return (await store.audit.list({ until: at, limit: 100_000 })).filter((e) => !e.accountId.startsWith('acc_list_'))
    .length;
}
