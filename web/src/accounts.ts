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

/**
 * Whether the token form offers a scope, and if not why: the signed-in token can grant only
 * scopes it holds, and the operator-only ones (the scope list's `operator_only`, as the
 * server decides it: accounts:*, catalog:write) only into the operator account.
 */
export function scopeOffer(
  scope: { scope: string; operator_only: boolean },
  holds: (scope: string) => boolean,
  intoOperatorAccount: boolean,
): { enabled: true } | { enabled: false; reason: string } {
  if (!intoOperatorAccount && scope.operator_only) {
    return { enabled: false, reason: 'not in this account: operator account only' };
  }
  if (!holds(scope.scope)) return { enabled: false, reason: 'your token lacks this scope' };
  return { enabled: true };
}

/** "Active" / "Suspended", as the list and the account page show a status. */
export function statusLabel(status: string): string {
  return status === 'suspended' ? 'Suspended' : status === 'active' ? 'Active' : status;
}
