// Pieces every view uses: the error notice, times with the exact value on hover, tags,
// and the hand-off to the shell when the token stops being accepted.
import { h, replace, type Child } from '../dom.js';
import { exactTime, relativeTime } from '../format.js';
import { ApiError, messageFor } from '../problems.js';
import { session } from '../session.js';

export interface Shell {
  /** The token was refused (401) or deleted: back to the sign-in form with a reason. */
  signedOut(reason: string): void;
  /** Redraws the header's signed-in line. */
  sessionChanged(): void;
}

/** A notice area; role=alert so its message is read out when it appears. */
export function noticeArea(): HTMLDivElement {
  return h('div', { class: 'notice-area', role: 'alert' });
}

export function showNotice(area: HTMLElement, message: string, kind: 'error' | 'info' = 'error'): void {
  area.replaceChildren(h('p', { class: `notice ${kind}` }, message));
}

export function errorText(err: unknown): string {
  return err instanceof ApiError
    ? messageFor(err)
    : 'Something went wrong in the console. Reload the page and try again.';
}

/**
 * Shows an API failure in `area`; a refused token (401 while signed in) ends the session
 * instead, since nothing else will work with it. Returns true when the session ended.
 */
export function reportError(shell: Shell, area: HTMLElement, err: unknown): boolean {
  if (err instanceof ApiError && err.status === 401 && err.problem.code === 'INVALID_TOKEN') {
    shell.signedOut(messageFor(err));
    return true;
  }
  showNotice(area, errorText(err));
  return false;
}

/** A relative time ("3 minutes ago") whose exact UTC time shows on hover. */
export function timeAgo(iso: string | null, now: number, never = 'Never'): Child {
  if (iso === null) return h('span', { class: 'muted' }, never);
  return h('time', { datetime: iso, title: exactTime(iso) }, relativeTime(iso, now));
}

export function tags(values: readonly string[], label: string): HTMLUListElement {
  return h(
    'ul',
    { class: 'tags', 'aria-label': label },
    values.map((v) => h('li', {}, v)),
  );
}

/** A table cell carrying its column name, shown before the value on narrow screens. */
export function cell(label: string, ...content: Child[]): HTMLTableCellElement {
  return h('td', { 'data-label': label }, ...content);
}

export function loading(what: string): HTMLParagraphElement {
  return h('p', { class: 'muted', 'aria-busy': 'true' }, `Loading ${what}…`);
}

/**
 * A page that needs a scope: shows why the signed-in token (or no token) cannot use it and
 * returns true; false when it can. Said without asking the server: the nav does not offer
 * such a page to a token lacking the scope.
 */
export function refusePage(
  root: HTMLElement,
  scope: string,
  messages: { signedOut: string; lacking: string },
): boolean {
  const notice = noticeArea();
  if (session.identity() === null) {
    replace(root, notice, h('p', {}, h('a', { href: '#/tokens' }, 'Sign in with an API token')));
    showNotice(notice, messages.signedOut);
    return true;
  }
  if (!session.holds(scope)) {
    replace(root, notice);
    showNotice(notice, messages.lacking);
    return true;
  }
  return false;
}
