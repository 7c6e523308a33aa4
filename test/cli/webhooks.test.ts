// The operator path: `infracat webhooks ...` on the store, and a running server delivering
// what the command queued.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { postgresBackend } from '../helpers/backends.js';
import { cli, serve } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite.js';
import { until } from '../helpers/until.js';
import { receiver, RECEIVER_ENV, verified } from '../helpers/webhooks.js';

describe('infracat webhooks', () => {
  it(
    'create --json shows the secret once; list, update, rotate-secret, test, deliveries, delete; a server ' +
      "delivers the test, signed with both secrets sealed under infracat's own key",
    async (t) => {
      const tmp = tempDir();
      t.after(() => tmp.remove());
      // No WEBHOOK_ENCRYPTION_KEYS: the command makes the key beside the database, the server opens with it.
      const env = {
        ...RECEIVER_ENV,
        WEBHOOK_ENCRYPTION_KEYS: '',
        DATABASE_URL: `sqlite:${tmp.file()}`,
        BOOTSTRAP_ADMIN_TOKEN: 'false',
      };
      assert.equal((await cli(['migrate'], { env })).code, 0);
      const r = await receiver(t);
      const created = await cli(
        ['webhooks', 'create', '--url', r.url, '--events', 'api_token.created, api_token.expiring', '--json'],
        { env },
      );
      assert.equal(created.code, 0, created.stderr);
      const body = JSON.parse(created.stdout) as { id: string; secret: string; events: string[] };
      assert.match(body.secret, /^whsec_/);
      assert.deepEqual(body.events, ['api_token.created', 'api_token.expiring']);

      const listed = await cli(['webhooks', 'list', '--json'], { env });
      assert.deepEqual(
        (JSON.parse(listed.stdout) as { id: string }[]).map((w) => w.id),
        [body.id],
      );
      assert.ok(!listed.stdout.includes(body.secret), 'never the secret again');
      const human = await cli(['webhooks', 'list'], { env });
      assert.match(human.stdout, /ID\s+URL\s+EVENTS\s+ENABLED/);
      assert.match(human.stdout, new RegExp(body.id));

      // Disabled: no test event can be queued; enabled again with other fields changed.
      const disabled = await cli(['webhooks', 'update', body.id, '--disable'], { env });
      assert.equal(disabled.code, 0, disabled.stderr);
      assert.match(disabled.stdout, /; disabled$/);
      assert.match((await cli(['webhooks', 'list'], { env })).stdout, new RegExp(`${body.id}\\s.*\\sno\\s`));
      const refused = await cli(['webhooks', 'test', body.id], { env });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /is disabled/);
      const enabled = await cli(
        ['webhooks', 'update', body.id, '--enable', '--events', 'account.updated', '--description', 'ops', '--json'],
        { env },
      );
      assert.equal(enabled.code, 0, enabled.stderr);
      const updated = JSON.parse(enabled.stdout) as { enabled: boolean; events: string[]; description: string };
      assert.deepEqual([updated.enabled, updated.events, updated.description], [true, ['account.updated'], 'ops']);
      assert.ok(!enabled.stdout.includes('whsec_'), 'no secret');

      // The description removed; every account's events, then its own account's again.
      const widened = await cli(['webhooks', 'update', body.id, '--no-description', '--all-accounts', '--json'], {
        env,
      });
      assert.equal(widened.code, 0, widened.stderr);
      const wide = JSON.parse(widened.stdout) as {
        description: string | null;
        all_accounts: boolean;
        events: string[];
      };
      assert.deepEqual([wide.description, wide.all_accounts, wide.events], [null, true, ['account.updated']]);
      const narrowed = await cli(['webhooks', 'update', body.id, '--own-account', '--json'], { env });
      assert.equal(narrowed.code, 0, narrowed.stderr);
      assert.equal((JSON.parse(narrowed.stdout) as { all_accounts: boolean }).all_accounts, false);

      // A new secret, printed once; the previous one also signs for 24 hours.
      const rotated = await cli(['webhooks', 'rotate-secret', body.id], { env });
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.match(rotated.stdout, /the previous one also signs until \d{4}-\d{2}-\d{2}T/);
      const fresh = /^secret: (whsec_\S+)$/m.exec(rotated.stdout)?.[1];
      assert.ok(fresh !== undefined && fresh !== body.secret, rotated.stdout);
      const relisted = await cli(['webhooks', 'list', '--json'], { env });
      assert.ok(!relisted.stdout.includes(fresh), 'never the new secret again');

      const queued = await cli(['webhooks', 'test', body.id], { env });
      assert.equal(queued.code, 0, queued.stderr);
      assert.match(queued.stdout, /queued webhook\.test evt_/);
      assert.equal((await cli(['webhooks', 'deliveries', body.id], { env })).stdout, 'no deliveries');

      const { child } = await serve(env);
      t.after(async () => {
        child.proc.kill('SIGTERM');
        await child.exited;
      });
      await until(() => r.received.length === 1, 'the test event delivered by the server');
      assert.equal(verified(fresh, r.received[0]!).type, 'webhook.test');
      assert.equal(verified(body.secret, r.received[0]!).type, 'webhook.test');
      assert.equal(String(r.received[0]!.headers['webhook-signature']).split(' ').length, 2);
      // The attempt is recorded once its answer came: read the log until it is there.
      let log = '';
      for (let i = 0; i < 100 && !/delivered/.test(log); i++) {
        log = (await cli(['webhooks', 'deliveries', body.id], { env })).stdout;
      }
      assert.match(log, /ATTEMPTED\s+EVENT\s+TYPE\s+ATTEMPT\s+STATUS\s+MS\s+RESULT/);
      assert.match(log, /webhook\.test\s+1\s+204\s+\d+\s+delivered/);
      const json = JSON.parse((await cli(['webhooks', 'deliveries', body.id, '--json'], { env })).stdout) as {
        delivered: boolean;
      }[];
      assert.equal(json[0]!.delivered, true);

      assert.equal((await cli(['webhooks', 'delete', body.id], { env })).code, 0);
      const again = await cli(['webhooks', 'delete', body.id], { env });
      assert.equal(again.code, 1);
      assert.match(again.stderr, /no webhook with id/);
    },
  );

  it('bad input: usage errors exit 2; refused URLs, unknown accounts and missing keys exit 1 saying why', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const env = { DATABASE_URL: `sqlite:${tmp.file()}`, WEBHOOK_ENCRYPTION_KEYS: RECEIVER_ENV.WEBHOOK_ENCRYPTION_KEYS };
    assert.equal((await cli(['migrate'], { env })).code, 0);
    assert.equal((await cli(['webhooks', 'create', '--url', 'https://x.example'], { env })).code, 2);
    const unknown = await cli(['webhooks', 'create', '--url', 'https://x.example', '--events', 'nope'], { env });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown event type nope/);
    assert.equal((await cli(['webhooks', 'deliveries', 'whk_x', '--limit', '1e3'], { env })).code, 2);
    assert.equal((await cli(['webhooks', 'frobnicate'], { env })).code, 2);
    assert.equal((await cli(['webhooks', 'update', 'whk_x'], { env })).code, 2, 'nothing to change');
    const both = await cli(['webhooks', 'update', 'whk_x', '--enable', '--disable'], { env });
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--enable or --disable, not both/);
    assert.equal((await cli(['webhooks', 'update', 'whk_x', '--events', ' , '], { env })).code, 2);
    const opposite = await cli(['webhooks', 'update', 'whk_x', '--all-accounts', '--own-account'], { env });
    assert.equal(opposite.code, 2);
    assert.match(opposite.stderr, /--all-accounts or --own-account, not both/);
    const described = await cli(['webhooks', 'update', 'whk_x', '--description', 'x', '--no-description'], { env });
    assert.equal(described.code, 2);
    assert.match(described.stderr, /--description or --no-description, not both/);
    assert.equal((await cli(['webhooks', 'rotate-secret'], { env })).code, 2);
    for (const sub of [
      ['update', 'whk_x', '--enable'],
      ['rotate-secret', 'whk_x'],
    ]) {
      const missing = await cli(['webhooks', ...sub], { env });
      assert.equal(missing.code, 1, sub.join(' '));
      assert.match(missing.stderr, /no webhook with id whk_x/);
    }
    const made = await cli(
      ['webhooks', 'create', '--url', 'https://93.184.215.14/x', '--events', 'account.updated', '--json'],
      { env },
    );
    assert.equal(made.code, 0, made.stderr);
    const { id } = JSON.parse(made.stdout) as { id: string };
    const moved = await cli(['webhooks', 'update', id, '--url', 'https://127.0.0.1/x'], { env });
    assert.equal(moved.code, 1);
    assert.match(moved.stderr, /127\.0\.0\.1 is not a public address \(loopback\)/);
    const loopback = await cli(['webhooks', 'create', '--url', 'https://127.0.0.1/x', '--events', 'account.updated'], {
      env,
    });
    assert.equal(loopback.code, 1);
    assert.match(loopback.stderr, /127\.0\.0\.1 is not a public address \(loopback\)/);
    // A customer account's webhook hears its own account only.
    const acme = JSON.parse((await cli(['accounts', 'create', '--name', 'Acme', '--json'], { env })).stdout) as {
      id: string;
    };
    const theirs = await cli(
      ['webhooks', 'create', '--url', 'https://93.184.215.14/x', '--events', 'account.updated', '--account', acme.id],
      { env },
    );
    assert.equal(theirs.code, 0, theirs.stderr);
    const theirId = /^created (whk_\S+)/m.exec(theirs.stdout)?.[1];
    assert.ok(theirId !== undefined, theirs.stdout);
    const widen = await cli(['webhooks', 'update', theirId, '--all-accounts', '--account', acme.id], { env });
    assert.equal(widen.code, 1);
    assert.match(widen.stderr, /all_accounts/);
    const nowhere = ['--account', 'acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H'];
    for (const sub of [['list'], ['create', '--url', 'https://hooks.example.com/x', '--events', 'api_token.created']]) {
      const other = await cli(['webhooks', ...sub, ...nowhere], { env });
      assert.equal(other.code, 1, sub.join(' '));
      assert.match(other.stderr, /no account with id acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H/, sub.join(' '));
    }
    // On PostgreSQL there is no key of infracat's own: without the setting, no secret.
    const pg = postgresBackend(t);
    if (pg === undefined) return;
    const db = await pg.fresh(t);
    const keyless = await cli(
      ['webhooks', 'create', '--url', 'https://93.184.215.14/x', '--events', 'account.updated'],
      { env: { DATABASE_URL: db.url, WEBHOOK_ENCRYPTION_KEYS: '' } },
    );
    assert.equal(keyless.code, 1);
    assert.match(keyless.stderr, /WEBHOOK_ENCRYPTION_KEYS/);
    const unrotated = await cli(['webhooks', 'rotate-secret', 'whk_x'], {
      env: { DATABASE_URL: db.url, WEBHOOK_ENCRYPTION_KEYS: '' },
    });
    assert.equal(unrotated.code, 1);
    assert.match(unrotated.stderr, /WEBHOOK_ENCRYPTION_KEYS/);
  });
});
