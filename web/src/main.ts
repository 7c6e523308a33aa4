// The console's shell: hash routes (#/tokens, #/accounts, #/accounts/acc_..., #/audit,
// #/webhooks, #/plans, #/images, #/regions, #/catalog), the header with the signed-in
// token, its account and sign-out, and focus on the page heading after navigation.
import { api, type Account, type CurrentToken } from './api.js';
import { announce, focusOn, h, replace } from './dom.js';
import { ApiError } from './problems.js';
import { isRoute, parseRoute } from './route.js';
import { session } from './session.js';
import { accountsView } from './views/accounts.js';
import { auditView } from './views/audit.js';
import { imagesView, plansView, regionsView } from './views/catalog.js';
import { errorText, type Shell } from './views/common.js';
import { catalogView } from './views/revisions.js';
import { tokensView } from './views/tokens.js';
import { webhooksView } from './views/webhooks.js';

type View = (root: HTMLElement, shell: Shell, reason?: string, id?: string | null) => void | Promise<void>;

const ROUTES: Record<string, { title: string; view: View; withId: boolean }> = {
  tokens: { title: 'API tokens', view: tokensView, withId: false },
  accounts: { title: 'Accounts', view: accountsView, withId: true },
  audit: { title: 'Audit log', view: auditView, withId: false },
  webhooks: { title: 'Webhooks', view: webhooksView, withId: false },
  plans: { title: 'Plans', view: plansView, withId: false },
  images: { title: 'Images', view: imagesView, withId: false },
  regions: { title: 'Regions', view: regionsView, withId: false },
  catalog: { title: 'Catalog', view: catalogView, withId: false },
};

function routeName(): string {
  return parseRoute(location.hash, ROUTES, 'tokens').page;
}

// The signed-in account's name, when the token may read it (an operator token holding
// accounts:read); other tokens are shown their account's id only.
let accountName: { id: string; name: string } | null = null;

function showAccountName(accountId: string): void {
  if (!session.holds('accounts:read') || accountName?.id === accountId) return;
  api<Account>('GET', `/accounts/${encodeURIComponent(accountId)}`)
    .then((account) => {
      accountName = { id: account.id, name: account.name };
      if (session.identity()?.account_id === account.id) shell.sessionChanged();
    })
    .catch(() => {
      // The id alone stays shown; a refused token is reported by the page itself.
    });
}

const main = document.getElementById('main')!;
const sessionBox = document.getElementById('session')!;

const shell: Shell = {
  signedOut(reason) {
    session.signOut();
    shell.sessionChanged();
    if (routeName() === 'tokens') render(false, reason);
    else location.hash = '#/tokens';
    announce(reason);
  },
  sessionChanged() {
    const who = session.identity();
    // The Accounts page is offered only to a token that can read accounts.
    document.getElementById('nav-accounts')!.hidden = !session.holds('accounts:read');
    // The audit log likewise, to a token that can read the audit events.
    document.getElementById('nav-audit')!.hidden = !session.holds('audit-events:read');
    // The webhooks, to a token that can read them.
    document.getElementById('nav-webhooks')!.hidden = !session.holds('webhooks:read');
    // The catalog's revision history, to a token that can read the catalog (operators).
    document.getElementById('nav-catalog')!.hidden = !session.holds('catalog:read');
    if (who === null) {
      replace(sessionBox, h('a', { href: '#/tokens', class: 'button secondary' }, 'Sign in'));
      return;
    }
    const out = h('button', { type: 'button', class: 'secondary' }, 'Sign out');
    out.addEventListener('click', () => {
      session.signOut();
      shell.sessionChanged();
      announce('Signed out');
      if (routeName() === 'tokens') render(true);
      else location.hash = '#/tokens';
    });
    const named = accountName?.id === who.account_id ? accountName.name : null;
    replace(
      sessionBox,
      h('span', { class: 'who' }, 'Signed in as ', h('strong', { class: 'token-name' }, who.name)),
      h(
        'span',
        { class: 'account' },
        'Account ',
        named === null ? null : [h('strong', { class: 'account-name' }, named), ' '],
        h('code', { class: 'account-id' }, who.account_id),
      ),
      out,
    );
    showAccountName(who.account_id);
  },
};

function render(moveFocus: boolean, reason?: string): void {
  const { page: name, id } = parseRoute(location.hash, ROUTES, 'tokens');
  const route = ROUTES[name]!;
  document.title = `${route.title} · infracat console`;
  for (const link of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const heading = h('h1', {}, route.title);
  const root = h('div', { class: 'view' });
  replace(main, heading, root);
  void route.view(root, shell, reason, id);
  if (moveFocus) focusOn(heading);
}

async function start(): Promise<void> {
  // A token kept from before a reload: check it is still good before showing anything.
  const token = session.token();
  let reason: string | undefined;
  if (token !== null) {
    try {
      session.remember(await api<CurrentToken>('GET', '/api-tokens/current'));
    } catch (err) {
      // Refused: forget it. Unreachable or failing server: keep it for a retry (reload).
      if (err instanceof ApiError && err.status === 401) session.signOut();
      reason = errorText(err);
    }
  }
  shell.sessionChanged();
  render(false, reason);
  window.addEventListener('hashchange', () => {
    // Only "#/name" and "#/name/id" are routes; other fragments (the skip link's #main) are in-page jumps.
    if (isRoute(location.hash)) render(true);
  });
  document.querySelector('.skip')?.addEventListener('click', (event) => {
    event.preventDefault();
    focusOn(main);
  });
}

void start();
