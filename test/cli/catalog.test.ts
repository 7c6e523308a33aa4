// `infracat catalog validate|apply|export` against a real SQLite file (the commands are
// backend-agnostic; the storage contract covers PostgreSQL's catalog_revisions).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { DEFAULT_CATALOG_FILE } from '../../src/catalog/default.js';
import { largeCatalog } from '../helpers/large-catalog.js';
import { CLI, cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

const defaultYaml = readFileSync(DEFAULT_CATALOG_FILE, 'utf8');

describe('infracat catalog', () => {
  it('validate: ok for the shipped file; every problem with entry and field otherwise, exit 1', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const ok = await cli(['catalog', 'validate', DEFAULT_CATALOG_FILE.pathname]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /ok \(11 images, 15 plans, 10 regions, USD\)/);

    const broken = tmp.file('broken.yaml');
    writeFileSync(
      broken,
      defaultYaml
        .replace('price_monthly: 6.00', 'price_monthly: 5.999')
        .replace('slug: nyc3,', 'slug: NYC3,')
        .replace('id: c-4vcpu-8gb, slug: c-4vcpu-8gb', 'id: c-4vcpu-8gb, slug: c-4vcpu-9gb'),
    );
    const bad = await cli(['catalog', 'validate', broken]);
    assert.equal(bad.code, 1);
    // 4 in the entries, and each region offering the renamed plan names it (5 regions list it).
    assert.match(bad.stderr, /9 problems/);
    assert.match(bad.stderr, /regions\[\d+\] \(tor1\)\.plans: unknown plan "c-4vcpu-8gb"/);
    assert.match(bad.stderr, /plans\[\d+\] \(s-1vcpu-1gb\)\.price_monthly: must have at most two decimals/);
    assert.match(bad.stderr, /regions\[\d+\] \(NYC3\)\.slug: must be a short lowercase code/);
    assert.match(bad.stderr, /plans\[\d+\] \(c-4vcpu-9gb\)\.id: must equal slug/);
    assert.match(bad.stderr, /plans\[\d+\] \(c-4vcpu-9gb\)\.slug: must be "c-4vcpu-8gb"/);

    const missing = await cli(['catalog', 'validate', tmp.file('nope.yaml')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot read .*ENOENT/);
    assert.equal((await cli(['catalog', 'validate'])).code, 2);
  });

  it(
    'apply: prints the diff and applies atomically; a bad file changes nothing; --dry-run changes ' + 'nothing',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
      assert.equal((await cli(['migrate'], { env })).code, 0, 'the operator commands need an existing database');
      const first = await cli(['catalog', 'apply', DEFAULT_CATALOG_FILE.pathname], { env });
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /^\+ plans s-1vcpu-1gb$/m);
      assert.match(first.stdout, /36 added, 0 changed, 0 removed/);
      assert.match(first.stdout, /applied as catalog version 1/);

      const edited = tmp.file('edited.yaml');
      writeFileSync(
        edited,
        defaultYaml.replace('price_monthly: 6.00', 'price_monthly: 6.50').replace(/^ {2}- \{ slug: syd1.*\n/m, ''),
      );
      const dry = await cli(['catalog', 'apply', edited, '--dry-run'], { env });
      assert.equal(dry.code, 0);
      assert.match(dry.stdout, /^~ plans s-1vcpu-1gb: price_monthly "6\.00" -> "6\.50"$/m);
      assert.match(dry.stdout, /^- regions syd1$/m);
      assert.match(dry.stdout, /dry run: nothing applied/);
      const exported = await cli(['catalog', 'export'], { env });
      assert.match(exported.stdout, /price_monthly: 6\.00$/m, 'the dry run changed nothing');

      const broken = tmp.file('broken.yaml');
      writeFileSync(
        broken,
        defaultYaml
          .replace('price_monthly: 6.00', 'price_monthly: 7.00')
          .replace('available: true', 'available: maybe'),
      );
      const refused = await cli(['catalog', 'apply', broken], { env });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /available: must be true or false/);
      assert.match(
        (await cli(['catalog', 'export'], { env })).stdout,
        /price_monthly: 6\.00$/m,
        'the valid change in a bad file was not applied',
      );

      const unconfirmed = await cli(['catalog', 'apply', edited], { env });
      assert.equal(unconfirmed.code, 1, 'removing an entry needs --allow-removals');
      assert.match(unconfirmed.stderr, /refused: this apply would remove 1 entry .*--allow-removals/);
      assert.match(
        (await cli(['catalog', 'export'], { env })).stdout,
        /price_monthly: 6\.00$/m,
        'a refused apply changes nothing',
      );
      const applied = await cli(['catalog', 'apply', edited, '--allow-removals'], { env });
      assert.equal(applied.code, 0, applied.stderr);
      assert.match(applied.stdout, /applied as catalog version 2/);
      const after = (await cli(['catalog', 'export', '--format', 'json'], { env })).stdout;
      assert.match(after, /"price_monthly": 6\.50/);
      assert.ok(!after.includes('syd1'));
    },
  );

  it('export then apply is a no-op, in YAML and in JSON', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0, 'the operator commands need an existing database');
    await cli(['catalog', 'apply', DEFAULT_CATALOG_FILE.pathname], { env });
    for (const format of ['yaml', 'json']) {
      const file = tmp.file(`export.${format}`);
      const exported = await cli(['catalog', 'export', '--format', format], { env });
      assert.equal(exported.code, 0);
      writeFileSync(file, exported.stdout);
      const again = await cli(['catalog', 'apply', file], { env });
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /^no changes$/m);
      assert.match(again.stdout, /catalog unchanged \(version 1\)/);
    }
    assert.equal((await cli(['catalog', 'export', '--format', 'xml'], { env })).code, 2);
  });

  it('apply: a file of 20,000 plans, 1,000 images and 50 regions applies; export gives it back', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const big = largeCatalog({ plans: 20_000, images: 1_000, regions: 50 });
    const file = tmp.file('large.json');
    writeFileSync(file, JSON.stringify(big.document));
    const applied = await cli(['catalog', 'apply', file], { env });
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /^21050 added, 0 changed, 0 removed/m);
    assert.match(applied.stdout, /applied as catalog version 1/);
    const exported = await cli(['catalog', 'export', '--format', 'json'], { env });
    assert.equal(exported.code, 0, exported.stderr);
    const doc = JSON.parse(exported.stdout) as Record<
      'images' | 'plans' | 'regions',
      { slug: string; plans?: string[] }[]
    >;
    assert.deepEqual([doc.images.length, doc.plans.length, doc.regions.length], [1_000, 20_000, 50]);
    assert.deepEqual(new Set(doc.regions.find((r) => r.slug === 'reg1')!.plans), big.plansIn('reg1'));
    const again = await cli(['catalog', 'apply', file], { env });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /catalog unchanged \(version 1\)/);
  });

  it(
    'an empty or near-empty file never wipes the catalog without --allow-removals (or "yes" typed on a ' + 'terminal)',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
      assert.equal((await cli(['migrate'], { env })).code, 0);
      assert.equal((await cli(['catalog', 'apply', DEFAULT_CATALOG_FILE.pathname], { env })).code, 0);
      const empty = tmp.file('empty.yaml');
      writeFileSync(empty, 'images: []\nplans: []\nregions: []\n');
      const refused = await cli(['catalog', 'apply', empty], { env });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /would remove 36 entries/);
      assert.match(refused.stdout, /0 added, 0 changed, 36 removed/, 'the diff is still shown');
      assert.match((await cli(['catalog', 'export'], { env })).stdout, /s-1vcpu-1gb/);

      // On a terminal the command asks; anything but "yes" keeps the catalog.
      const tsx = import.meta.resolve('tsx');
      const command = (answer: string) =>
        `printf '${answer}\\n' | ` +
        `script -qec '"${process.execPath}" --import "${tsx}" "${CLI}" catalog apply "${empty}"' /dev/null`;
      const no = spawnSync('bash', ['-c', command('no')], { env: { ...process.env, ...env }, encoding: 'utf8' });
      assert.match(no.stdout, /Remove 36 entries from the live catalog\? Type "yes" to apply/);
      assert.match(no.stdout, /refused/);
      assert.match((await cli(['catalog', 'export'], { env })).stdout, /s-1vcpu-1gb/);
      const yes = spawnSync('bash', ['-c', command('yes')], { env: { ...process.env, ...env }, encoding: 'utf8' });
      assert.match(yes.stdout, /applied as catalog version 2/, yes.stdout + yes.stderr);
      assert.doesNotMatch((await cli(['catalog', 'export'], { env })).stdout, /s-1vcpu-1gb/);
    },
  );

  it('a YAML syntax error is shown whole: message, line and caret', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const bad = tmp.file('bad.yaml');
    writeFileSync(bad, 'currency: USD\nimages:\n  - slug: [oops\n    name: x\n');
    const res = await cli(['catalog', 'validate', bad]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /at line 4, column 5:/);
    assert.match(res.stderr, /^ +- slug: \[oops$/m, 'the offending lines are quoted');
    assert.match(res.stderr, /^ +\^$/m, 'with a caret under the spot');
  });
});
