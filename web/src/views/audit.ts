// The audit log page (#/audit): the signed-in account's audit events, newest first, with
// an action filter (and, for an operator-account token, every account's trail), paged with
// "Load more" through the list's `Link: <...>; rel="next"` header. Offered in the nav only
// to a token holding audit-events:read.
import { actorOf, AUDIT_ACTIONS, auditPath, detailLines, targetOf, type AuditFilter, type Party } from '../audit.js';
import { apiPage, type AuditEvent } from '../api.js';
import { announce, h, replace } from '../dom.js';
import { exactTime, relativeTime } from '../format.js';
import { session } from '../session.js';
import { cell, loading, noticeArea, reportError, type Shell, refusePage } from './common.js';
import { loadMore } from './load-more.js';

/** Shows why the signed-in token (or no token) cannot use the page; false when it can. */
function refusal(root: HTMLElement): boolean {
  return refusePage(root, 'audit-events:read', {
    signedOut: 'The audit log shows what was done in your account. Sign in first.',
    lacking: 'The audit log needs a token holding audit-events:read. This token lacks it.',
  });
}

export function auditView(root: HTMLElement, shell: Shell): void {
  if (refusal(root)) return;
  const own = session.identity()!.account_id;
  const action = h(
    'select',
    { id: 'audit-action', name: 'action' },
    h('option', { value: '' }, 'All actions'),
    AUDIT_ACTIONS.map((a) => h('option', { value: a }, a)),
  );
  // Only operator-account tokens can hold accounts:read, and only they may read every
  // account's trail; the page starts on the signed-in account's either way.
  const whose = session.holds('accounts:read')
    ? h(
        'select',
        { id: 'audit-account', name: 'account' },
        h('option', { value: own }, 'This account'),
        h('option', { value: '' }, 'All accounts'),
      )
    : null;
  const list = h('section', { class: 'card', 'aria-labelledby': 'audit-heading' });
  const load = (): Promise<void> =>
    loadEvents(list, shell, { action: action.value, accountId: whose === null ? own : whose.value || null });
  action.addEventListener('change', () => void load());
  whose?.addEventListener('change', () => void load());
  // Filters apply as they change; the form is never submitted.
  const filters = h(
    'form',
    { class: 'card filters', 'aria-label': 'Filter the audit log', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'audit-action' }, 'Action'), action),
    whose === null ? null : h('div', { class: 'field' }, h('label', { for: 'audit-account' }, 'Accounts'), whose),
  );
  filters.addEventListener('submit', (event) => event.preventDefault());
  replace(root, filters, list);
  void load();
}

// Each (re)load of the list gets a number; an answer for an older one (the filter changed
// meanwhile) is dropped.
let generation = 0;

async function loadEvents(section: HTMLElement, shell: Shell, filter: AuditFilter): Promise<void> {
  const mine = ++generation;
  const notice = noticeArea();
  const refresh = h('button', { type: 'button', class: 'secondary' }, 'Refresh');
  const body = h('div', {}, loading('audit events'));
  replace(
    section,
    h('div', { class: 'section-head' }, h('h2', { id: 'audit-heading' }, 'Events'), refresh),
    notice,
    body,
  );
  refresh.addEventListener('click', () => {
    void loadEvents(section, shell, filter).then(() => announce('Audit log refreshed'));
  });
  let page: { items: AuditEvent[]; next: string | null };
  try {
    page = await apiPage<AuditEvent>(auditPath(filter));
  } catch (err) {
    if (mine === generation && !reportError(shell, notice, err)) body.replaceChildren();
    return;
  }
  if (mine !== generation) return;
  if (page.items.length === 0) {
    replace(body, h('p', { class: 'muted' }, filter.action === '' ? 'No events.' : 'No events of this action.'));
    return;
  }
  // Every account's trail names each event's account; one account's needs no such column.
  const everyAccount = filter.accountId === null;
  const row = (e: AuditEvent): HTMLTableRowElement => eventRow(e, everyAccount);
  const rows = h('tbody', {}, page.items.map(row));
  const [moreNotice, moreBox] = loadMore({
    id: 'audit-more',
    next: page.next,
    rows,
    row,
    noun: 'event',
    shell,
    section,
    current: () => mine === generation,
  });
  replace(body, eventTable(rows, everyAccount), moreNotice, moreBox);
}

function eventTable(rows: HTMLTableSectionElement, everyAccount: boolean): HTMLElement {
  const columns = ['Time', 'Action', ...(everyAccount ? ['Account'] : []), 'Actor', 'Target', 'IP', 'More'];
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'responsive audit' },
      h('caption', { class: 'visually-hidden' }, 'Audit events, newest first; times are UTC'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          columns.map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      rows,
    ),
  );
}

function eventRow(e: AuditEvent, everyAccount: boolean): HTMLTableRowElement {
  const more: [string, string | null][] = [
    ['Event', e.id],
    ['Request', e.request_id],
    ['User agent', e.user_agent],
    ...detailLines(e.details),
  ];
  const dot = e.action.indexOf('.') + 1;
  return h(
    'tr',
    { 'data-event-id': e.id, 'data-action': e.action },
    h(
      'th',
      { scope: 'row', 'data-label': 'Time' },
      h('time', { datetime: e.occurred_at, title: relativeTime(e.occurred_at, Date.now()) }, exactTime(e.occurred_at)),
    ),
    // A narrow column may break the action after its dot ("api_token." / "rotated"), nowhere else.
    cell('Action', h('code', { class: 'audit-action' }, e.action.slice(0, dot), h('wbr'), e.action.slice(dot))),
    everyAccount ? cell('Account', h('code', { class: 'account-id' }, e.account_id)) : null,
    cell('Actor', party(actorOf(e), 'actor')),
    cell('Target', party(targetOf(e), 'target')),
    cell('IP', e.ip === null ? h('span', { class: 'muted' }, 'None') : h('code', { class: 'ip' }, e.ip)),
    cell(
      'More',
      h(
        'details',
        {},
        h('summary', {}, 'Details', h('span', { class: 'visually-hidden' }, ` of ${e.action} at ${e.occurred_at}`)),
        h(
          'dl',
          { class: 'details' },
          more.map(([label, value]) => [
            h('dt', {}, label),
            h('dd', {}, value === null ? h('span', { class: 'muted' }, 'None') : h('code', {}, value)),
          ]),
        ),
      ),
    ),
  );
}

export function party(p: Party, role: 'actor' | 'target'): HTMLElement {
  // "operator (API token) tok_01J..."; a party without a name is named by its kind
  // (and infracat's own jobs, named "infracat", by that alone).
  return h(
    'span',
    { class: `party ${role}` },
    h('span', { class: `${role}-name` }, p.name ?? p.kind),
    p.name === null || p.name === p.kind ? null : [' ', h('span', { class: 'muted' }, `(${p.kind})`)],
    p.id === null ? null : [' ', h('code', { class: `${role}-id` }, p.id)],
  );
}
