// `infracat tokens check`: offline well-formedness with a reason for each fault, and
// which token has a secret, on both backends; the string is never printed.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { generateSecret } from '../../src/tokens/format.js';
import { createTokenDomain } from '../../src/tokens/index.js';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { backends } from '../helpers/backends.js';
import { runCli } from '../helpers/process.js';
import { secretPieceIn } from '../helpers/secrets.js';
import { tempDir } from '../helpers/sqlite.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `infracat tokens check ...`, with `stdin` written to it (and closed). */
async function check(args: string[], env: Record<string, string | undefined>, stdin = ''): Promise<Run> {
  const child = runCli(['tokens', 'check', ...args], { env });
  child.proc.stdin.end(stdin);
  const { code } = await child.exited;
  return { code, stdout: child.stdout.join('\n'), stderr: child.stderr.join('\n') };
}

/** Neither output holds the secret or any 12-character piece of it, in any encoding. */
function quiet(run: Run, secret: string): void {
  assert.equal(secretPieceIn(run.stdout, secret), undefined, 'stdout');
  assert.equal(secretPieceIn(run.stderr, secret), undefined, 'stderr');
}

async function databaseWith(t: TestContext, backend: ReturnType<typeof backends>[number]) {
  const db = await backend.fresh(t);
  const store = db.open();
  t.after(() => store.close());
  const config = loadConfig({ DATABASE_URL: db.url });
  return { db, store, domain: (now?: () => number) => createTokenDomain(config, store, undefined, now) };
}

