// The operator's Accounts page (#/accounts): every account with its status and external
// id, a form to create one, suspend/resume and delete behind confirmations that name it.
// One account's page (#/accounts/acc_...) adds its tokens: the list and the token form of
// the API tokens page, acting on /api/v1/accounts/{id}/api-tokens (how a new customer gets
// its first token, and how the operator regenerates or renames one of them). Only tokens
// of the operator account can hold accounts:read, so the signed-in token's account is the
// operator account here.
import { accountActions, statusLabel, type AccountAction } from '../accounts.js';
import { api, apiPage, type Account } from '../api.js';
import { announce, focusOn, h, replace } from '../dom.js';
import { exactTime, shortDate } from '../format.js';
import { ApiError, fieldErrors } from '../problems.js';
import { session } from '../session.js';
import { cell, loading, noticeArea, reportError, showNotice, type Shell, refusePage } from './common.js';
import { confirmDialog } from './confirm.js';
import { loadMore } from './load-more.js';
import { tokenSpace } from './tokens.js';

const accountPath = (id: string): string => `/accounts/${encodeURIComponent(id)}`;

/** Shows why the signed-in token (or no token) cannot use the page; false when it can. */
function refusal(root: HTMLElement): boolean {
  return refusePage(root, 'accounts:read', {
    signedOut: 'Accounts are managed with a token of the operator account. Sign in first.',
    lacking:
      'Accounts are managed by the operator account, with a token holding accounts:read. ' +
      'This token manages the tokens of its own account only.',
  });
}

export function accountsView(root: HTMLElement, shell: Shell, _reason?: string, id?: string | null): void {
  if (refusal(root)) return;
  if (id !== null && id !== undefined) {
    void accountPage(root, shell, id);
    return;
  }
  const list = h('section', { 'aria-labelledby': 'accounts-heading', class: 'card' });
  const reload = (): Promise<void> => loadAccounts(list, shell);
  replace(root, session.holds('accounts:write') ? createAccountSection(shell, reload) : null, list);
  void reload();
}

// ---- list ----------------------------------------------------------------------------

async function loadAccounts(section: HTMLElement, shell: Shell): Promise<void> {
  const notice = noticeArea();
  const refresh = h('button', { type: 'button', class: 'secondary' }, 'Refresh');
  const body = h('div', {}, loading('accounts'));
  replace(
    section,
    h('div', { class: 'section-head' }, h('h2', { id: 'accounts-heading' }, 'All accounts'), refresh),
    notice,
    body,
  );
  const reload = (): Promise<void> => loadAccounts(section, shell);
  refresh.addEventListener('click', () => {
    void reload().then(() => announce('Account list refreshed'));
  });
  let page: { items: Account[]; next: string | null };
  try {
    page = await apiPage<Account>('/accounts');
  } catch (err) {
    if (!reportError(shell, notice, err)) body.replaceChildren();
    return;
  }
  const row = accountRow(shell, notice, reload);
  const rows = h('tbody', {}, page.items.map(row));
  // The list comes in pages (oldest first): "Load more" follows the Link header to the next.
  const [moreNotice, moreBox] = loadMore({
    id: 'accounts-more',
    next: page.next,
    rows,
    row,
    noun: 'account',
    shell,
    section,
  });
  replace(body, accountTable(rows), moreNotice, moreBox);
}

/** The function that draws an account's row (with its actions) of the list. */
function accountRow(
  shell: Shell,
  notice: HTMLElement,
  reload: () => Promise<void>,
): (account: Account) => HTMLTableRowElement {
  const operatorId = session.identity()?.account_id ?? '';
  // After an action the list is redrawn; focus goes to the same account's next action.
  const afterwards = (account: Account, message: string, next: AccountAction | null): void => {
    announce(message);
    void reload().then(() => {
      const target =
        next === null
          ? null
          : document.querySelector<HTMLElement>(`tr[data-account-id="${account.id}"] button[data-action="${next}"]`);
      focusOn(target ?? document.getElementById('accounts-heading') ?? document.body);
    });
  };
  return (a) =>
    h(
      'tr',
      { 'data-account-id': a.id },
      h(
        'th',
        { scope: 'row', 'data-label': 'Name' },
        h('a', { href: `#/accounts/${a.id}`, class: 'account-name' }, a.name),
        a.id === operatorId ? h('span', { class: 'badge' }, 'operator') : null,
      ),
      cell('External ID', externalId(a.external_id)),
      cell('Status', statusBadge(a.status)),
      cell('Created', h('time', { datetime: a.created_at, title: exactTime(a.created_at) }, shortDate(a.created_at))),
      cell('Actions', actionButtons(a, operatorId, shell, notice, afterwards)),
    );
}

