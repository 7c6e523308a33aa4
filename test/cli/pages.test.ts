// `infracat tokens list` and `infracat accounts list` read the store a page (CLI_PAGE rows) at
// a time and print as they go: longer lists than a page come out whole, each row once,
// oldest first, and --json is the one array JSON.stringify(list, null, 2) would print.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CLI_PAGE } from '../../src/cli/pages.js';
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import { cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

const ACCOUNTS = CLI_PAGE * 2 + 345;
const TOKENS = CLI_PAGE + 203;
const T0 = 1_700_000_000_000;

describe('infracat tokens list and accounts list, past one page', () => {
  it('print every row once, oldest first, in --json exactly one array; filters apply to every page', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const file = tmp.file();
    const env = { DATABASE_URL: `sqlite:${file}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    // Rows seeded in one statement each (the store's path would take one transaction a row);
    // three rows share each created_at, so pages end inside ties too.
    const raw = openDatabase(file);
    try {
      raw.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ACCOUNTS})
        INSERT INTO accounts (id, name, external_id, status, created_at)
        SELECT printf('acc_%026d', i), 'account ' || i, NULL,
               CASE WHEN i % 4 = 0 THEN 'suspended' ELSE 'active' END, ${T0} + i / 3 FROM n`);
      raw.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${TOKENS})
        INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, expires_at, last_used_at, account_id)
        SELECT printf('tok_%026d', ${TOKENS} - i), 'token ' || i, '["apps:read"]', printf('%064d', i),
               ${T0} + i / 3, NULL, NULL, 'acc_${'0'.repeat(25)}1' FROM n`);
    } finally {
      raw.close();
    }
    const account1 = `acc_${'0'.repeat(25)}1`;

    const tokens = await cli(['tokens', 'list', '--account', account1, '--json'], { env });
    assert.equal(tokens.code, 0, tokens.stderr);
    const listed = JSON.parse(tokens.stdout) as { id: string; created_at: string }[];
    assert.equal(listed.length, TOKENS);
    assert.equal(new Set(listed.map((x) => x.id)).size, TOKENS, 'each token once');
    const order = [...listed].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
    assert.deepEqual(listed, order, 'oldest first, ties by id');
    // (The helper gives stdout's lines joined, without the final newline.)
    assert.ok(tokens.stdout === JSON.stringify(listed, null, 2), 'one array, as JSON.stringify prints it');

    const table = await cli(['tokens', 'list', '--account', account1], { env });
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+NAME\s+SCOPES\s+CREATED\s+LAST USED\s+EXPIRES\s+CONDITIONS$/);
    assert.equal(lines.length, TOKENS + 1, 'one header, then a line per token');
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(/\s+/)[0]),
      listed.map((x) => x.id),
    );

    const accounts = await cli(['accounts', 'list', '--json'], { env });
    assert.equal(accounts.code, 0, accounts.stderr);
    const all = JSON.parse(accounts.stdout) as { id: string; status: string }[];
    assert.equal(all.length, ACCOUNTS + 1, 'every account and the operator account');
    assert.equal(new Set(all.map((a) => a.id)).size, all.length);
    assert.ok(accounts.stdout === JSON.stringify(all, null, 2), 'one array, as JSON.stringify prints it');
    const suspended = await cli(['accounts', 'list', '--status', 'suspended', '--json'], { env });
    assert.deepEqual(
      JSON.parse(suspended.stdout),
      all.filter((a) => a.status === 'suspended'),
      'the filter holds on every page',
    );
    const accountTable = await cli(['accounts', 'list', '--status', 'active'], { env });
    assert.equal(accountTable.stdout.trimEnd().split('\n').length, all.filter((a) => a.status === 'active').length + 1);

    const none = await cli(['tokens', 'list', '--account', `acc_${'0'.repeat(25)}2`, '--json'], { env });
    assert.equal(none.stdout, '[]');
    const noneTable = await cli(['tokens', 'list', '--account', `acc_${'0'.repeat(25)}2`], { env });
    assert.equal(noneTable.stdout, 'no tokens');
  });
});
