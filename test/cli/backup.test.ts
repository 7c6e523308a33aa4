// `infracat backup`: a consistent copy of a SQLite database while a server writes to it.
// Every write acknowledged before the backup began is in the copy, and a server started
// on the restored copy serves exactly the tokens the copy holds (no bootstrap token).
import assert from 'node:assert/strict';
import { copyFileSync, statSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fetchAll } from '../helpers/pages.js';
import { postgresBackend } from '../helpers/backends.js';
import { cli, serve } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

const WORKERS = 6;

interface Ledger {
  created: Map<string, string>;
  deleteSent: Set<string>;
  deleted: Set<string>;
  /** Never deleted: creates acknowledged before the backup, to find in it. */
  keep: Set<string>;
}

async function load(url: string, admin: string, ledger: Ledger, stop: { now: boolean }): Promise<void> {
  const auth = { authorization: `Bearer ${admin}` };
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; !stop.now; i++) {
      const candidates = [...ledger.created.keys()].filter((id) => !ledger.deleteSent.has(id) && !ledger.keep.has(id));
      if (i % 3 === 2 && candidates.length > 0) {
        const id = candidates[(w * 7919 + i) % candidates.length]!;
        ledger.deleteSent.add(id);
        const res = await fetch(`${url}/api/v1/api-tokens/${id}`, { method: 'DELETE', headers: auth });
        if (res.status === 204) ledger.deleted.add(id);
        else assert.equal(res.status, 404);
      } else {
        const res = await fetch(`${url}/api/v1/api-tokens`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `w${w}-${i}`, scopes: ['apps:read'] }),
        });
        assert.equal(res.status, 201);
        const body = (await res.json()) as { id: string; token: string };
        ledger.created.set(body.id, body.token);
      }
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
}

describe('infracat backup', () => {
  it(
    'under concurrent creates and deletes, the copy holds every write acknowledged before it began; ' +
      'a server on the restored file serves the same tokens',
    { timeout: 120_000 },
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      // Every deleted token is presented once at the end: no failed-auth limit in the way.
      const common = {
        RATE_LIMIT: '0',
        RATE_LIMIT_ANONYMOUS: '0',
        AUTH_FAILURE_LIMIT: '1000000',
        TOKEN_MAX_LIVE: '1000000',
        LAST_USED_FLUSH_MS: '50',
      };
      const env = { ...common, DATABASE_URL: `sqlite:${tmp.file()}` };
      assert.equal((await cli(['migrate'], { env })).code, 0);
      const made = await cli(['tokens', 'create', '--name', 'backup admin', '--all-scopes', '--json'], { env });
      assert.equal(made.code, 0, made.stderr);
      const admin = (JSON.parse(made.stdout) as { token: string }).token;

      const { child, url } = await serve(env);
      const ledger: Ledger = { created: new Map(), deleteSent: new Set(), deleted: new Set(), keep: new Set() };
      const stop = { now: false };
      const running = load(url, admin, ledger, stop);
      // Enough acknowledged writes before the backup to check, however slow the machine is.
      for (let i = 0; i < 600 && (ledger.created.size < 20 || ledger.deleted.size < 3); i++)
        await new Promise((r) => setTimeout(r, 50));
      // What was acknowledged before the backup began.
      const createdBefore = new Map(ledger.created);
      const deletedBefore = new Set(ledger.deleted);
      // However long the backup takes, the load keeps writing but never deletes these.
      for (const id of createdBefore.keys()) if (!ledger.deleteSent.has(id)) ledger.keep.add(id);
      const file = tmp.file('backup.sqlite');
      const backup = await cli(['backup', file], { env });
      stop.now = true;
      await running;
      child.proc.kill('SIGTERM');
      await child.exited;
      assert.equal(backup.code, 0, backup.stderr);
      assert.match(backup.stdout, /backed up sqlite:.* to .*backup\.sqlite \(\d+ bytes, integrity ok\)/);
      assert.ok(
        createdBefore.size >= 20 && deletedBefore.size >= 3,
        `load ran before the backup (${createdBefore.size} creates, ${deletedBefore.size} deletes)`,
      );
      assert.equal(statSync(file).mode & 0o777, 0o600, 'the copy holds token hashes: owner only');

      // Restore: the copy becomes the database of a new server.
      const restored = tempDir();
      t.after(() => restored.remove());
      copyFileSync(file, restored.file());
      const renv = { ...common, DATABASE_URL: `sqlite:${restored.file()}` };
      const direct = await cli(['tokens', 'list', '--json'], { env: renv });
      const inCopy = (JSON.parse(direct.stdout) as { id: string }[]).map((x) => x.id).sort();
      const second = await serve(renv);
      try {
        const listed = await fetchAll<{ id: string }>(second.url, '/api/v1/api-tokens?per_page=1000', {
          authorization: `Bearer ${admin}`,
        });
        const served = listed.map((x) => x.id).sort();
        assert.deepEqual(served, inCopy, 'the restored server serves exactly the tokens of the copy');
        const ids = new Set(served);
        const mustExist = [...createdBefore.keys()].filter((id) => !ledger.deleteSent.has(id));
        assert.ok(mustExist.length > 0);
        for (const id of mustExist) {
          assert.ok(ids.has(id), `create ${id}, acknowledged before the backup, is in it`);
          const r = await fetch(`${second.url}/api/v1/api-tokens/current`, {
            headers: { authorization: `Bearer ${createdBefore.get(id)!}` },
          });
          assert.equal(r.status, 200, `${id} authenticates on the restored server`);
        }
        for (const id of deletedBefore) {
          assert.ok(!ids.has(id), `delete of ${id}, acknowledged before the backup, is in it`);
          const r = await fetch(`${second.url}/api/v1/api-tokens/current`, {
            headers: { authorization: `Bearer ${createdBefore.get(id)!}` },
          });
          assert.equal(r.status, 401);
        }
        assert.ok(!second.child.stderr.join('\n').includes('icat_'), 'no admin token was minted on the restored copy');
      } finally {
        second.child.proc.kill('SIGTERM');
        await second.child.exited;
      }
    },
  );

  it('never overwrites an existing file, and says why (exit 73)', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const existing = tmp.file('precious.txt');
    writeFileSync(existing, 'keep me');
    const res = await cli(['backup', existing], { env });
    assert.equal(res.code, 73);
    assert.match(res.stderr, /already exists; a backup never overwrites/);
    assert.equal((await cli(['backup', tmp.file('no/such/dir/b.sqlite')], { env })).code, 73);
    assert.equal((await cli(['backup'], { env })).code, 2, 'FILE is required');
  });

  it('PostgreSQL: points at pg_dump / pg_restore (exit 69), writes nothing', async (t) => {
    const pg = postgresBackend(t);
    if (pg === undefined) return;
    const db = await pg.create();
    t.after(() => db.drop());
    const tmp = tempDir();
    t.after(() => tmp.remove());
    assert.equal((await cli(['migrate', '--database-url', db.url])).code, 0);
    const res = await cli(['backup', tmp.file('pg.sqlite'), '--database-url', db.url]);
    assert.equal(res.code, 69, res.stderr);
    assert.match(res.stderr, /pg_dump/);
  });
});
