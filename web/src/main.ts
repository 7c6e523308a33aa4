// The console's shell: hash routes (#/tokens, #/plans, #/images, #/regions), the header
// with the signed-in token and sign-out, and focus on the page heading after navigation.
import { api, type TokenView } from './api.js';
import { announce, focusOn, h, replace } from './dom.js';
import { ApiError } from './problems.js';
import { session } from './session.js';
import { imagesView, plansView, regionsView } from './views/catalog.js';
import { errorText, type Shell } from './views/common.js';
import { tokensView } from './views/tokens.js';

type View = (root: HTMLElement, shell: Shell, reason?: string) => void | Promise<void>;

const ROUTES: Record<string, { title: string; view: View }> = {
  tokens: { title: 'API tokens', view: tokensView },
  plans: { title: 'Plans', view: plansView },
  images: { title: 'Images', view: imagesView },
  regions: { title: 'Regions', view: regionsView },
};

function routeName(): string {
  const name = /^#\/([a-z]+)$/.exec(location.hash)?.[1];
  return name !== undefined && name in ROUTES ? name : 'tokens';
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
    replace(
      sessionBox,
      h('span', { class: 'who' }, 'Signed in as ', h('strong', { class: 'token-name' }, who.name)),
      out,
    );
  },
};

function render(moveFocus: boolean, reason?: string): void {
  const name = routeName();
  const route = ROUTES[name]!;
  document.title = `${route.title} · infracat console`;
  for (const link of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    if (link.getAttribute('href') === `#/${name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const heading = h('h1', {}, route.title);
  const root = h('div', { class: 'view' });
  replace(main, heading, root);
  void route.view(root, shell, reason);
  if (moveFocus) focusOn(heading);
}

async function start(): Promise<void> {
  // A token kept from before a reload: check it is still good before showing anything.
  const token = session.token();
  let reason: string | undefined;
  if (token !== null) {
    try {
      session.remember(await api<TokenView>('GET', '/api-tokens/current'));
    } catch (err) {
      // Refused: forget it. Unreachable or failing server: keep it for a retry (reload).
      if (err instanceof ApiError && err.status === 401) session.signOut();
      reason = errorText(err);
    }
  }
  shell.sessionChanged();
  render(false, reason);
  window.addEventListener('hashchange', () => {
    // Only "#/name" is a route; other fragments (the skip link's #main) are in-page jumps.
    if (/^#\/[a-z]+$/.test(location.hash)) render(true);
  });
  document.querySelector('.skip')?.addEventListener('click', (event) => {
    event.preventDefault();
    focusOn(main);
  });
}

void start();
