// The filtered reads are index-served on both backends: the exact statements the store
// runs (auditListQuery, accountListQuery), planned by each engine over a few thousand
// rows. SQLite as a deployed database has it (no statistics) and after ANALYZE; PostgreSQL
// after ANALYZE, with its planner free to choose (sequential scans allowed). Every
// combination of the audit trail's filters must walk an index that ends in id (filter,
// order and cursor in one range) and never the whole table.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { accountListQuery, auditListQuery } from '../../src/storage/sql-store.js';
import { ACCOUNTS, AUDIT_EVENTS, type Param } from '../../src/storage/tables.js';
import type { AccountFilter, AccountRecord, AuditEventRecord, AuditFilter } from '../../src/storage/types.js';
import { newId } from '../../src/tokens/ids.js';
import { AUDIT_ACTIONS } from '../../src/audit/events.js';
import { backends, type Backend, type BackendDb } from '../helpers/backends.js';
import { insertRows, rawSql } from '../helpers/raw-sql.js';

const EVENTS = 6000;
const ACCOUNT_COUNT = 3000;
const T0 = Date.UTC(2027, 0, 1);
const MINUTE = 60_000;

const RARE_ACTION = 'account.suspended';
const accountId = (i: number) => `acc_plan${String(i).padStart(6, '0')}`;
const targetId = (i: number) => `tok_plan${String(i).padStart(6, '0')}`;

const COMMON_ACTIONS = AUDIT_ACTIONS.filter((a) => a !== RARE_ACTION);

/**
 * Events as a trail holds them: one a minute over 200 accounts, a handful per target (a
 * target is in one account's trail), the common actions in turn and a rare one every
 * hundredth. The filters below ask for what few events match: the reads that would walk
 * the most rows without the right index.
 */
function seedEvents(): AuditEventRecord[] {
  return Array.from({ length: EVENTS }, (_, i) => {
    const occurredAt = T0 + i * MINUTE;
    return {
      id: newId('evt', occurredAt),
      accountId: accountId(i % 200),
      action: i % 100 === 0 ? RARE_ACTION : COMMON_ACTIONS[i % COMMON_ACTIONS.length]!,
      occurredAt,
      actorType: 'api_token',
      actorId: targetId((i * 13) % 1400),
      actorName: 'seed',
      actorAccountId: accountId(i % 200),
      actorCredential: 'current',
      targetType: 'api_token',
      targetId: targetId(i % 1400),
      targetName: 'seed',
      ip: '203.0.113.7',
      userAgent: 'plan-test',
      requestId: `req-${i}`,
      details: {},
    };
  });
}

function seedAccounts(): AccountRecord[] {
  return Array.from({ length: ACCOUNT_COUNT }, (_, i) => ({
    id: accountId(i),
    name: `account ${i}`,
    externalId: `ext-${i}`,
    status: i % 50 === 0 ? ('suspended' as const) : ('active' as const),
    createdAt: T0 + i,
    rateLimit: null,
  }));
}

interface Plan {
  /** The indexes the plan reads, by name. */
  indexes: string[];
  /** Whether some step reads a table without an index, or sorts. */
  tableScan: boolean;
  sorts: boolean;
  text: string;
}

