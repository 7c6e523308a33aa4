// The operator path: `infracat tokens ...` and the first-start admin token of `serve`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { checkSecret } from '../../src/tokens/format.js';
import { createTokenDomain } from '../../src/tokens/index.js';
import { assertNoSecret } from '../helpers/no-secret.js';
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
    assert.deepEqual(Object.keys(body).sort(), [
      'allowed_cidrs',
      'created_at',
      'enabled',
      'expires_at',
      'id',
      'name',
      'not_before',
      'scopes',
      'token',
    ]);
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

  it('rotate prints the new secret once; --grace keeps the old one working that long; audited', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const created = JSON.parse(
      (await cli(['tokens', 'create', '--name', 'ci', '--scopes', 'apps:read', '--json'], { env })).stdout,
    ) as { id: string; token: string };
    const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 2000 });
    t.after(() => store.close());
    // A fresh domain per check: no verification cache carried between them.
    const verify = async (secret: string) =>
      (await createTokenDomain(loadConfig(env), store).service.verify(secret)).ok;

    const sent = Date.now();
    const graced = await cli(['tokens', 'rotate', created.id, '--grace', '1h', '--json'], { env });
    const answered = Date.now();
    assert.equal(graced.code, 0, graced.stderr);
    const second = JSON.parse(graced.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(second).sort(), [
      'allowed_cidrs',
      'created_at',
      'enabled',
      'expires_at',
      'id',
      'name',
      'not_before',
      'previous_secret_expires_at',
      'scopes',
      'token',
    ]);
    const graceEnds = Date.parse(String(second.previous_secret_expires_at));
    assert.ok(graceEnds >= sent + 3_600_000 && graceEnds <= answered + 3_600_000, 'an hour after the rotation');
    assert.deepEqual([second.id, second.name, second.scopes], [created.id, 'ci', ['apps:read']]);
    assert.deepEqual(checkSecret(String(second.token), 'icat'), { ok: true });
    assert.deepEqual([await verify(created.token), await verify(String(second.token))], [true, true], 'in its grace');

    const human = await cli(['tokens', 'rotate', created.id], { env });
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`^rotated ${created.id} "ci"\n`));
    assert.match(human.stdout, /the previous secret is refused from now on/);
    const third = /^token: (icat_\w+)$/m.exec(human.stdout)?.[1];
    assert.ok(third !== undefined, human.stdout);
    assert.match(human.stdout, /shown this once/);
    assert.deepEqual(
      [await verify(created.token), await verify(String(second.token)), await verify(third)],
      [false, false, true],
      'no grace: both earlier secrets are refused',
    );

    const before = Date.now();
    const timed = await cli(['tokens', 'rotate', created.id, '--grace', '90m'], { env });
    const until = /keeps working until (\S+)/.exec(timed.stdout)?.[1];
    assert.ok(until !== undefined, timed.stdout);
    const ms = Date.parse(until) - before;
    assert.ok(ms >= 90 * 60_000 && ms < 91 * 60_000, until);
    assert.equal(await verify(third), true, 'the previous secret, for 90 minutes');

    const listed = await cli(['tokens', 'list', '--json'], { env });
    assert.ok(!listed.stdout.includes(third), 'the secret is shown once');

    const events = await store.audit.list({ targetId: created.id, action: 'api_token.rotated', limit: 10 });
    assert.equal(events.length, 3);
    assert.deepEqual(
      events.map((e) => [e.actorType, e.actorId, e.details.grace_period_s]),
      [
        ['cli', null, 5400],
        ['cli', null, 0],
        ['cli', null, 3600],
      ],
    );
    assertNoSecret(JSON.stringify(events), [created.token, String(second.token), third]);
  });

  it('rotate: --expires-at, --account, and the refusals (usage: exit 2; the rest: exit 1)', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const account = JSON.parse((await cli(['accounts', 'create', '--name', 'Acme', '--json'], { env })).stdout) as {
      id: string;
    };
    const token = JSON.parse(
      (
        await cli(
          ['tokens', 'create', '--account', account.id, '--name', 'theirs', '--scopes', 'apps:read', '--json'],
          {
            env,
          },
        )
      ).stdout,
    ) as { id: string };
    const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const rotated = await cli(
      ['tokens', 'rotate', token.id, '--account', account.id, '--expires-at', expiresAt, '--json'],
      { env },
    );
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal((JSON.parse(rotated.stdout) as { expires_at: string }).expires_at, expiresAt);

    const refusals: [string[], number, RegExp][] = [
      [['tokens', 'rotate'], 2, /exactly one token id/],
      [['tokens', 'rotate', token.id, '--grace', '2d'], 2, /--grace: 2d is too long: at most 1d/],
      [['tokens', 'rotate', token.id, '--grace', '1.5h'], 2, /--grace: "1.5h" is not a duration/],
      [['tokens', 'rotate', token.id], 1, /no token with id tok_\w+ in account acc_0+/],
      [['tokens', 'rotate', token.id, '--account', 'acc_nope'], 1, /no account with id acc_nope/],
      [
        ['tokens', 'rotate', token.id, '--account', account.id, '--expires-at', '2020-01-01T00:00:00Z'],
        1,
        /expires_at: must be in the future/,
      ],
    ];
    for (const [args, code, message] of refusals) {
      const res = await cli(args, { env });
      assert.equal(res.code, code, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, message, args.join(' '));
      assert.equal(res.stdout, '', 'no secret printed');
    }
    const help = await cli(['tokens', '--help']);
    assert.match(help.stdout, /infracat tokens rotate ID \[--grace DURATION\]/);
    assert.match(help.stdout, /infracat tokens update ID \[--name NAME\] \[--scopes SCOPE/);
  });

  it('conditions: create and update flags, shown by list; cleared with anywhere and none', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const args = ['--allowed-cidrs', '10.0.0.0/8, 2001:DB8::/32', '--not-before', '2020-01-01T00:00:00Z', '--disabled'];
    const created = await cli(['tokens', 'create', '--name', 'ci', '--scopes', 'apps:read', ...args, '--json'], {
      env,
    });
    assert.equal(created.code, 0, created.stderr);
    const view = JSON.parse(created.stdout) as Record<string, unknown>;
    assert.deepEqual(
      [view.allowed_cidrs, view.not_before, view.enabled],
      [['10.0.0.0/8', '2001:db8::/32'], '2020-01-01T00:00:00.000Z', false],
    );
    const listed = await cli(['tokens', 'list'], { env });
    assert.match(listed.stdout, /CONDITIONS/);
    assert.match(listed.stdout, /disabled; from 10\.0\.0\.0\/8,2001:db8::\/32; not before 2020-01-01T00:00:00\.000Z/);
    const id = String(view.id);
    const narrowed = await cli(['tokens', 'update', id, '--allowed-cidrs', '10.1.0.0/16', '--enable', '--json'], {
      env,
    });
    assert.equal(narrowed.code, 0, narrowed.stderr);
    const after = JSON.parse(narrowed.stdout) as Record<string, unknown>;
    assert.deepEqual([after.allowed_cidrs, after.enabled], [['10.1.0.0/16'], true]);
    const cleared = await cli(
      ['tokens', 'update', id, '--allowed-cidrs', 'anywhere', '--not-before', 'none', '--disable'],
      {
        env,
      },
    );
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.equal(cleared.stdout.trim(), `updated ${id} "ci" with apps:read; conditions: disabled`);
  });

  it('update renames and replaces scopes (--json as PATCH); the refusals', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const token = JSON.parse(
      (await cli(['tokens', 'create', '--name', 'old', '--scopes', 'apps:read', '--json'], { env })).stdout,
    ) as { id: string; token: string };
    const updated = await cli(
      ['tokens', 'update', token.id, '--name', 'new', '--scopes', 'apps:read, images:read', '--json'],
      { env },
    );
    assert.equal(updated.code, 0, updated.stderr);
    const view = JSON.parse(updated.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(view).sort(), [
      'allowed_cidrs',
      'created_at',
      'enabled',
      'expires_at',
      'id',
      'last_used_at',
      'last_used_ip',
      'name',
      'not_before',
      'scopes',
    ]);
    assert.deepEqual([view.name, view.scopes], ['new', ['apps:read', 'images:read']]);
    const human = await cli(['tokens', 'update', token.id, '--scopes', 'regions:read'], { env });
    assert.equal(human.stdout.trim(), `updated ${token.id} "new" with regions:read; conditions: -`);

    const account = JSON.parse((await cli(['accounts', 'create', '--name', 'Acme', '--json'], { env })).stdout) as {
      id: string;
    };
    const theirs = JSON.parse(
      (
        await cli(['tokens', 'create', '--account', account.id, '--name', 't', '--scopes', 'apps:read', '--json'], {
          env,
        })
      ).stdout,
    ) as { id: string };
    const refusals: [string[], number, RegExp][] = [
      [['tokens', 'update', token.id], 2, /--name, --scopes, --allowed-cidrs/],
      [['tokens', 'update', token.id, '--enable', '--disable'], 2, /not both/],
      [['tokens', 'update', token.id, '--allowed-cidrs', '10.0.0.1/8'], 1, /allowed_cidrs\/0: has host bits set/],
      [['tokens', 'update'], 2, /exactly one token id/],
      [
        ['tokens', 'update', token.id, '--scopes', 'apps:read,nope'],
        1,
        /scopes\/1: [\s\S]*valid scopes: api-tokens:read/,
      ],
      [['tokens', 'update', token.id, '--name', ' '], 1, /name: must not be empty/],
      [['tokens', 'update', theirs.id, '--name', 'x'], 1, /no token with id/],
      [['tokens', 'update', theirs.id, '--account', account.id, '--scopes', 'accounts:read'], 1, /operator account/],
    ];
    for (const [args, code, message] of refusals) {
      const res = await cli(args, { env });
      assert.equal(res.code, code, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, message, args.join(' '));
    }
    const ok = await cli(['tokens', 'update', theirs.id, '--account', account.id, '--name', 'renamed'], { env });
    assert.equal(ok.code, 0, ok.stderr);
  });

  it('list --sort last-used: the most recently used first, never-used last, as the API orders them', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const ids: string[] = [];
    for (const name of ['never', 'earlier', 'latest', 'also-never']) {
      const made = await cli(['tokens', 'create', '--name', name, '--scopes', 'apps:read', '--json'], { env });
      ids.push((JSON.parse(made.stdout) as { id: string }).id);
    }
    const [never, earlier, latest, alsoNever] = ids as [string, string, string, string];
    const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 2000 });
    try {
      await store.tokens.touch([
        { id: earlier, at: Date.UTC(2026, 10, 1, 8), ip: '203.0.113.7' },
        { id: latest, at: Date.UTC(2026, 10, 2, 8), ip: '203.0.113.8' },
      ]);
    } finally {
      await store.close();
    }
    const json = await cli(['tokens', 'list', '--sort', 'last-used', '--json'], { env });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(
      (JSON.parse(json.stdout) as { id: string }[]).map((x) => x.id),
      [latest, earlier, never, alsoNever],
    );
    const table = await cli(['tokens', 'list', '--sort', 'last-used'], { env });
    assert.deepEqual(
      table.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(/\s+/)[0]),
      ['ID', latest, earlier, never, alsoNever],
    );
    const created = await cli(['tokens', 'list', '--sort', 'created', '--json'], { env });
    assert.deepEqual(
      (JSON.parse(created.stdout) as { id: string }[]).map((x) => x.id),
      ids,
      'created: the default order',
    );
    const bad = await cli(['tokens', 'list', '--sort', 'last_used_at'], { env });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--sort must be one of created, last-used/);
  });

  it('usage: the hourly buckets oldest first, as a table or the JSON of GET .../usage; the refusals', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}` };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    const token = JSON.parse(
      (await cli(['tokens', 'create', '--name', 'busy', '--scopes', 'apps:read', '--json'], { env })).stdout,
    ) as { id: string };
    const HOUR = 3_600_000;
    const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
    // Counts in USAGE_OUTCOMES order: verified, expired, not_yet_valid, disabled, address,
    // scope, rate_limited, suspended. Two hours of the last week and one ten days ago.
    const store = new SqliteStore({ path: tmp.file(), busyTimeoutMs: 2000 });
    try {
      await store.tokens.addUsage([
        { tokenId: token.id, hour: thisHour - 2 * HOUR, counts: [12, 0, 0, 0, 1, 2, 0, 0] },
        { tokenId: token.id, hour: thisHour - 10 * 24 * HOUR, counts: [5, 0, 0, 0, 0, 0, 0, 0] },
        { tokenId: token.id, hour: thisHour - 30 * HOUR, counts: [0, 0, 0, 4, 0, 0, 0, 0] },
      ]);
    } finally {
      await store.close();
    }
    const iso = (at: number) => new Date(at).toISOString();

    const shown = await cli(['tokens', 'usage', token.id], { env });
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(
      shown.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(/\s{2,}/)),
      [
        ['HOUR', 'VALID', 'REFUSED', 'REFUSED BY REASON'],
        [iso(thisHour - 30 * HOUR), '0', '4', 'disabled 4'],
        [iso(thisHour - 2 * HOUR), '10', '3', 'address 1, scope 2'],
      ],
      'the last week by default; a refusal for a scope is taken out of the valid uses',
    );

    const since = iso(thisHour - 11 * 24 * HOUR);
    const json = await cli(['tokens', 'usage', token.id, '--since', since, '--json'], { env });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), [
      { hour: iso(thisHour - 10 * 24 * HOUR), valid: 5, refused: 0, refused_by_reason: {} },
      { hour: iso(thisHour - 30 * HOUR), valid: 0, refused: 4, refused_by_reason: { disabled: 4 } },
      { hour: iso(thisHour - 2 * HOUR), valid: 10, refused: 3, refused_by_reason: { address: 1, scope: 2 } },
    ]);
    const until = await cli(['tokens', 'usage', token.id, '--since', since, '--until', iso(thisHour - 2 * HOUR)], {
      env,
    });
    assert.equal(until.stdout.trim().split('\n').length, 3, '--until is exclusive: two hours and the header');
    const quiet = await cli(['tokens', 'usage', token.id, '--until', iso(thisHour - 20 * 24 * HOUR)], { env });
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(
      quiet.stdout,
      `no uses of ${token.id} from ${iso(thisHour - 27 * 24 * HOUR)} to ${iso(thisHour - 20 * 24 * HOUR)}`,
    );
    // The JSON as the API writes it, indented by two.
    const week = await cli(['tokens', 'usage', token.id, '--until', iso(thisHour), '--json'], { env });
    assert.equal(week.stdout, JSON.stringify((JSON.parse(json.stdout) as unknown[]).slice(1), null, 2));

    const account = JSON.parse((await cli(['accounts', 'create', '--name', 'Acme', '--json'], { env })).stdout) as {
      id: string;
    };
    const refusals: [string[], number, RegExp][] = [
      [['tokens', 'usage'], 2, /exactly one token id/],
      [['tokens', 'usage', token.id, '--since', 'yesterday'], 2, /--since must be an RFC 3339 timestamp/],
      [
        ['tokens', 'usage', token.id, '--since', iso(thisHour), '--until', iso(thisHour - HOUR)],
        2,
        /--until must be after --since/,
      ],
      [['tokens', 'usage', token.id, '--since', iso(thisHour - 91 * 24 * HOUR)], 2, /at most 90 days apart/],
      [['tokens', 'usage', 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H'], 1, /no token with id/],
      [['tokens', 'usage', token.id, '--account', account.id], 1, /no token with id .* in account acc_/],
      [['tokens', 'usage', token.id, '--account', 'acc_nobody'], 1, /no account with id acc_nobody/],
    ];
    for (const [args, code, message] of refusals) {
      const res = await cli(args, { env });
      assert.equal(res.code, code, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, message, args.join(' '));
      assert.equal(res.stdout, '', args.join(' '));
    }
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
      assert.equal(me.scopes.length, 14);
      assert.ok(me.scopes.includes('audit-events:read'), 'the audit trail is within the admin token too');
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