function accountTable(rows: HTMLTableSectionElement): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'responsive' },
      h('caption', { class: 'visually-hidden' }, 'Accounts, oldest first'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Name', 'External ID', 'Status', 'Created'].map((c) => h('th', { scope: 'col' }, c)),
          h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')),
        ),
      ),
      rows,
    ),
  );
}

function externalId(value: string | null): HTMLElement {
  return value === null ? h('span', { class: 'muted' }, 'None') : h('code', { class: 'external-id' }, value);
}

function statusBadge(status: string): HTMLElement {
  return h('span', { class: `status ${status === 'active' ? 'ok' : 'off'}` }, statusLabel(status));
}

// ---- suspend, resume, delete ---------------------------------------------------------

/**
 * The buttons for what can be done to an account: none for the operator account (the
 * server would answer 409), none without accounts:write.
 */
function actionButtons(
  account: Account,
  operatorId: string,
  shell: Shell,
  notice: HTMLElement,
  afterwards: (account: Account, message: string, next: AccountAction | null) => void,
  afterDelete?: () => void,
): HTMLElement {
  const box = h('div', { class: 'row-actions' });
  if (!session.holds('accounts:write')) return box;
  const actions = accountActions(account, operatorId);
  if (actions.length === 0) {
    box.append(h('span', { class: 'muted' }, 'Operator account: cannot be suspended or deleted'));
    return box;
  }
  const quoted = `“${account.name}”`;
  for (const action of actions) {
    const button = h(
      'button',
      {
        type: 'button',
        class: action === 'delete' ? 'danger small' : 'secondary small',
        'data-action': action,
        'aria-label': `${action === 'delete' ? 'Delete' : action === 'suspend' ? 'Suspend' : 'Resume'} account ${
          account.name
        }`,
      },
      action === 'delete' ? 'Delete' : action === 'suspend' ? 'Suspend' : 'Resume',
    );
    button.addEventListener('click', () => {
      if (action === 'resume') {
        // Resuming takes nothing away: no confirmation.
        button.disabled = true;
        setStatus(account.id, 'active')
          .then(() => afterwards(account, `Resumed the account ${quoted}`, 'suspend'))
          .catch((err: unknown) => {
            button.disabled = false;
            reportError(shell, notice, err);
          });
      } else if (action === 'suspend') {
        confirmDialog(shell, button, {
          title: `Suspend the account ${quoted}?`,
          detail:
            'Every token of it is refused at once here, and everywhere within seconds, until it is ' +
            'resumed. Nothing is deleted.',
          confirmLabel: `Suspend ${quoted}`,
          action: () => setStatus(account.id, 'suspended'),
          done: () => afterwards(account, `Suspended the account ${quoted}`, 'resume'),
        });
      } else {
        confirmDialog(shell, button, {
          title: `Delete the account ${quoted}?`,
          detail: 'Every token of it is deleted with it and refused within seconds. This cannot be undone.',
          confirmLabel: `Delete ${quoted}`,
          action: () =>
            api<undefined>('DELETE', accountPath(account.id)).catch((err: unknown) => {
              // Deleted meanwhile (another tab, the CLI): the outcome asked for.
              if (err instanceof ApiError && err.status === 404) return;
              throw err;
            }),
          done: afterDelete ?? (() => afterwards(account, `Deleted the account ${quoted}`, null)),
        });
      }
    });
    box.append(button);
  }
  return box;
}

async function setStatus(id: string, status: 'active' | 'suspended'): Promise<void> {
  await api<Account>('PATCH', accountPath(id), { status });
}

// ---- create --------------------------------------------------------------------------

