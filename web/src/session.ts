// The signed-in token lives in sessionStorage: it survives a reload of this tab, is gone
// when the tab closes, is never shared with other tabs, and never goes into a URL.
const KEY = 'infracat.token';

export interface Identity {
  id: string;
  name: string;
  scopes: string[];
  /** The account the token belongs to (its tokens are the only ones it sees). */
  account_id: string;
}

let identity: Identity | null = null;

export const session = {
  token(): string | null {
    return sessionStorage.getItem(KEY);
  },
  identity(): Identity | null {
    return identity;
  },
  signIn(token: string, who: Identity): void {
    sessionStorage.setItem(KEY, token);
    identity = who;
  },
  remember(who: Identity): void {
    identity = who;
  },
  signOut(): void {
    sessionStorage.removeItem(KEY);
    identity = null;
  },
  /** Whether the signed-in token may grant a scope (write implies read, as on the server). */
  holds(scope: string): boolean {
    if (identity === null) return false;
    if (identity.scopes.includes(scope)) return true;
    const [resource, action] = scope.split(':');
    return action === 'read' && identity.scopes.includes(`${resource}:write`);
  },
};
