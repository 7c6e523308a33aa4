// `infracat catalog history` and `infracat catalog rollback --to N` on both backends: the
// history as a table and as JSON, and a rollback as a new revision holding revision N's
// document (diff printed, --dry-run, the removal guard), audited, and picked up by a
// running instance.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { describe, it } from 'node:test';
import { DEFAULT_CATALOG_FILE } from '../../src/catalog/default.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

const defaultYaml = readFileSync(DEFAULT_CATALOG_FILE, 'utf8');

for (const backend of backends()) {
  describe(`infracat catalog history and rollback on ${backend.name}`, () => {
    it('history lists revisions newest first (table and --json); rollback applies N as a new revision', async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const db = await backend.fresh(t);
      const env = { DATABASE_URL: db.url };
      const empty = await cli(['catalog', 'history'], { env });
      assert.equal(empty.code, 0, empty.stderr);
      assert.match(empty.stdout, /no catalog applied yet/);

      assert.equal((await cli(['catalog', 'apply', DEFAULT_CATALOG_FILE.pathname], { env })).code, 0);
      const edited = tmp.file('edited.yaml');
      writeFileSync(
        edited,
        defaultYaml.replace('price_monthly: 6.00', 'price_monthly: 6.50').replace(/^ {2}- \{ slug: syd1.*\n/m, ''),
      );
      const second = await cli(['catalog', 'apply', edited, '--allow-removals'], { env });
      assert.equal(second.code, 0, second.stderr);

      const user = userInfo().username;
      const history = await cli(['catalog', 'history'], { env });
      assert.equal(history.code, 0, history.stderr);
      const lines = history.stdout.trimEnd().split('\n');
      assert.match(lines[0]!, /^VERSION +APPLIED_AT +APPLIED_BY +SUMMARY$/);
      assert.match(
        lines[1]!,
        new RegExp(`^2 +\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z +cli ${user} +0 added, 1 changed, 1 removed$`),
      );
      assert.match(lines[2]!, new RegExp(`^1 +\\S+ +cli ${user} +36 added, 0 changed, 0 removed`));
      assert.equal(lines.length, 3);

      const json = await cli(['catalog', 'history', '--json'], { env });
      const revisions = JSON.parse(json.stdout) as { version: number; applied_by: unknown; summary: string }[];
      assert.deepEqual(
        revisions.map((r) => r.version),
        [2, 1],
      );
      assert.deepEqual(revisions[0]!.applied_by, { type: 'cli', id: null, name: user });
      assert.equal(revisions[0]!.summary, '0 added, 1 changed, 1 removed');

      // An instance running meanwhile, to see the rollback arrive.
      const running = await build(t, { store: db.open(), env: { ...env, CATALOG_REFRESH_MS: '100' } });
      const reader = await mintToken(running.app, ['catalog:read']);

      const dry = await cli(['catalog', 'rollback', '--to', '1', '--dry-run'], { env });
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, /^\+ regions syd1$/m);
      assert.match(dry.stdout, /^~ plans s-1vcpu-1gb: price_monthly "6\.50" -> "6\.00"$/m);
      assert.match(dry.stdout, /dry run: nothing applied/);
      assert.equal((JSON.parse((await cli(['catalog', 'history', '--json'], { env })).stdout) as unknown[]).length, 2);

      const rollback = await cli(['catalog', 'rollback', '--to', '1'], { env });
      assert.equal(rollback.code, 0, rollback.stderr);
      assert.match(rollback.stdout, /^\+ regions syd1$/m);
      assert.match(rollback.stdout, /rolled back to the document of version 1, applied as catalog version 3/);
      const store = db.open();
      t.after(() => store.close());
      assert.equal((await store.catalog.revision(3))?.document, (await store.catalog.revision(1))?.document);
      const [event] = await store.audit.list({ action: 'catalog.applied', limit: 1 });
      assert.equal(event?.targetId, '3');
      assert.equal(event?.actorType, 'cli');
      assert.equal((event?.details as { rollback_of?: number }).rollback_of, 1);
      const after = JSON.parse((await cli(['catalog', 'history', '--json'], { env })).stdout) as {
        version: number;
        summary: string;
      }[];
      assert.equal(after[0]!.version, 3);
      assert.equal(after[0]!.summary, 'rollback to version 1: 1 added, 1 changed, 0 removed');

      for (let i = 0; ; i++) {
        const res = await running.app.inject({ method: 'GET', url: '/api/v1/catalog', headers: reader.auth });
        if (res.headers.etag === '"3"') {
          assert.match(res.body, /"slug": "syd1"/);
          break;
        }
        assert.ok(i < 150, 'the running instance picks the rollback up');
        await new Promise((r) => setTimeout(r, 20));
      }

      // Rolling back to 2 removes syd1 again: the removal guard of apply.
      const refused = await cli(['catalog', 'rollback', '--to', '2'], { env });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /refused: this rollback would remove 1 entry .*--allow-removals/);
      assert.match(refused.stdout, /^- regions syd1$/m);
      assert.equal(await store.catalog.latestVersion(), 3, 'nothing applied');
      const allowed = await cli(['catalog', 'rollback', '--to', '2', '--allow-removals'], { env });
      assert.equal(allowed.code, 0, allowed.stderr);
      assert.equal(await store.catalog.latestVersion(), 4);
      // Rolling back to the live document changes nothing and stores nothing.
      const same = await cli(['catalog', 'rollback', '--to', '4'], { env });
      assert.equal(same.code, 0, same.stderr);
      assert.match(same.stdout, /catalog unchanged \(version 4\)/);
      assert.equal(await store.catalog.latestVersion(), 4);
    });

    it('rollback refuses an unknown revision (1) and a missing or malformed --to (2)', async (t) => {
      const db = await backend.fresh(t);
      const env = { DATABASE_URL: db.url };
      const unknown = await cli(['catalog', 'rollback', '--to', '99'], { env });
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /no catalog revision 99/);
      for (const args of [[], ['--to'], ['--to', '0'], ['--to', 'x'], ['--to', '1.5'], ['--to', '1', 'file.yaml']]) {
        const res = await cli(['catalog', 'rollback', ...args], { env });
        assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
      }
      const help = await cli(['catalog', '--help']);
      assert.match(help.stdout, /infracat catalog history \[--json\]/);
      assert.match(help.stdout, /infracat catalog rollback --to N \[--dry-run\] \[--allow-removals\]/);
    });
  });
}
