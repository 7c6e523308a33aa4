// The operator path to accounts: `infracat accounts ...` and `infracat tokens ... --account`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR_ACCOUNT_ID } from '../../src/accounts/ids.js';
import { cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

describe('infracat accounts', () => {
  it('create, list, suspend, resume, delete with --json; tokens --account; the operator account refused', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const created = await cli(['accounts', 'create', '--name', 'Acme', '--external-id', 'cus_1', '--json'], { env });
    assert.equal(created.code, 0, created.stderr);
    const account = JSON.parse(created.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(account), ['id', 'name', 'external_id', 'status', 'rate_limit', 'created_at']);
    const id = String(account.id);

    const dup = await cli(['accounts', 'create', '--name', 'Again', '--external-id', 'cus_1'], { env });
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /external_id/);

    const minted = await cli(
      ['tokens', 'create', '--account', id, '--name', 'first', '--scopes', 'apps:read', '--json'],
      { env },
    );
    assert.equal(minted.code, 0, minted.stderr);
    const token = JSON.parse(minted.stdout) as { id: string };
    const refused = await cli(['tokens', 'create', '--account', id, '--name', 'x', '--scopes', 'accounts:read'], {
      env,
    });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /operator account/);
    const all = await cli(['tokens', 'create', '--account', id, '--name', 'all', '--all-scopes', '--json'], { env });
    assert.equal(all.code, 0, all.stderr);
    assert.ok(!(JSON.parse(all.stdout) as { scopes: string[] }).scopes.some((s) => s.startsWith('accounts:')));

    const theirs = JSON.parse((await cli(['tokens', 'list', '--account', id, '--json'], { env })).stdout) as {
      id: string;
    }[];
    assert.deepEqual(
      theirs.map((x) => x.id),
      [token.id, (JSON.parse(all.stdout) as { id: string }).id],
    );
    const operators = JSON.parse((await cli(['tokens', 'list', '--json'], { env })).stdout) as { id: string }[];
    assert.ok(!operators.some((x) => x.id === token.id), 'the default is the operator account');
    const wrongAccount = await cli(['tokens', 'delete', token.id], { env });
    assert.equal(wrongAccount.code, 1, "another account's token is not found in the operator account");

    const suspended = await cli(['accounts', 'suspend', id, '--json'], { env });
    assert.equal((JSON.parse(suspended.stdout) as { status: string }).status, 'suspended');
    const listed = JSON.parse((await cli(['accounts', 'list', '--status', 'suspended', '--json'], { env })).stdout) as {
      id: string;
    }[];
    assert.deepEqual(
      listed.map((a) => a.id),
      [id],
    );
    assert.match((await cli(['accounts', 'resume', id], { env })).stdout, /is active/);
    const human = await cli(['accounts', 'list'], { env });
    assert.match(human.stdout, /ID\s+NAME\s+EXTERNAL ID\s+STATUS/);
    assert.match(human.stdout, new RegExp(OPERATOR_ACCOUNT_ID));

    for (const sub of ['suspend', 'delete']) {
      const res = await cli(['accounts', sub, OPERATOR_ACCOUNT_ID], { env });
      assert.equal(res.code, 1, sub);
      assert.match(res.stderr, /operator account cannot be/);
    }
    assert.equal((await cli(['accounts', 'delete', id], { env })).code, 0);
    assert.equal((await cli(['accounts', 'delete', id], { env })).code, 1);
    const gone = await cli(['tokens', 'list', '--account', id], { env });
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /no account/);
    assert.equal((await cli(['accounts', 'list', '--status', 'deleted'], { env })).code, 2);
  });
});
