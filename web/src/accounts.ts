// What the console offers for an account, decided without the DOM. Unit-tested in
// test/console/logic.test.ts.

export type AccountAction = 'suspend' | 'resume' | 'delete';

/**
 * The actions offered on an account. None on the operator account: the server refuses to
 * suspend or delete it (409 OPERATOR_ACCOUNT). Only an operator-account token reaches the
 * Accounts page, so the signed-in token's own account is the operator account.
 */
export function accountActions(account: { id: string; status: string }, operatorId: string): AccountAction[] {
  if (account.id === operatorId) return [];
  return [account.status === 'suspended' ? 'resume' : 'suspend', 'delete'];
}

// Resources whose scopes only tokens of the operator account may hold (docs/accounts.md;
// the server answers 422 for them anywhere else).
const OPERATOR_ONLY_RESOURCES: readonly string[] = ['accounts'];

/**
 * Whether the token form offers a scope, and if not why: the signed-in token can grant only
 * scopes it holds, and the accounts:* scopes only into the operator account.
 */
export function scopeOffer(
  scope: string,
  holds: (scope: string) => boolean,
  intoOperatorAccount: boolean,
): { enabled: true } | { enabled: false; reason: string } {
  const resource = scope.split(':')[0] ?? '';
  if (!intoOperatorAccount && OPERATOR_ONLY_RESOURCES.includes(resource)) {
    return { enabled: false, reason: 'not in this account: operator account only' };
  }
  if (!holds(scope)) return { enabled: false, reason: 'your token lacks this scope' };
  return { enabled: true };
}

/** "Active" / "Suspended", as the list and the account page show a status. */
export function statusLabel(status: string): string {
  return status === 'suspended' ? 'Suspended' : status === 'active' ? 'Active' : status;
}