async function plan(backend: Backend, db: BackendDb, table: string, sql: string, params: Param[]): Promise<Plan> {
  if (backend.name === 'sqlite') {
    const rows = (await rawSql(backend, db, `EXPLAIN QUERY PLAN ${sql}`, params)) as { detail: string }[];
    const details = rows.map((r) => r.detail);
    return {
      indexes: details.flatMap((d) => {
        const m = /USING (?:COVERING )?INDEX (\S+)|USING (INTEGER )?PRIMARY KEY/.exec(d);
        return m === null ? [] : [m[1] ?? 'PRIMARY KEY'];
      }),
      tableScan: details.some((d) => new RegExp(`^SCAN ${table}$`).test(d)),
      sorts: details.some((d) => d.includes('USE TEMP B-TREE')),
      text: details.join('\n'),
    };
  }
  const rows = (await rawSql(backend, db, `EXPLAIN (FORMAT JSON) ${sql}`, params)) as { 'QUERY PLAN': unknown }[];
  const nodes: Record<string, unknown>[] = [];
  const walk = (node: Record<string, unknown>) => {
    nodes.push(node);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const top = rows[0]!['QUERY PLAN'] as { Plan: Record<string, unknown> }[];
  walk(top[0]!.Plan);
  return {
    indexes: nodes
      .filter((n) => ['Index Scan', 'Index Only Scan', 'Bitmap Index Scan'].includes(n['Node Type'] as string))
      .map((n) => n['Index Name'] as string),
    tableScan: nodes.some((n) => n['Node Type'] === 'Seq Scan'),
    sorts: nodes.some((n) => n['Node Type'] === 'Sort'),
    text: JSON.stringify(top, null, 1),
  };
}

const FILTER_KINDS = ['accountId', 'action', 'targetId', 'since', 'until', 'before'] as const;

/** Every combination of the audit trail's filters, with values that match some seeded events. */
function auditFilters(events: readonly AuditEventRecord[]): AuditFilter[] {
  const e = events[EVENTS / 2]!;
  const values: Required<Omit<AuditFilter, 'limit'>> = {
    accountId: e.accountId,
    action: RARE_ACTION,
    targetId: e.targetId!,
    since: T0 + 1000 * MINUTE,
    until: T0 + 5000 * MINUTE,
    before: events[4500]!.id,
  };
  const out: AuditFilter[] = [];
  for (let mask = 0; mask < 1 << FILTER_KINDS.length; mask++) {
    const filter: AuditFilter = { limit: 31 };
    FILTER_KINDS.forEach((kind, bit) => {
      if ((mask & (1 << bit)) !== 0) Object.assign(filter, { [kind]: values[kind] });
    });
    out.push(filter);
  }
  return out;
}

// The audit trail's indexes (migrations 5 and 10) by their first column; each ends with id.
const LEADING: Record<string, string[]> = {
  accountId: ['audit_events_account', 'audit_events_account_action'],
  action: ['audit_events_action'],
  targetId: ['audit_events_target'],
};

/**
 * The indexes that may serve `filter`: one that starts with a column the filter gives
 * (an index range of what matches it; a target's few events are all in one account's
 * trail, so (target_id, id) serves a target within an account too), or the primary key
 * when the filter names no column but the id (since, until, the cursor).
 */
function expectedIndexes(backend: Backend, filter: AuditFilter): string[] {
  const given = Object.keys(LEADING).filter((k) => filter[k as keyof AuditFilter] !== undefined);
  if (given.length > 0) return given.flatMap((k) => LEADING[k]!);
  return [backend.name === 'sqlite' ? 'sqlite_autoindex_audit_events_1' : 'audit_events_pkey'];
}

const show = (filter: object) => JSON.stringify(filter);

for (const backend of backends()) {
  describe(`query plans on ${backend.name}`, () => {
    it('every combination of audit filters walks an index ending in id: no table scan, no sort', async (t) => {
      const db = await backend.fresh(t);
      const events = seedEvents();
      await insertRows(backend, db, AUDIT_EVENTS, events);
      const check = async (when: string) => {
        for (const filter of auditFilters(events)) {
          const { sql, params } = auditListQuery(filter);
          const p = await plan(backend, db, 'audit_events', sql, params);
          const why = `${when}, ${show(filter)}:\n${sql}\n${p.text}`;
          assert.ok(!p.tableScan, `no scan of the table: ${why}`);
          assert.ok(p.indexes.length > 0, `an index: ${why}`);
          const expected = expectedIndexes(backend, filter);
          assert.ok(
            p.indexes.every((name) => expected.includes(name)),
            `${expected.join(' or ')}: ${why}`,
          );
          if (backend.name === 'sqlite') {
            assert.ok(!p.sorts, `the index gives the order: ${why}`);
            // A range of the index, not all of it in order with a filter (only the unfiltered trail walks it whole).
            if (Object.keys(filter).length > 1) assert.match(p.text, /^SEARCH audit_events /, why);
          }
        }
      };
      if (backend.name === 'sqlite') await check('without statistics');
      await rawSql(backend, db, 'ANALYZE');
      await check('after ANALYZE');
    });

    it('the accounts list by status or external_id walks an index', async (t) => {
      const db = await backend.fresh(t);
      await insertRows(backend, db, ACCOUNTS, seedAccounts());
      const filters: [AccountFilter, string[]][] = [
        [{ status: 'suspended' }, ['accounts_status']],
        [
          { externalId: 'ext-77' },
          backend.name === 'sqlite' ? ['sqlite_autoindex_accounts_2'] : ['accounts_external_id_key'],
        ],
        [
          { status: 'active', externalId: 'ext-77' },
          backend.name === 'sqlite' ? ['sqlite_autoindex_accounts_2'] : ['accounts_external_id_key'],
        ],
      ];
      const check = async (when: string) => {
        for (const [filter, expected] of filters) {
          const { sql, params } = accountListQuery(filter, { limit: 101 });
          const p = await plan(backend, db, 'accounts', sql, params);
          const why = `${when}, ${show(filter)}:\n${sql}\n${p.text}`;
          assert.ok(!p.tableScan, `no scan of the table: ${why}`);
          assert.ok(p.indexes.length > 0 && p.indexes.every((name) => expected.includes(name)), why);
        }
      };
      if (backend.name === 'sqlite') await check('without statistics');
      await rawSql(backend, db, 'ANALYZE');
      await check('after ANALYZE');
    });
  });
}
