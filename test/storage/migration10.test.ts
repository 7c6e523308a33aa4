// Migration 10 on a database of the schema before it, on both backends: the events
// already stored learn the account their actor acted for (a token's account while the
// token exists, else the account its creation event is in; the CLI is the operator; what
// cannot be known stays null), so a customer reading its trail over the API sees the
// operator's older changes as the operator's, and its own tokens' as its own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditEvent } from '../../src/audit/schemas.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { generateSecret, hashSecret } from '../../src/tokens/format.js';
import { newId } from '../../src/tokens/ids.js';
import { build } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { rawSql } from '../helpers/raw-sql.js';

const CUSTOMER = 'acc_01JCUSTOMER000000000000000';
const T0 = 1_800_000_000_000;
const EVENT_COLUMNS =
  'id, account_id, action, occurred_at, actor_type, actor_id, actor_name, target_type, target_id, target_name,' +
  ' ip, user_agent, request_id, details';

for (const backend of backends()) {
  describe(`migration 10 on ${backend.name}`, () => {
    it("earlier events learn their actor's account; customers see the operator's as the operator's", async (t) => {
      const db = await backend.create();
      t.after(() => db.drop());
      const old = db.open();
      const secret = generateSecret('icat');
      const tokens = { operator: 'tok_01JOPERATOR0000000000000000', own: 'tok_01JOWN000000000000000000000' };
      const gone = 'tok_01JGONE00000000000000000000';
      const events: [actorType: string, actorId: string | null, action: string, target: string][] = [
        ['api_token', tokens.operator, 'account.created', CUSTOMER],
        ['api_token', tokens.operator, 'api_token.created', tokens.own],
        ['api_token', tokens.own, 'api_token.created', gone],
        ['api_token', gone, 'api_token.created', 'tok_01JOTHER0000000000000000000'],
        ['api_token', 'tok_01JUNKNOWN000000000000000000', 'api_token.deleted', 'tok_01JOTHER0000000000000000000'],
        ['cli', null, 'account.suspended', CUSTOMER],
        ['system', null, 'api_token.expired_purged', tokens.own],
      ];
      const ids = events.map((_, i) => newId('evt', T0 + i));
      try {
        // The schema just before 10 (whatever came between 7 and 10 included).
        await old.migrate({ upTo: 9 });
        await rawSql(
          backend,
          db,
          'INSERT INTO accounts (id, name, external_id, status, created_at) VALUES (?, ?, ?, ?, ?)',
          [CUSTOMER, 'Acme', null, 'active', T0],
        );
        for (const [name, account] of [
          ['operator', OPERATOR_ACCOUNT_ID],
          ['own', CUSTOMER],
        ] as const)
          await rawSql(
            backend,
            db,
            'INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, account_id) VALUES (?, ?, ?, ?, ?, ?)',
            [
              tokens[name],
              name,
              JSON.stringify(['audit-events:read']),
              hashSecret(name === 'own' ? secret : generateSecret('icat')),
              T0,
              account,
            ],
          );
        for (const [i, [actorType, actorId, action, target]] of events.entries())
          await rawSql(
            backend,
            db,
            `INSERT INTO audit_events (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [
              ids[i],
              CUSTOMER,
              action,
              T0 + i,
              actorType,
              actorId,
              actorType === 'cli' ? 'root' : 'someone',
              target.startsWith('acc_') ? 'account' : 'api_token',
              target,
              'x',
              '198.51.100.9',
              'ua/1',
              `req-${i}`,
              '{}',
            ],
          );
      } finally {
        await old.close();
      }

      const { app } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, RATE_LIMIT: '0' } });
      const rows = (await rawSql(backend, db, 'SELECT id, actor_account_id FROM audit_events ORDER BY id')) as {
        id: string;
        actor_account_id: string | null;
      }[];
      const stored = new Map(rows.map((r) => [r.id, r.actor_account_id]));
      assert.deepEqual(
        ids.map((id) => stored.get(id)),
        [OPERATOR_ACCOUNT_ID, OPERATOR_ACCOUNT_ID, CUSTOMER, CUSTOMER, null, OPERATOR_ACCOUNT_ID, null],
        "the live token's account; a deleted one's by its creation event; unknown null; the CLI the operator's",
      );

      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/audit-events',
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(res.statusCode, 200, res.body);
      const seen = new Map(res.json<AuditEvent[]>().map((e) => [e.id, e]));
      assert.deepEqual(
        ids.map((id) => seen.get(id)!.actor.type),
        ['operator', 'operator', 'api_token', 'api_token', 'operator', 'operator', 'system'],
      );
      assert.equal(seen.get(ids[2]!)!.actor.id, tokens.own);
      assert.equal(seen.get(ids[0]!)!.ip, null);
      assert.equal(seen.get(ids[2]!)!.ip, '198.51.100.9');
    });
  });
}
