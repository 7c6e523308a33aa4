// Store.watch on every backend: a change committed through another store on the same
// database is heard (PostgreSQL: what changed; SQLite: that something did), a watch stops
// when told, and a payload that is not exactly a known change is read as a resync.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decodeChange, encodeChange, RESYNC } from '../../src/storage/changes.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import type { Change, TokenRecord } from '../../src/storage/types.js';
import { ev } from '../helpers/audit.js';
import { backends } from '../helpers/backends.js';

const token = (id: string): TokenRecord => ({
  id,
  name: id,
  scopes: ['apps:read'],
  secretHash: randomBytes(32).toString('hex'),
  createdAt: Date.now(),
  expiresAt: null,
  lastUsedAt: null,
  lastUsedIp: null,
  accountId: OPERATOR_ACCOUNT_ID,
  previousSecretHash: null,
  previousExpiresAt: null,
  allowedCidrs: null,
  notBefore: null,
  enabled: true,
});

/** Resolves with the changes heard once `until` holds for them (or fails after 5 s). */
function collect(heard: Change[], until: (heard: Change[]) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (until(heard)) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() - started > 5000) {
        clearInterval(timer);
        reject(new Error(`not heard in 5 s; heard ${JSON.stringify(heard)}`));
      }
    }, 10);
  });
}

describe('change payloads', () => {
  it('every change survives the wire', () => {
    const changes: Change[] = [
      { kind: 'token', accountId: OPERATOR_ACCOUNT_ID, id: 'tok_01ABC' },
      { kind: 'account', accountId: 'acc_01XYZ' },
      { kind: 'catalog', version: 42 },
      RESYNC,
    ];
    for (const change of changes) assert.deepEqual(decodeChange(encodeChange(change)), change);
  });

  it('anything else is a resync (drop what may be stale), never an error', () => {
    for (const payload of [
      undefined,
      '',
      'null',
      '[]',
      '{"k":"token","a":"acc"}',
      '{"k":"token","a":"acc","i":"tok","x":1}',
      '{"k":"token","a":"acc","i":"tok/../x"}',
      '{"k":"catalog","v":0}',
      '{"k":"catalog","v":"3"}',
      '{"k":"account","a":""}',
      '{"k":"unknown"}',
    ])
      assert.deepEqual(decodeChange(payload), RESYNC, String(payload));
    fc.assert(
      fc.property(fc.string(), (payload) => {
        const change = decodeChange(payload);
        return change.kind === 'resync' || decodeChange(encodeChange(change)).kind === change.kind;
      }),
    );
  });
});

for (const backend of backends()) {
  describe(`Store.watch (${backend.name})`, () => {
    it("hears another store's committed changes; stop() ends it", async (t) => {
      const db = await backend.fresh(t);
      const watcher = db.open();
      const writer = db.open();
      t.after(async () => {
        await watcher.close();
        await writer.close();
      });
      const heard: Change[] = [];
      let connected = 0;
      const watch = watcher.watch({ change: (c) => heard.push(c), connected: () => (connected += 1) });
      // At start: listening, then a resync (whatever changed before was not heard).
      await collect(heard, (h) => h.some((c) => c.kind === 'resync'));
      assert.equal(connected, 1);
      heard.length = 0;

      const t1 = token(`tok_w${backend.name}1`);
      assert.equal(await writer.tokens.create(t1, { maxLive: 100, now: Date.now() }, ev()), 'created');
      assert.equal(await writer.tokens.delete(OPERATOR_ACCOUNT_ID, t1.id, ev({ action: 'api_token.deleted' })), true);
      if (backend.name === 'postgres') {
        // What changed, exactly; a create announces nothing (nothing can be stale about a new token).
        await collect(heard, (h) => h.length >= 1);
        assert.deepEqual(heard, [{ kind: 'token', accountId: OPERATOR_ACCOUNT_ID, id: t1.id }]);
      } else {
        await collect(heard, (h) => h.length >= 1);
        assert.ok(heard.every((c) => c.kind === 'resync'));
      }

      // A delete that finds nothing changes nothing and announces nothing.
      heard.length = 0;
      assert.equal(await writer.tokens.delete(OPERATOR_ACCOUNT_ID, 'tok_missing', ev()), false);
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(heard, []);

      await watch.stop();
      const t2 = token(`tok_w${backend.name}2`);
      assert.equal(await writer.tokens.create(t2, { maxLive: 100, now: Date.now() }, ev()), 'created');
      assert.equal(await writer.tokens.delete(OPERATOR_ACCOUNT_ID, t2.id, ev({ action: 'api_token.deleted' })), true);
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(heard, [], 'nothing after stop()');
    });

    it("a store's own writes: heard on PostgreSQL (harmless), not on SQLite (its own connection)", async (t) => {
      const db = await backend.fresh(t);
      const store = db.open();
      t.after(() => store.close());
      const heard: Change[] = [];
      const watch = store.watch({ change: (c) => heard.push(c) });
      t.after(() => watch.stop());
      await collect(heard, (h) => h.length >= 1);
      heard.length = 0;
      const t1 = token(`tok_own${backend.name}`);
      await store.tokens.create(t1, { maxLive: 100, now: Date.now() }, ev());
      await store.tokens.delete(OPERATOR_ACCOUNT_ID, t1.id, ev({ action: 'api_token.deleted' }));
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(
        heard,
        backend.name === 'postgres' ? [{ kind: 'token', accountId: OPERATOR_ACCOUNT_ID, id: t1.id }] : [],
      );
    });
  });
}

describe('the PostgreSQL listening connection, against a server that never answers', () => {
  it('stop() cuts a connection attempt short instead of waiting out its time-out', { timeout: 20_000 }, async (t) => {
    // Accepts connections and says nothing: a black-holed database host.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      for (const s of sockets) s.destroy();
      silent.close();
    });
    const { port } = silent.address() as AddressInfo;
    const url = `postgres://nobody@127.0.0.1:${port}/nowhere`;
    // A minute to connect: stop() must not wait for it (the test's own time-out is 20 s).
    const store = new PostgresStore({ url, poolMax: 1, timeoutMs: 60_000 });
    const heard: Change[] = [];
    const watch = store.watch({ change: (c) => heard.push(c) });
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(sockets.size >= 1, 'it tried to connect');
    await watch.stop();
    await store.close();
    assert.deepEqual(heard, [], 'never listening, so nothing heard (not even a resync)');
  });
});
