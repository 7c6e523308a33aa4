// The operator path: `infracat tokens ...` and the first-start admin token of `serve`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkSecret } from '../../src/tokens/format.js';
import { cli, serve } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';

describe('infracat tokens', () => {
  it('create --json prints the API create response; list and delete work on the same store', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0, 'the operator commands need an existing database');
    const created = await cli(['tokens', 'create', '--name', 'ci', '--scopes', 'apps:read,apps:write', '--json'], {
      env,
    });
    assert.equal(created.code, 0, created.stderr);
    const body = JSON.parse(created.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'expires_at', 'id', 'name', 'scopes', 'token']);
    assert.deepEqual(checkSecret(String(body.token), 'icat'), { ok: true });

    const listed = await cli(['tokens', 'list', '--json'], { env });
    const list = JSON.parse(listed.stdout) as Record<string, unknown>[];
    assert.equal(list.length, 1);
    assert.equal(list[0]!.id, body.id);
    assert.equal(list[0]!.last_used_at, null);
    assert.ok(!listed.stdout.includes(String(body.token)));

    const table = await cli(['tokens', 'list'], { env });
    assert.match(table.stdout, /ID\s+NAME\s+SCOPES/);
    assert.match(table.stdout, new RegExp(String(body.id)));

    const human = await cli(
      [
        'tokens',
        'create',
        '--name',
        'h',
        '--scopes',
        'images:read',
        '--expires-at',
        new Date(Date.now() + 86_400_000).toISOString(),
      ],
      { env },
    );
    assert.match(human.stdout, /token: icat_/);
    assert.match(human.stdout, /expires /);

    assert.equal((await cli(['tokens', 'delete', String(body.id)], { env })).code, 0);
    const again = await cli(['tokens', 'delete', String(body.id)], { env });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no token with id/);
  });

  it('bad input: the problems and the valid scopes are listed, exit 1; usage errors exit 2', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0, 'the operator commands need an existing database');
    const bad = await cli(['tokens', 'create', '--name', ' ', '--scopes', 'apps:read,nope'], { env });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /name: must not be empty/);
    assert.match(bad.stderr, /scopes\/1: /);
    assert.match(bad.stderr, /valid scopes: api-tokens:read/);
    assert.equal((await cli(['tokens', 'create', '--name', 'x'], { env })).code, 2);
    assert.equal((await cli(['tokens', 'rotate'], { env })).code, 2);
    assert.equal((await cli(['tokens', 'delete'], { env })).code, 2);
    const help = await cli(['tokens', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /infracat tokens create --name NAME --scopes/);
  });

  it(
    'serve mints one admin token on the first start of an empty store, prints it once to stderr, never logs ' + 'it',
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
      const first = await serve(env);
      const line = await first.child.waitFor(/^\s+token: icat_/);
      const secret = line.trim().slice('token: '.length);
      const res = await fetch(`${first.url}/api/v1/api-tokens/current`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(res.status, 200);
      const me = (await res.json()) as { scopes: string[] };
      assert.equal(me.scopes.length, 12);
      first.child.proc.kill('SIGTERM');
      await first.child.exited;
      assert.ok(!first.child.stdout.join('\n').includes(secret), 'not in the log stream');
      assert.ok(first.child.stdout.join('\n').includes('minted the bootstrap admin token'));

      const second = await serve(env);
      second.child.proc.kill('SIGTERM');
      await second.child.exited;
      assert.ok(!second.child.stderr.join('\n').includes('token:'), 'not minted twice');

      const other = tempDir();
      t.after(() => other.remove());
      const off = await serve({ DATABASE_URL: `sqlite:${other.file()}`, BOOTSTRAP_ADMIN_TOKEN: 'false' });
      off.child.proc.kill('SIGTERM');
      await off.child.exited;
      assert.ok(!off.child.stderr.join('\n').includes('token:'), 'turned off by setting');
    },
  );
});