describe('infracat tokens check', () => {
  it('offline: a well-formed secret, from stdin or as an argument, exit 0, never printed', async () => {
    const secret = generateSecret('icat');
    const env = { DATABASE_URL: 'sqlite:/nonexistent/never-opened.sqlite' };
    const piped = await check(['-', '--offline'], env, `${secret}\n`);
    assert.equal(piped.code, 0, piped.stderr);
    assert.match(piped.stdout, /^well-formed infracat secret \(prefix icat_, checksum valid\); not looked up$/);
    quiet(piped, secret);
    const json = await check([secret, '--offline', '--json'], env);
    assert.equal(json.code, 0, json.stderr);
    const body = JSON.parse(json.stdout) as Record<string, unknown>;
    assert.equal(body.well_formed, true);
    assert.equal(body.looked_up, false);
    assert.match(String(body.token_hash), /^[0-9a-f]{64}$/);
    quiet(json, secret);
  });

  it('a malformed string: exit 1 with the reason, database untouched, the string never printed', async () => {
    const secret = generateSecret('icat');
    const body = secret.slice('icat_'.length);
    const last = body.at(-1) === 'A' ? 'B' : 'A';
    // No database there: a malformed string is refused before any is opened.
    const env = { DATABASE_URL: 'sqlite:/nonexistent/never-opened.sqlite' };
    const cases: [string, RegExp][] = [
      [`${secret.slice(0, -1)}${last}`, /its last 6 characters are not the checksum of the rest/],
      [`icat_${body.slice(2)}`, /it is 39 characters long; a secret is 41/],
      [`ghp_${body}`, /it does not start with icat_/],
      [`icat_${body.slice(0, 5)}%${body.slice(6)}`, /character 11 is not a letter/],
    ];
    for (const [text, reason] of cases) {
      const run = await check(['-'], env, text);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /^infracat tokens: not a well-formed infracat secret: /);
      assert.match(run.stderr, reason);
      assert.doesNotMatch(run.stderr, /database/, 'no database was opened');
      quiet(run, text);
    }
    const json = await check(['--json', '-'], env, cases[0]![0]);
    assert.equal(json.code, 1);
    const out = JSON.parse(json.stdout) as Record<string, unknown>;
    assert.equal(out.well_formed, false);
    assert.match(String(out.reason), /checksum/);
    quiet(json, cases[0]![0]);
    // TOKEN_PREFIX decides what is well-formed.
    const other = await check(['-', '--offline'], { ...env, TOKEN_PREFIX: 'acme' }, secret);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /does not start with acme_ \(TOKEN_PREFIX is acme\)/);
    quiet(other, secret);
  });

  it('usage: one secret or -; stdin of one line; the arguments never quoted back', async () => {
    const secret = generateSecret('icat');
    const env = { DATABASE_URL: 'sqlite:/nonexistent/never-opened.sqlite' };
    const none = await check([], env);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /check needs exactly one secret, or - to read it from stdin/);
    const two = await check([secret, secret], env);
    assert.equal(two.code, 2);
    quiet(two, secret);
    const lines = await check(['-'], env, `${secret}\n${secret}\n`);
    assert.equal(lines.code, 2);
    assert.match(lines.stderr, /stdin holds more than one line/);
    quiet(lines, secret);
    const help = runCli(['tokens', 'check', '--help']);
    await help.exited;
    assert.match(help.stdout.join('\n'), /infracat tokens check - \[--offline\] \[--json\]/);
    assert.match(help.stdout.join('\n'), /Prefer - : it reads the secret\s+from stdin/);
  });

  for (const backend of backends()) {
    it(`${backend.name}: names the token (id, name, account, which secret, expiry) or says none has it`, async (t) => {
      const { db, domain } = await databaseWith(t, backend);
      const env = { DATABASE_URL: db.url };
      const live = await domain().service.create(
        { name: 'ci deploy', scopes: ['apps:read'] },
        null,
        OPERATOR_ACCOUNT_ID,
        TEST_CONTEXT,
      );

      const found = await check(['-'], env, live.secret);
      assert.equal(found.code, 0, found.stderr);
      assert.equal(
        found.stdout,
        [
          'well-formed infracat secret (prefix icat_, checksum valid)',
          `token ${live.token.id} "ci deploy" in account ${OPERATOR_ACCOUNT_ID}`,
          '  this is its current secret',
          '  never expires',
          '  accepted now: revoke it if it leaked (infracat tokens delete ID)',
        ].join('\n'),
      );
      quiet(found, live.secret);

      const json = await check(['--json', '-'], env, live.secret);
      assert.equal(json.code, 0, json.stderr);
      assert.deepEqual((JSON.parse(json.stdout) as { token: unknown }).token, {
        id: live.token.id,
        name: 'ci deploy',
        account_id: OPERATOR_ACCOUNT_ID,
        account_status: 'active',
        secret: 'current',
        grace_ends_at: null,
        expires_at: null,
        expired: false,
        accepted: true,
        refused_because: null,
        allowed_cidrs: null,
      });
      quiet(json, live.secret);

      // Created two days ago to expire a day ago: still stored (within the retention), refused.
      const past = Date.now() - 2 * 86_400_000;
      const old = await domain(() => past).service.create(
        { name: 'old', scopes: ['apps:read'], expires_at: new Date(past + 86_400_000).toISOString() },
        null,
        OPERATOR_ACCOUNT_ID,
        TEST_CONTEXT,
      );
      const expired = JSON.parse((await check(['--json', '-'], env, old.secret)).stdout) as {
        token: Record<string, unknown>;
      };
      assert.equal(expired.token.expired, true);
      assert.equal(expired.token.accepted, false);
      assert.equal(expired.token.refused_because, 'expired');
      assert.equal(expired.token.expires_at, new Date(past + 86_400_000).toISOString());
      const expiredText = await check(['-'], env, old.secret);
      assert.match(expiredText.stdout, /expired \d{4}-.*Z\n {2}refused now \(expired\)$/);

      // Rotated with a grace period: the secret it replaced is the token's previous one.
      const rotated = await domain().service.rotate(
        OPERATOR_ACCOUNT_ID,
        live.token.id,
        { grace_period_s: 3600 },
        null,
        TEST_CONTEXT,
      );
      assert.ok(rotated);
      const previous = await check(['--json', '-'], env, live.secret);
      const graceToken = (JSON.parse(previous.stdout) as { token: Record<string, unknown> }).token;
      assert.equal(graceToken.id, live.token.id);
      assert.equal(graceToken.secret, 'previous');
      assert.equal(graceToken.accepted, true);
      const graceEnd = Date.parse(String(graceToken.grace_ends_at));
      assert.ok(
        graceEnd > Date.now() + 3500_000 && graceEnd <= Date.now() + 3600_000,
        String(graceToken.grace_ends_at),
      );
      quiet(previous, live.secret);
      assert.match(
        (await check(['-'], env, live.secret)).stdout,
        /its previous secret \(rotated out; grace period until \d{4}-.*Z\)\n {2}never expires\n {2}accepted now/,
      );
      const newer = JSON.parse((await check(['--json', '-'], env, rotated.secret)).stdout) as {
        token: Record<string, unknown>;
      };
      assert.equal(newer.token.secret, 'current');
      assert.equal(newer.token.grace_ends_at, null);
      // A grace period that is over: the secret is still the token's previous one, refused.
      const twoHoursAgo = Date.now() - 2 * 3600_000;
      const again = await domain(() => twoHoursAgo).service.rotate(
        OPERATOR_ACCOUNT_ID,
        live.token.id,
        { grace_period_s: 3600 },
        null,
        TEST_CONTEXT,
      );
      assert.ok(again);
      const ended = await check(['-'], env, rotated.secret);
      assert.match(ended.stdout, /grace period ended \d{4}-.*Z\)\n.*\n {2}refused now \(its grace period ended\)$/);
      quiet(ended, rotated.secret);

      const unknown = generateSecret('icat');
      const none = await check(['-'], env, unknown);
      assert.equal(none.code, 0, 'well-formed, whatever the database says');
      assert.match(none.stdout, /\nno token has this secret/);
      const noneJson = JSON.parse((await check(['--json', unknown], env)).stdout) as Record<string, unknown>;
      assert.equal(noneJson.token, null);
      assert.equal(noneJson.looked_up, true);
      quiet(none, unknown);
    });
  }

  for (const backend of backends()) {
    it(`${backend.name}: judged as the service judges: disabled, not valid yet, suspended, networks`, async (t) => {
      const { db, domain } = await databaseWith(t, backend);
      const env = { DATABASE_URL: db.url };
      const tokens = domain().service;
      const made = await tokens.create(
        { name: 'office only', scopes: ['apps:read'], allowed_cidrs: ['10.0.0.0/8'] },
        null,
        OPERATOR_ACCOUNT_ID,
        TEST_CONTEXT,
      );
      const judged = async () => {
        const run = await check(['--json', '-'], env, made.secret);
        assert.equal(run.code, 0, run.stderr);
        quiet(run, made.secret);
        return (JSON.parse(run.stdout) as { token: Record<string, unknown> }).token;
      };
      const limited = await judged();
      assert.equal(limited.accepted, true);
      assert.deepEqual(limited.allowed_cidrs, ['10.0.0.0/8']);
      assert.match(
        (await check(['-'], env, made.secret)).stdout,
        /\n {2}accepted now from 10\.0\.0\.0\/8 only: revoke/,
      );

      await tokens.update(OPERATOR_ACCOUNT_ID, made.token.id, { enabled: false }, null, TEST_CONTEXT);
      assert.deepEqual([(await judged()).accepted, (await judged()).refused_because], [false, 'disabled']);
      assert.match((await check(['-'], env, made.secret)).stdout, /\n {2}refused now \(disabled\)$/);

      const later = new Date(Date.now() + 3600_000).toISOString();
      await tokens.update(OPERATOR_ACCOUNT_ID, made.token.id, { enabled: true, not_before: later }, null, TEST_CONTEXT);
      assert.equal((await judged()).refused_because, 'not_yet_valid');

      await tokens.update(OPERATOR_ACCOUNT_ID, made.token.id, { not_before: null }, null, TEST_CONTEXT);
      const cliJson = async <T>(args: string[]): Promise<T> => {
        const child = runCli([...args, '--json'], { env });
        const { code } = await child.exited;
        assert.equal(code, 0, child.stderr.join('\n'));
        return JSON.parse(child.stdout.join('\n')) as T;
      };
      const account = await cliJson<{ id: string }>(['accounts', 'create', '--name', 'Acme']);
      const theirs = await cliJson<{ token: string }>([
        'tokens',
        'create',
        '--account',
        account.id,
        '--name',
        'theirs',
        '--scopes',
        'apps:read',
      ]);
      await cliJson(['accounts', 'suspend', account.id]);
      const suspended = await check(['--json', '-'], env, theirs.token);
      const body = (JSON.parse(suspended.stdout) as { token: Record<string, unknown> }).token;
      assert.deepEqual([body.account_status, body.accepted, body.refused_because], ['suspended', false, 'suspended']);
      assert.equal((await judged()).accepted, true, 'enabled again, no not_before: accepted');
    });
  }

  it('without a database at the configured location it fails as the other commands do (exit 66)', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const run = await check(['-'], { DATABASE_URL: `sqlite:${tmp.file()}` }, generateSecret('icat'));
    assert.equal(run.code, 66, run.stderr);
  });
});
