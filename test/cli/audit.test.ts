// `infracat audit list`, on both backends: what the operator's own commands recorded (by
// `cli`, the OS user), every account's trail, the filters, the table and --json (the wire
// shape of GET /api/v1/audit-events), and refusals of flags that cannot be read exactly.
import assert from 'node:assert/strict';
import path from 'node:path';
import { userInfo } from 'node:os';
import { describe, it } from 'node:test';
import type { AuditEvent } from '../../src/audit/schemas.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { backends } from '../helpers/backends.js';
import { cli } from '../helpers/process.js';

const DEFAULT_CATALOG = path.resolve(import.meta.dirname, '../../catalog/default.yaml');

for (const backend of backends()) {
  describe(`infracat audit list on ${backend.name}`, () => {
    it("lists what the operator's commands changed, by `cli` (the OS user); filters, --json, a table", async (t) => {
      const db = await backend.fresh(t);
      const env = { DATABASE_URL: db.url };
      const run = async (args: string[]) => {
        const res = await cli(args, { env });
        assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
        return res.stdout;
      };
      const json = async <T>(args: string[]) => JSON.parse(await run([...args, '--json'])) as T;
      const account = await json<{ id: string }>(['accounts', 'create', '--name', 'Acme']);
      const token = await json<{ id: string; scopes: string[]; token: string }>([
        'tokens',
        'create',
        '--account',
        account.id,
        '--name',
        'acme admin',
        '--all-scopes',
      ]);
      assert.ok(token.scopes.includes('audit-events:read'), "--all-scopes in a customer's account includes it");
      assert.ok(!token.scopes.some((s) => s.startsWith('accounts:')));
      await run(['tokens', 'delete', '--account', account.id, token.id]);
      await run(['accounts', 'suspend', account.id]);
      await run(['catalog', 'apply', DEFAULT_CATALOG]);

      const all = await json<AuditEvent[]>(['audit', 'list']);
      assert.deepEqual(
        all.map((e) => e.action),
        ['catalog.applied', 'account.suspended', 'api_token.deleted', 'api_token.created', 'account.created'],
        "newest first, every account's",
      );
      for (const e of all) {
        assert.deepEqual(e.actor, { type: 'cli', id: null, name: userInfo().username });
        assert.deepEqual([e.actor_credential, e.ip, e.user_agent, e.request_id], [null, null, null, null]);
        assert.deepEqual(Object.keys(e), [
          'id',
          'action',
          'occurred_at',
          'account_id',
          'actor',
          'actor_credential',
          'target',
          'ip',
          'user_agent',
          'request_id',
          'details',
        ]);
      }
      assert.ok(!JSON.stringify(all).includes(token.token), 'no secret');
      const [applied, suspended, deleted, created, opened] = all as [
        AuditEvent,
        AuditEvent,
        AuditEvent,
        AuditEvent,
        AuditEvent,
      ];
      assert.deepEqual(applied.target, { type: 'catalog', id: '1', name: null });
      assert.deepEqual(
        all.map((e) => e.account_id),
        [OPERATOR_ACCOUNT_ID, account.id, account.id, account.id, account.id],
        'the account whose trail each event is in',
      );
      assert.deepEqual(created.target, { type: 'api_token', id: token.id, name: 'acme admin' });

      const ids = async (...args: string[]) => (await json<AuditEvent[]>(['audit', 'list', ...args])).map((e) => e.id);
      assert.deepEqual(await ids('--action', 'api_token.deleted'), [deleted.id]);
      assert.deepEqual(await ids('--target-id', account.id), [suspended.id, opened.id]);
      assert.deepEqual(
        await ids('--account', account.id),
        [suspended.id, deleted.id, created.id, opened.id],
        "the account's trail",
      );
      assert.deepEqual(await ids('--account', OPERATOR_ACCOUNT_ID), [applied.id], "the catalog is the operator's");
      assert.deepEqual(await ids('--since', deleted.occurred_at), [applied.id, suspended.id, deleted.id], 'inclusive');
      assert.deepEqual(await ids('--until', deleted.occurred_at), [created.id, opened.id], 'until is exclusive');
      const limited = await cli(['audit', 'list', '--limit', '2', '--json'], { env });
      assert.deepEqual(
        (JSON.parse(limited.stdout) as AuditEvent[]).map((e) => e.id),
        [applied.id, suspended.id],
      );
      assert.match(limited.stderr, /older events not shown: raise --limit \(2\)/);

      const human = await cli(['audit', 'list'], { env });
      assert.doesNotMatch(human.stderr, /older events not shown/);
      const lines = human.stdout.trimEnd().split('\n');
      assert.match(lines[0]!, /^OCCURRED\s+ACTION\s+ACTOR\s+TARGET\s+ACCOUNT\s+IP$/);
      assert.equal(lines.length, 6);
      assert.ok(lines[2]!.includes('account.suspended') && lines[2]!.includes(`cli ${userInfo().username}`));
      assert.ok(lines[4]!.includes(`api_token ${token.id} "acme admin"`) && lines[4]!.includes(account.id));
      assert.equal((await run(['audit', 'list', '--action', 'api_token.rotated'])).trim(), 'no audit events');
    });
  });
}

describe('infracat audit list: flags', () => {
  it('a flag that cannot be read exactly is a usage error (exit 2) naming it; nothing is read', async () => {
    const cases: [string[], RegExp][] = [
      [[], /missing sub-command: list/],
      [['show'], /unknown sub-command 'show'/],
      [['list', '--since', 'yesterday'], /--since/],
      [['list', '--until', '2026-02-30T00:00:00Z'], /--until must be a real date and time/],
      [['list', '--since', '2026-02-01T00:00:00Z', '--until', '2026-01-01T00:00:00Z'], /--until must be after --since/],
      [['list', '--action', 'api_token.exploded'], /--action must be one of api_token\.created, /],
      [['list', '--limit', '0'], /--limit must be a whole number from 1 to 10000/],
      [['list', '--limit', '1e3'], /--limit/],
      [['list', '--limit', '10001'], /--limit/],
      [['list', '--account', 'acc x'], /--account must be an id/],
      [['list', '--target-id', ''], /--target-id must be an id/],
      [['list', '--verbose'], /Unknown option '--verbose'/],
    ];
    for (const [args, message] of cases) {
      const res = await cli(['audit', ...args], { env: { DATABASE_URL: 'sqlite:/nonexistent/never-opened.sqlite' } });
      assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, message, args.join(' '));
      assert.match(res.stderr, /infracat audit --help/);
    }
  });
});
