// Audit context and events for tests that call domain services or the store directly:
// every change takes the context of who made it, and the store writes an event with it.
import { cliAuditContext, type AuditContext } from '../../src/audit/context.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import type { AuditEventRecord, CatalogRevision } from '../../src/storage/types.js';
import { newId } from '../../src/tokens/ids.js';

/** The operator at the command line: what the tests' direct service calls act as. */
export const TEST_CONTEXT: AuditContext = cliAuditContext();

let seq = 0;
/**
 * An audit event to hand a store mutation (overrides for what a test checks). Its id is
 * `evt_` + the ULID of its occurredAt, as every event's is (the store's since and until
 * select by it), unless the test gives one.
 */
export function ev(over: Partial<AuditEventRecord> = {}): AuditEventRecord {
  seq += 1;
  const occurredAt = over.occurredAt ?? 1_700_000_000_000 + seq;
  return {
    id: newId('evt', occurredAt),
    accountId: OPERATOR_ACCOUNT_ID,
    action: 'api_token.created',
    occurredAt,
    actorType: 'cli',
    actorId: null,
    actorName: 'tester',
    actorAccountId: OPERATOR_ACCOUNT_ID,
    actorCredential: null,
    targetType: 'api_token',
    targetId: null,
    targetName: null,
    ip: null,
    userAgent: null,
    requestId: null,
    details: {},
    ...over,
  };
}

/** A catalog revision to hand CatalogStore.apply (who and what: a test's). */
export function rev(document: string, appliedAt = 1_700_000_000_000): Omit<CatalogRevision, 'version'> {
  return {
    document,
    appliedAt,
    appliedBy: { type: 'cli', id: null, name: 'tester' },
    summary: 'test revision',
    changes: null,
  };
}
