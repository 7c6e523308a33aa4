// The operator path to accounts: `infracat accounts ...` and `infracat tokens ... --account`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR_ACCOUNT_ID } from '../../src/accounts/ids.js';
import { cli } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

describe('infracat accounts', () => {
  it('update: --name and --rate-limit (a number, 0 for none, default for the setting), as PATCH', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const created = await cli(['accounts', 'create', '--name', 'Acme', '--json'], { env });
    const id = String((JSON.parse(created.stdout) as { id: string }).id);
    const update = async (...flags: string[]) => cli(['accounts', 'update', id, ...flags, '--json'], { env });

    const limited = await update('--rate-limit', '30');
    assert.equal(limited.code, 0, limited.stderr);
    assert.equal((JSON.parse(limited.stdout) as { rate_limit: unknown }).rate_limit, 30);
    const off = await update('--rate-limit', '0', '--name', 'Acme Corp');
    assert.deepEqual(
      (({ name, rate_limit }) => ({ name, rate_limit }))(
        JSON.parse(off.stdout) as { name: string; rate_limit: unknown },
      ),
      { name: 'Acme Corp', rate_limit: 0 },
    );
    const back = await cli(['accounts', 'update', id, '--rate-limit', 'default'], { env });
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stdout, /the default rate limit/);
    const listed = JSON.parse((await cli(['accounts', 'list', '--json'], { env })).stdout) as {
      id: string;
      rate_limit: unknown;
    }[];
    assert.equal(listed.find((a) => a.id === id)?.rate_limit, null);
    // The change is audited as the API's is.
    const trail = await cli(['audit', 'list', '--action', 'account.updated', '--json'], { env });
    assert.equal(trail.code, 0, trail.stderr);
    assert.ok((JSON.parse(trail.stdout) as unknown[]).length >= 3, trail.stdout);

    for (const bad of [['--rate-limit', '-1'], ['--rate-limit', '1.5'], ['--rate-limit', '99999999999'], []]) {
      const refused = await cli(['accounts', 'update', id, ...bad], { env });
      assert.equal(refused.code, 2, `${bad.join(' ')}: ${refused.stderr}`);
    }
    assert.equal((await cli(['accounts', 'update', 'acc_nope', '--rate-limit', '5'], { env })).code, 1);
  });

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
