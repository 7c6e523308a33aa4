// "A 201 means durable": a writer process prints each id only after the store
// resolved the write; we kill -9 it mid-stream and check every printed id survived.
// And audit atomicity: a writer making changes through the domain services, killed at
// random points, leaves every acknowledged change with its event and no event without
// its change.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import type { AuditEventRecord, Store } from '../../src/storage/types.js';
import { backends } from '../helpers/backends.js';
import { runTs } from '../helpers/process.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';

const WRITER = path.resolve(import.meta.dirname, '../fixtures/writer.ts');
// Kills per backend of the audited writer (npm test: 4; npm run test:reliability: 20).
const AUDIT_ROUNDS = Math.max(4, Number(process.env.CRASH_ROUNDS ?? 4));

async function killMidStream(databaseUrl: string, rounds: number, open: () => Store): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    const child = runTs(WRITER, [], { env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' } });
    await child.waitFor(/^ready$/);
    // Let it write a varying number of tokens, then kill it without warning.
    await child.waitFor(new RegExp(`^ack tok_\\d+_${5 + round * 7}$`));
    child.proc.kill('SIGKILL');
    const { signal } = await child.exited;
    assert.equal(signal, 'SIGKILL');
    const acked = child.stdout.filter((l) => l.startsWith('ack ')).map((l) => l.slice(4));
    assert.ok(acked.length >= 5 + round * 7);
    const store = open();
    try {
      for (const id of acked)
        assert.ok(await store.tokens.get(OPERATOR_ACCOUNT_ID, id), `acknowledged ${id} survived kill -9`);
    } finally {
      await store.close();
    }
  }
}

describe('acknowledged writes survive kill -9', () => {
  for (const backend of backends()) {
    it(`${backend.name} (SQLite: synchronous=FULL, and the file passes integrity_check)`, async (t) => {
      const db = await backend.create();
      t.after(() => db.drop());
      await killMidStream(db.url, 3, () => db.open());
      if (backend.name !== 'sqlite') return;
      const file = openDatabase(db.url.slice('sqlite:'.length), { readonly: true });
      try {
        assert.equal(file.pragma('integrity_check', { simple: true }), 'ok');
      } finally {
        file.close();
      }
    });
  }
});

/** What the audited writer acknowledged over all its lives. */
interface Acks {
  accounts: Set<string>;
  created: Set<string>;
  deleted: Set<string>;
}

/**
 * The store against the events, both ways: every acknowledged change has its event; every
 * event's change is in the store (a created token exists unless its deletion is recorded;
 * a deleted one does not; each account is as its latest status event says); every stored
 * token and account has its creation event, once.
 */
async function checkAuditAtomicity(store: Store, acks: Acks): Promise<number> {
  const events = (await store.audit.list({ limit: 1_000_000 })).reverse(); // oldest first
  const accounts = await store.accounts.list({}, { limit: 1000 });
  const tokens = new Map<string, string>(); // id -> account
  for (const a of accounts)
    for (const tok of await store.tokens.list(a.id, 0, { limit: 1000 })) tokens.set(tok.id, a.id);
  const by = (action: string) => {
    const out = new Map<string, AuditEventRecord[]>();
    for (const e of events.filter((x) => x.action === action))
      out.set(e.targetId!, [...(out.get(e.targetId!) ?? []), e]);
    return out;
  };
  const created = by('api_token.created');
  const deleted = by('api_token.deleted');
  const accountCreated = by('account.created');

  for (const id of acks.created) assert.ok(created.has(id), `acknowledged create of ${id} has its event`);
  for (const id of acks.deleted) {
    assert.ok(deleted.has(id), `acknowledged delete of ${id} has its event`);
    assert.ok(!tokens.has(id), `acknowledged delete of ${id} stayed deleted`);
  }
  for (const id of acks.accounts) assert.ok(accountCreated.has(id), `acknowledged account ${id} has its event`);
  for (const [id, list] of created) {
    assert.equal(list.length, 1, `one creation event for ${id}`);
    const gone = deleted.get(id);
    if (gone === undefined) {
      assert.equal(tokens.get(id), list[0]!.accountId, `token ${id} of a creation event exists, in its account`);
    } else {
      assert.equal(gone.length, 1, `one deletion event for ${id}`);
      assert.ok(!tokens.has(id), `token ${id} of a deletion event is gone`);
    }
  }
  for (const id of deleted.keys()) assert.ok(created.has(id), `deleted ${id} was created`);
  for (const id of tokens.keys()) assert.ok(created.has(id), `stored token ${id} has its creation event`);
  for (const a of accounts.filter((x) => x.id !== OPERATOR_ACCOUNT_ID)) {
    assert.equal(accountCreated.get(a.id)?.length, 1, `stored account ${a.id} has one creation event`);
    const statusEvents = events.filter(
      (e) => e.targetId === a.id && (e.action === 'account.suspended' || e.action === 'account.resumed'),
    );
    const last = statusEvents.at(-1)?.action;
    assert.equal(a.status, last === 'account.suspended' ? 'suspended' : 'active', `${a.id} is as its events say`);
  }
  for (const id of accountCreated.keys())
    assert.ok(
      accounts.some((a) => a.id === id),
      `account ${id} of a creation event exists`,
    );
  return events.length;
}

describe('audit atomicity under kill -9: an acknowledged change has its event, an event its change', () => {
  for (const backend of backends()) {
    it(`${backend.name}: ${AUDIT_ROUNDS} kills at random points`, async (t) => {
      const db = await backend.fresh(t);
      const acks: Acks = { accounts: new Set(), created: new Set(), deleted: new Set() };
      for (let round = 0; round < AUDIT_ROUNDS; round++) {
        const child = runTs(WRITER, ['audit'], { env: { DATABASE_URL: db.url, LOG_LEVEL: 'silent' } });
        await child.waitFor(/^ready$/);
        // A random number of acknowledged changes, then a random moment within the next one.
        const target = 10 + Math.floor(Math.random() * 60);
        const acked = () => child.stdout.length - 1; // every line after `ready`
        while (acked() < target) await new Promise((r) => setTimeout(r, 5));
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 15)));
        child.proc.kill('SIGKILL');
        const { signal } = await child.exited;
        assert.equal(signal, 'SIGKILL');
        for (const line of child.stdout) {
          const [kind, id] = line.split(' ');
          if (kind === 'account') acks.accounts.add(id!);
          else if (kind === 'created') acks.created.add(id!);
          else if (kind === 'deleted') acks.deleted.add(id!);
        }
        const store = db.open();
        try {
          await checkAuditAtomicity(store, acks);
        } finally {
          await store.close();
        }
      }
      assert.ok(acks.created.size >= AUDIT_ROUNDS * 5 && acks.deleted.size > 0 && acks.accounts.size > 0);
    });
  }
});
