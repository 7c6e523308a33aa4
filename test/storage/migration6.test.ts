// Migration 6 (catalog_management) on a database at schema 5, on both backends: the
// scopes that granted nothing (images:write, plans:write, regions:write) become what they
// implied (<kind>:read), operator-account tokens gain catalog:write, customers' never do;
// order kept, duplicates dropped; revisions applied before it show applied_by and
// summary null (also over the API).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { loadDefaultCatalog } from '../../src/catalog/default.js';
import { encodeCatalog } from '../../src/catalog/service.js';
import { generateSecret, hashSecret } from '../../src/tokens/format.js';
import { LATEST_VERSION, OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import type { TokenRecord } from '../../src/storage/types.js';
import { build } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { TOKENS_BEFORE_CONDITIONS } from '../helpers/older-tables.js';
import { insertRows, rawSql } from '../helpers/raw-sql.js';

const CUSTOMER = 'acc_01JCUSTOMER000000000000000';

function token(accountId: string, scopes: string[]): TokenRecord & { secret: string } {
  const secret = generateSecret('icat');
  return {
    id: `tok_${randomUUID().replaceAll('-', '').slice(0, 26)}`,
    name: `holds ${scopes.join(' ')}`,
    scopes,
    secretHash: hashSecret(secret),
    createdAt: 1_700_000_000_000,
    expiresAt: null,
    lastUsedAt: null,
    lastUsedIp: null,
    accountId,
    previousSecretHash: null,
    previousExpiresAt: null,
    allowedCidrs: null,
    notBefore: null,
    enabled: true,
    secret,
  };
}

for (const backend of backends()) {
  describe(`migration 6 on ${backend.name}`, () => {
    it('maps the old write scopes (catalog:write for the operator account only); old revisions null', async (t) => {
      const db = await backend.create();
      t.after(() => db.drop());
      const old = db.open();
      try {
        assert.deepEqual(await old.migrate({ upTo: 5 }), { applied: [1, 2, 3, 4, 5], version: 5 });
        // As release 5 stored an account: the columns it had then.
        await rawSql(
          backend,
          db,
          'INSERT INTO accounts (id, name, external_id, status, created_at) VALUES (?, ?, ?, ?, ?)',
          [CUSTOMER, 'Acme', null, 'active', 1_700_000_000_000],
        );
        // As release 5 stored a revision: without applied_by and summary.
        await rawSql(backend, db, 'INSERT INTO catalog_revisions (version, document, applied_at) VALUES (?, ?, ?)', [
          1,
          encodeCatalog(loadDefaultCatalog()),
          1_700_000_000_000,
        ]);
      } finally {
        await old.close();
      }
      const cases: { account: string; before: string[]; after: string[] }[] = [
        {
          account: OPERATOR_ACCOUNT_ID,
          before: ['images:write', 'apps:read'],
          after: ['images:read', 'apps:read', 'catalog:write'],
        },
        {
          account: OPERATOR_ACCOUNT_ID,
          before: ['plans:write', 'regions:write', 'images:read'],
          after: ['plans:read', 'regions:read', 'images:read', 'catalog:write'],
        },
        {
          account: OPERATOR_ACCOUNT_ID,
          before: ['images:read', 'images:write'],
          after: ['images:read', 'catalog:write'],
        },
        {
          account: OPERATOR_ACCOUNT_ID,
          before: ['apps:write', 'api-tokens:write'],
          after: ['apps:write', 'api-tokens:write'],
        },
        { account: OPERATOR_ACCOUNT_ID, before: [], after: [] },
        {
          account: CUSTOMER,
          before: ['images:write', 'plans:read', 'apps:write', 'regions:write'],
          after: ['images:read', 'plans:read', 'apps:write', 'regions:read'],
        },
        { account: CUSTOMER, before: ['plans:write', 'plans:read'], after: ['plans:read'] },
        { account: CUSTOMER, before: ['apps:read'], after: ['apps:read'] },
      ];
      const tokens = cases.map((c) => token(c.account, c.before));
      // As release 5 stored them (the store of this release writes newer audit columns).
      await insertRows(
        backend,
        db,
        TOKENS_BEFORE_CONDITIONS,
        tokens.map(({ secret: _, ...record }) => record),
      );

      // Started on the schema 5 database: migration 6 runs (and any later one).
      const { app, store } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, RATE_LIMIT: '0' } });
      assert.equal(await store.schemaVersion(), LATEST_VERSION);
      for (const [i, c] of cases.entries()) {
        const stored = await store.tokens.get(c.account, tokens[i]!.id);
        assert.deepEqual(stored?.scopes, c.after, `${c.account} ${c.before.join(' ')}`);
      }

      // The operator's migrated token manages the catalog; the customer's cannot even read it.
      const operatorAuth = { authorization: `Bearer ${tokens[0]!.secret}` };
      const revisions = await app.inject({ method: 'GET', url: '/api/v1/catalog/revisions', headers: operatorAuth });
      assert.equal(revisions.statusCode, 200, revisions.body);
      assert.deepEqual(revisions.json(), [
        {
          version: 1,
          applied_at: new Date(1_700_000_000_000).toISOString(),
          applied_by: null,
          summary: null,
          changes: null,
        },
      ]);
      const doc = await app.inject({ method: 'GET', url: '/api/v1/catalog', headers: operatorAuth });
      assert.equal(doc.headers.etag, '"1"');
      const customerAuth = { authorization: `Bearer ${tokens[5]!.secret}` };
      const refused = await app.inject({ method: 'GET', url: '/api/v1/catalog', headers: customerAuth });
      assert.equal(refused.statusCode, 403);
      const plans = await app.inject({ method: 'GET', url: '/api/v1/plans', headers: customerAuth });
      assert.equal(plans.statusCode, 200, 'images:write became images:read: what it granted still works');
      const applied = await app.inject({
        method: 'PUT',
        url: '/api/v1/catalog',
        headers: { ...operatorAuth, 'if-match': '"1"' },
        payload: { ...doc.json<object>(), currency: 'EUR' },
      });
      assert.equal(applied.statusCode, 200, applied.body);
      const after = await app.inject({ method: 'GET', url: '/api/v1/catalog/revisions', headers: operatorAuth });
      assert.deepEqual(
        after.json<{ applied_by: unknown; summary: unknown }[]>().map((r) => [r.applied_by, r.summary]),
        [
          [
            { type: 'api_token', id: tokens[0]!.id, name: tokens[0]!.name },
            '0 added, 0 changed, 0 removed, 1 setting(s) changed',
          ],
          [null, null],
        ],
      );
    });
  });
}