function createAccountSection(shell: Shell, reload: () => Promise<void>): HTMLElement {
  const name = h('input', {
    id: 'account-name',
    name: 'name',
    maxlength: 100,
    required: true,
    autocomplete: 'off',
    'aria-describedby': 'account-name-hint account-name-error',
  });
  const nameError = h('p', { id: 'account-name-error', class: 'field-error' });
  const external = h('input', {
    id: 'account-external-id',
    name: 'external_id',
    maxlength: 200,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'account-external-id-hint account-external-id-error',
  });
  const externalError = h('p', { id: 'account-external-id-error', class: 'field-error' });
  const notice = noticeArea();
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create account');
  const form = h(
    'form',
    { novalidate: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'account-name' }, 'Name'),
      name,
      h('p', { id: 'account-name-hint', class: 'hint' }, 'The customer, e.g. Acme Corp. 1 to 100 characters.'),
      nameError,
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'account-external-id' }, 'External ID (optional)'),
      external,
      h(
        'p',
        { id: 'account-external-id-hint', class: 'hint' },
        "The platform's own id of this customer, unique across accounts. It cannot be changed later.",
      ),
      externalError,
    ),
    notice,
    submit,
  );
  const fields: Record<string, [HTMLParagraphElement, HTMLInputElement]> = {
    name: [nameError, name],
    external_id: [externalError, external],
  };
  const flag = (field: string, message: string): void => {
    const entry = fields[field];
    if (entry === undefined) return;
    entry[0].textContent = message;
    entry[1].setAttribute('aria-invalid', 'true');
  };
  const focusFirstInvalid = (): boolean => {
    const input = Object.values(fields).find(([, i]) => i.getAttribute('aria-invalid') === 'true')?.[1];
    input?.focus();
    return input !== undefined;
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    for (const [p, input] of Object.values(fields)) {
      p.textContent = '';
      input.removeAttribute('aria-invalid');
    }
    notice.replaceChildren();
    if (name.value.trim() === '') flag('name', 'Give the account a name.');
    if (focusFirstInvalid()) return;
    submit.disabled = true;
    // An empty external id means none: the field is left out (the server would refuse "").
    api<Account>('POST', '/accounts', {
      name: name.value,
      ...(external.value === '' ? {} : { external_id: external.value }),
    })
      .then(async (account) => {
        form.reset();
        await reload();
        const open = h('a', { href: `#/accounts/${account.id}` }, `Open “${account.name}” to mint its first token`);
        notice.replaceChildren(h('p', { class: 'notice info' }, `Created the account “${account.name}”. `, open));
        open.focus();
      })
      .catch((err: unknown) => {
        // 422 (bad fields) and 409 (external_id taken) both point at their field.
        if (err instanceof ApiError && (err.status === 422 || err.status === 409)) {
          for (const [field, details] of fieldErrors(err)) flag(field, details.join('; '));
        }
        if (!reportError(shell, notice, err) && !focusFirstInvalid()) submit.focus();
      })
      .finally(() => {
        submit.disabled = false;
      });
  });

  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'create-account-heading' },
    h('h2', { id: 'create-account-heading' }, 'Create an account'),
    form,
  );
}

// ---- one account ---------------------------------------------------------------------

async function accountPage(root: HTMLElement, shell: Shell, id: string): Promise<void> {
  replace(root, loading('the account'));
  const notice = noticeArea();
  const back = h('p', {}, h('a', { href: '#/accounts' }, '← All accounts'));
  let account: Account;
  try {
    account = await api<Account>('GET', accountPath(id));
  } catch (err) {
    replace(root, notice, back);
    if (err instanceof ApiError && err.status === 404) {
      showNotice(notice, 'There is no account with this id (it may have been deleted).');
    } else reportError(shell, notice, err);
    return;
  }
  const heading = document.querySelector('main h1');
  if (heading !== null) heading.textContent = `Account “${account.name}”`;
  document.title = `Account ${account.name} · infracat console`;

  const operatorId = session.identity()?.account_id ?? '';
  const redraw = (message: string, next: AccountAction | null): void => {
    announce(message);
    void accountPage(root, shell, id).then(() => {
      const target = next === null ? null : root.querySelector<HTMLElement>(`button[data-action="${next}"]`);
      focusOn(target ?? document.getElementById('details-heading') ?? root);
    });
  };
  const details = h(
    'section',
    { class: 'card', 'aria-labelledby': 'details-heading', 'data-account-id': account.id },
    h('h2', { id: 'details-heading' }, 'Details'),
    h(
      'dl',
      { class: 'details' },
      h('dt', {}, 'ID'),
      h('dd', {}, h('code', {}, account.id)),
      h('dt', {}, 'External ID'),
      h('dd', {}, externalId(account.external_id)),
      h('dt', {}, 'Status'),
      h('dd', { id: 'account-status' }, statusBadge(account.status)),
      h('dt', {}, 'Created'),
      h(
        'dd',
        {},
        h(
          'time',
          { datetime: account.created_at, title: exactTime(account.created_at) },
          shortDate(account.created_at),
        ),
      ),
    ),
    notice,
    actionButtons(
      account,
      operatorId,
      shell,
      notice,
      (a, message, next) => redraw(message, next),
      () => {
        announce(`Deleted the account “${account.name}”`);
        location.hash = '#/accounts';
      },
    ),
  );
  const quoted = `“${account.name}”`;
  replace(
    root,
    back,
    details,
    ...tokenSpace(shell, {
      path: `${accountPath(account.id)}/api-tokens`,
      operatorScopes: account.id === operatorId,
      writeScope: 'accounts:write',
      listTitle: `Tokens of ${quoted}`,
      createTitle: `Mint a token for ${quoted}`,
    }),
  );
}
