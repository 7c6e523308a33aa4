// "A 201 means durable": a writer process prints each id only after the store
// resolved the write; we kill -9 it mid-stream and check every printed id survived.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import Database from '../../src/storage/sqlite/driver.js';
import type { Store } from '../../src/storage/types.js';
import { backends } from '../helpers/backends.js';
import { runTs } from '../helpers/process.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';

const WRITER = path.resolve(import.meta.dirname, '../fixtures/writer.ts');

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
      const file = new Database(db.url.slice('sqlite:'.length), { readonly: true });
      try {
        assert.equal(file.pragma('integrity_check', { simple: true }), 'ok');
      } finally {
        file.close();
      }
    });
  }
});
