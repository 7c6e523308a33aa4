// The audit page's logic without the DOM: the actions it filters by, the query of its
// first page, and how an event's actor, target and details read. Unit-tested in
// test/console/logic.test.ts (which also keeps ACTIONS equal to the server's list).
import type { AuditEvent } from './api.js';

/** Every action the trail records, in the order the filter offers them. */
export const AUDIT_ACTIONS = [
  'api_token.created',
  'api_token.deleted',
  'api_token.rotated',
  'api_token.updated',
  'api_token.revoked_leaked',
  'api_token.expired_purged',
  'account.created',
  'account.updated',
  'account.suspended',
  'account.resumed',
  'account.deleted',
  'catalog.applied',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret_rotated',
  'webhook.disabled',
] as const satisfies readonly AuditEvent['action'][];

export interface AuditFilter {
  /** One action, or '' for all. */
  action: string;
  /** The account whose trail is shown, or null for every account (operator tokens only). */
  accountId: string | null;
}

/**
 * The first page's path under /api/v1. The signed-in account is named even though it is
 * the default for most tokens: an operator-account token would otherwise get every
 * account's trail, and this page shows the signed-in account's unless asked otherwise.
 * An action outside the list is left out rather than sent (the server would refuse it).
 */
export function auditPath(filter: AuditFilter): string {
  const params = new URLSearchParams();
  if (filter.accountId !== null) params.set('account_id', filter.accountId);
  if ((AUDIT_ACTIONS as readonly string[]).includes(filter.action)) params.set('action', filter.action);
  const query = params.toString();
  return `/audit-events${query === '' ? '' : `?${query}`}`;
}

const ACTOR_TYPES: Record<AuditEvent['actor']['type'], string> = {
  api_token: 'API token',
  cli: 'infracat CLI',
  secret_scanning: 'Secret scanning',
  system: 'infracat',
  // A change the operator made, as a customer account sees it (no name, no id).
  operator: 'Operator',
};

const TARGET_TYPES: Record<AuditEvent['target']['type'], string> = {
  api_token: 'API token',
  account: 'Account',
  catalog: 'Catalog',
  webhook: 'Webhook',
};

export interface Party {
  /** What kind of party, in words ("API token"). */
  kind: string;
  /** Its name as it was at the time, or null when it has none. */
  name: string | null;
  id: string | null;
}

export function actorOf(event: Pick<AuditEvent, 'actor'>): Party {
  const { type, id, name } = event.actor;
  return { kind: ACTOR_TYPES[type] ?? type, name, id };
}

export function targetOf(event: Pick<AuditEvent, 'target'>): Party {
  const { type, id, name } = event.target;
  return { kind: TARGET_TYPES[type] ?? type, name, id };
}

/**
 * The details as label/value lines, in the server's order: text as it is, anything else
 * (numbers, lists, objects) as JSON. Nothing here is ever a secret (the server's rule).
 */
export function detailLines(details: Readonly<Record<string, unknown>>): [label: string, value: string][] {
  return Object.entries(details).map(([key, value]) => [
    key,
    typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value)),
  ]);
}
