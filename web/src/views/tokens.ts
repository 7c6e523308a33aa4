// The API tokens page: the live tokens, a form to create one (its secret shown once),
// regeneration (a new secret, shown once the same way, the old one kept for a chosen
// grace period), renaming, the token's conditions (networks, not before, enabled: shown in
// the list, set at creation, edited in a dialog, Enable/Disable in one click), and
// deletion behind a confirmation that names the token. The
// operator's page of one account (views/accounts.ts) shows the same list and form on
// that account's tokens.
import { scopeOffer } from '../accounts.js';
import { api, apiPage, type CreatedToken, type RotatedToken, type ScopeInfo, type TokenView } from '../api.js';
import { announce, focusOn, h, replace } from '../dom.js';
import { exactTime, expiryFrom, isExpired, shortDate } from '../format.js';
import { ApiError, fieldErrors } from '../problems.js';
import { session } from '../session.js';
import {
  cidrsText,
  conditionLabels,
  conditionsPatch,
  GRACE_CHOICES,
  graceFrom,
  notBeforeFrom,
  notBeforeLocal,
  parseCidrs,
  rotationNote,
  tokenActions,
  tokenListPath,
  type Conditions,
  type TokenAction,
  type TokenOrder,
} from '../tokens.js';
import { cell, errorText, loading, noticeArea, reportError, showNotice, tags, timeAgo, type Shell } from './common.js';
import { confirmDialog } from './confirm.js';
import { loadMore } from './load-more.js';
import { showSecret } from './secret.js';
import { signInForm } from './signin.js';
import { usagePanel } from './usage.js';

/** Where a token list and form act: the signed-in token's own account, or one account. */
export interface TokenSpace {
  /** The API collection: "/api-tokens", or "/accounts/{id}/api-tokens". */
  path: string;
  /**
   * Whether the accounts:* scopes may be offered (only the operator account's tokens may
   * hold them). In the caller's own space the caller's scopes already decide.
   */
  operatorScopes: boolean;
  /** The scope the space's writes need: api-tokens:write, or accounts:write on an account's page. */
  writeScope: string;
  listTitle: string;
  createTitle: string;
}

const OWN_TOKENS: TokenSpace = {
  path: '/api-tokens',
  operatorScopes: true,
  writeScope: 'api-tokens:write',
  listTitle: 'All tokens',
  createTitle: 'Create a token',
};

export function tokensView(root: HTMLElement, shell: Shell, reason?: string): void {
  if (session.token() === null || session.identity() === null) {
    replace(
      root,
      signInForm(() => {
        shell.sessionChanged();
        announce(`Signed in as ${session.identity()?.name ?? ''}`);
        tokensView(root, shell);
        focusOn(document.querySelector('h1') ?? root);
      }, reason),
    );
    return;
  }
  replace(root, ...tokenSpace(shell, OWN_TOKENS));
}

/** The token list's order, kept across its reloads, and which load is the latest. */
interface ListState {
  order: TokenOrder;
  loads: number;
}

/** The secret slot, the form to create a token and the list of the space's tokens. */
export function tokenSpace(shell: Shell, space: TokenSpace): HTMLElement[] {
  const secretSlot = h('div');
  const list = h('section', { 'aria-labelledby': 'list-heading', class: 'card' });
  const state: ListState = { order: 'created', loads: 0 };
  const reload = (): Promise<void> => loadList(list, shell, space, secretSlot, state);
  void reload();
  return [secretSlot, createSection(shell, space, secretSlot, reload), list];
}

// ---- list ----------------------------------------------------------------------------

/** After a reload of the list in a new order: focus back on the header's button, and the charts that were open. */
interface Resort {
  reopen: string[];
}

async function loadList(
  section: HTMLElement,
  shell: Shell,
  space: TokenSpace,
  secretSlot: HTMLElement,
  state: ListState,
  resort?: Resort,
): Promise<void> {
  const load = ++state.loads;
  const current = (): boolean => load === state.loads;
  const notice = noticeArea();
  const refresh = h('button', { type: 'button', class: 'secondary' }, 'Refresh');
  const body = h('div', {}, loading('tokens'));
  replace(
    section,
    h('div', { class: 'section-head' }, h('h2', { id: 'list-heading' }, space.listTitle), refresh),
    notice,
    body,
  );
  refresh.addEventListener('click', () => {
    void loadList(section, shell, space, secretSlot, state).then(() => announce('Token list refreshed'));
  });
  let page: { items: TokenView[]; next: string | null };
  try {
    // The server orders the whole list (every page), by creation or by last use.
    page = await apiPage<TokenView>(tokenListPath(space.path, state.order));
  } catch (err) {
    if (!current()) return;
    if (!reportError(shell, notice, err)) body.replaceChildren();
    return;
  }
  // A later load (another order, a refresh) started meanwhile: its answer is the one to show.
  if (!current()) return;
  if (page.items.length === 0) {
    replace(body, h('p', { class: 'muted' }, 'No tokens.'));
    return;
  }
  const reload = (): Promise<void> => loadList(section, shell, space, secretSlot, state);
  const row = (t: TokenView): HTMLTableRowElement => tokenRow(t, shell, space, secretSlot, notice, reload);
  const rows = h('tbody', {}, page.items.map(row));
  // The list comes in pages: "Load more" follows the Link header to the next, in the same order.
  const [moreNotice, moreBox] = loadMore({
    id: 'tokens-more',
    next: page.next,
    rows,
    row,
    noun: 'token',
    shell,
    section,
    current,
  });
  const reorder = (order: TokenOrder): void => {
    state.order = order;
    const reopen = [...rows.querySelectorAll<HTMLTableRowElement>('tr[data-usage-of]')].map((r) => r.dataset.usageOf!);
    void loadList(section, shell, space, secretSlot, state, { reopen });
  };
  replace(body, tokenTable(rows, state.order, reorder), moreNotice, moreBox);
  if (resort === undefined) return;
  // The usage charts that were open stay open under their tokens, wherever these now are.
  for (const id of resort.reopen) {
    const t = page.items.find((x) => x.id === id);
    const button = rows.querySelector<HTMLButtonElement>(`tr[data-token-id="${CSS.escape(id)}"] [data-action="usage"]`);
    if (t !== undefined && button !== null) toggleUsage(button, t, space);
  }
  focusOn(section.querySelector<HTMLElement>('button[data-sort]') ?? section);
  announce(state.order === 'last_used' ? 'Tokens ordered by last use, most recent first' : 'Tokens in creation order');
}

/** Shows or hides the usage chart of a token, in a row under its own. */
function toggleUsage(button: HTMLButtonElement, t: TokenView, space: TokenSpace): void {
  const tr = button.closest('tr');
  if (tr === null) return;
  const open = tr.nextElementSibling;
  if (open instanceof HTMLTableRowElement && open.dataset.usageOf === t.id) {
    open.remove();
    button.setAttribute('aria-expanded', 'false');
    return;
  }
  const id = `usage-${t.id}`;
  const detail = h(
    'tr',
    { class: 'usage-row', 'data-usage-of': t.id, id },
    h(
      'td',
      { colspan: 7, 'data-label': `Usage of ${t.name}` },
      usagePanel(`${space.path}/${encodeURIComponent(t.id)}`, t.name),
    ),
  );
  tr.after(detail);
  button.setAttribute('aria-expanded', 'true');
  button.setAttribute('aria-controls', id);
}

function tokenRow(
  t: TokenView,
  shell: Shell,
  space: TokenSpace,
  secretSlot: HTMLElement,
  notice: HTMLElement,
  reload: () => Promise<void>,
): HTMLTableRowElement {
  const now = Date.now();
  const me = session.identity()?.id;
  const conditions = conditionLabels(t, now);
  const button = (action: TokenAction, label: string, onclick: (trigger: HTMLButtonElement) => void) =>
    h(
      'button',
      {
        type: 'button',
        class: 'secondary small',
        'data-action': action,
        'aria-label': `${label} token ${t.name}`,
        onclick: (e: Event) => onclick(e.currentTarget as HTMLButtonElement),
      },
      label,
    );
  const actionButton = (action: TokenAction): HTMLButtonElement => {
    switch (action) {
      case 'rename':
        return button(action, 'Rename', (b) => renameDialog(t, b, shell, space, reload));
      case 'conditions':
        return button(action, 'Conditions', (b) => conditionsDialog(t, b, shell, space, reload));
      case 'disable':
      case 'enable':
        return button(action, action === 'enable' ? 'Enable' : 'Disable', (b) =>
          setEnabled(t, action === 'enable', b, shell, space, notice, reload),
        );
      case 'regenerate':
        return button(action, 'Regenerate', (b) => confirmRegenerate(t, b, shell, space, secretSlot, reload));
    }
  };
  return h(
    'tr',
    { 'data-token-id': t.id },
    h(
      'th',
      { scope: 'row', 'data-label': 'Name' },
      h('span', { class: 'token-name' }, t.name),
      t.id === me ? h('span', { class: 'badge' }, 'this session') : null,
    ),
    cell('Scopes', tags(t.scopes, `Scopes of ${t.name}`)),
    cell(
      'Conditions',
      conditions.length === 0
        ? h('span', { class: 'muted' }, 'None')
        : h(
            'ul',
            { class: 'conditions', 'aria-label': `Conditions of ${t.name}` },
            conditions.map((c) =>
              h('li', { class: `condition ${c.kind}`, ...(c.title === undefined ? {} : { title: c.title }) }, c.text),
            ),
          ),
    ),
    cell('Created', h('time', { datetime: t.created_at, title: exactTime(t.created_at) }, shortDate(t.created_at))),
    cell(
      'Last used',
      timeAgo(t.last_used_at, now),
      t.last_used_ip === null ? null : h('span', { class: 'last-ip' }, `from ${t.last_used_ip}`),
    ),
    cell(
      'Expires',
      timeAgo(t.expires_at, now, 'Never'),
      isExpired(t.expires_at, now) ? h('span', { class: 'badge expired' }, 'Expired') : null,
    ),
    cell(
      'Actions',
      h(
        'div',
        { class: 'row-actions' },
        h(
          'button',
          {
            type: 'button',
            class: 'secondary small',
            'data-action': 'usage',
            'aria-expanded': 'false',
            'aria-label': `Usage of token ${t.name}`,
            onclick: (e: Event) => toggleUsage(e.currentTarget as HTMLButtonElement, t, space),
          },
          'Usage',
        ),
        tokenActions(t, space.writeScope, (scope) => session.holds(scope), now, me).map(actionButton),
        h(
          'button',
          {
            type: 'button',
            class: 'danger small',
            'data-action': 'delete',
            'aria-label': `Delete token ${t.name}`,
            onclick: (e: Event) =>
              confirmDelete(t, e.currentTarget as HTMLButtonElement, shell, space, () => void reload()),
          },
          'Delete',
        ),
      ),
    ),
  );
}

/**
 * The token table. Its Last used header orders the list (`reorder`, which loads it again
 * from the API in that order): by last use (most recent first), or back to oldest first.
 */
function tokenTable(
  rows: HTMLTableSectionElement,
  order: TokenOrder,
  reorder: (order: TokenOrder) => void,
): HTMLElement {
  const byUse = order === 'last_used';
  const lastUsed = h('th', { scope: 'col', 'aria-sort': byUse ? 'descending' : false });
  const sort = h('button', { type: 'button', class: 'sort', 'data-sort': 'last_used' }, 'Last used');
  lastUsed.append(sort);
  sort.addEventListener('click', () => {
    sort.disabled = true;
    reorder(byUse ? 'created' : 'last_used');
  });
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'responsive' },
      h(
        'caption',
        { class: 'visually-hidden' },
        byUse
          ? 'Tokens by last use, most recent first, never-used last (the Last used header returns to oldest ' +
              'first); hover or focus a time for the exact value'
          : 'Tokens, oldest first (the Last used header orders them by last use); ' +
              'hover or focus a time for the exact value',
      ),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Name', 'Scopes', 'Conditions', 'Created'].map((c) => h('th', { scope: 'col' }, c)),
          lastUsed,
          h('th', { scope: 'col' }, 'Expires'),
          h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')),
        ),
      ),
      rows,
    ),
  );
}

// ---- delete --------------------------------------------------------------------------

function confirmDelete(
  token: TokenView,
  trigger: HTMLButtonElement,
  shell: Shell,
  space: TokenSpace,
  reload: () => void,
): void {
  const notice = noticeArea();
  const cancel = h('button', { type: 'button', class: 'secondary', autofocus: true }, 'Cancel');
  const confirm = h('button', { type: 'button', class: 'danger' }, `Delete “${token.name}”`);
  const dialog = h(
    'dialog',
    { 'aria-labelledby': 'delete-heading', 'aria-describedby': 'delete-detail' },
    h('h2', { id: 'delete-heading' }, `Delete the token “${token.name}”?`),
    h('p', { id: 'delete-detail' }, 'Anything that uses it will be refused within seconds. This cannot be undone.'),
    notice,
    h('div', { class: 'actions' }, confirm, cancel),
  );
  const close = (): void => {
    dialog.close();
  };
  // Escape, Cancel and a successful delete all end here; focus goes back where it was.
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (trigger.isConnected) trigger.focus();
  });
  cancel.addEventListener('click', close);
  confirm.addEventListener('click', () => {
    confirm.disabled = true;
    api<undefined>('DELETE', `${space.path}/${encodeURIComponent(token.id)}`)
      .catch((err: unknown) => {
        // Deleted meanwhile (another tab, the CLI): the outcome the user asked for.
        if (err instanceof ApiError && err.status === 404) return;
        throw err;
      })
      .then(() => {
        close();
        if (token.id === session.identity()?.id) {
          shell.signedOut(`You deleted “${token.name}”, the token this session used. Sign in with another token.`);
          return;
        }
        announce(`Deleted the token “${token.name}”`);
        reload();
        focusOn(document.getElementById('list-heading') ?? document.body);
      })
      .catch((err: unknown) => {
        confirm.disabled = false;
        if (err instanceof ApiError && err.status === 401) {
          close();
          reportError(shell, notice, err);
          return;
        }
        showNotice(notice, errorText(err));
      });
  });
  document.body.append(dialog);
  dialog.showModal();
}

// ---- regenerate ----------------------------------------------------------------------

/**
 * Rotation behind the shared confirmation: it names the token and asks how long the old
 * secret keeps working (none by default). The new secret shows in the creation's panel.
 * When the token is the one this session signs in with, the session carries on with the
 * new secret (the console holds it; the old one is refused now, or after the grace period).
 */
function confirmRegenerate(
  token: TokenView,
  trigger: HTMLButtonElement,
  shell: Shell,
  space: TokenSpace,
  secretSlot: HTMLElement,
  reload: () => Promise<void>,
): void {
  const thisSession = token.id === session.identity()?.id;
  const choices = h(
    'fieldset',
    { class: 'grace', 'aria-describedby': 'grace-hint' },
    h('legend', {}, 'Grace period for the old secret'),
    GRACE_CHOICES.map((c, i) =>
      h(
        'div',
        { class: 'check' },
        h('input', {
          type: 'radio',
          name: 'grace',
          id: `grace-${c.seconds}`,
          value: String(c.seconds),
          checked: i === 0,
        }),
        h('label', { for: `grace-${c.seconds}` }, c.label),
      ),
    ),
    h(
      'p',
      { id: 'grace-hint', class: 'hint' },
      'How long whatever uses the old secret keeps working while you replace it there. ' +
        'With none, the old secret stops working at once: anything still using it is refused here ' +
        'immediately, and everywhere within seconds.',
      thisSession ? ' This session signs in with this token: it continues with the new secret.' : '',
    ),
  );
  let rotated: { token: RotatedToken; graceS: number } | null = null;
  confirmDialog(shell, trigger, {
    title: `Regenerate the token “${token.name}”?`,
    detail: 'It gets a new secret, shown once. Its id, name and scopes stay the same.',
    confirmLabel: `Regenerate “${token.name}”`,
    content: choices,
    action: async () => {
      const checked = choices.querySelector<HTMLInputElement>('input[name="grace"]:checked');
      const graceS = graceFrom(checked?.value ?? '');
      // Not one of the offered choices (nothing can uncheck all radios, but fail closed).
      if (graceS === null) throw new Error('no grace period chosen');
      const answer = await api<RotatedToken>('POST', `${space.path}/${encodeURIComponent(token.id)}/rotate`, {
        grace_period_s: graceS,
      });
      const who = session.identity();
      // From now on the session's old secret is refused (at once, or after the grace period).
      if (who !== null && answer.id === who.id) session.signIn(answer.token, who);
      rotated = { token: answer, graceS };
    },
    done: () => {
      if (rotated === null) return;
      const { token: answer, graceS } = rotated;
      showTokenSecret(secretSlot, answer, rotationNote(graceS, answer.id === session.identity()?.id, Date.now()));
      announce(`Regenerated the token “${answer.name}”`);
      void reload();
    },
  });
}

// ---- rename --------------------------------------------------------------------------

/** A PATCH of the name alone (a JSON merge patch), in a small dialog; Escape cancels. */
/**
 * A token dialog's save that failed other than on a field: a lost session signs out (the
 * dialog closes); otherwise the dialog says why and focus goes back to `focus`.
 */
function dialogFailed(
  shell: Shell,
  notice: HTMLElement,
  dialog: HTMLDialogElement,
  err: unknown,
  focus: HTMLElement,
): void {
  if (err instanceof ApiError && err.status === 401) {
    dialog.close();
    reportError(shell, notice, err);
    return;
  }
  showNotice(
    notice,
    err instanceof ApiError && err.status === 404
      ? 'This token no longer exists (it was deleted meanwhile).'
      : errorText(err),
  );
  focus.focus();
}

function renameDialog(
  token: TokenView,
  trigger: HTMLButtonElement,
  shell: Shell,
  space: TokenSpace,
  reload: () => Promise<void>,
): void {
  const notice = noticeArea();
  const input = h('input', {
    id: 'rename-name',
    name: 'name',
    maxlength: 100,
    required: true,
    autocomplete: 'off',
    value: token.name,
    'aria-describedby': 'rename-hint rename-error',
  });
  const error = fieldError('rename-error');
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save');
  const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
  const form = h(
    'form',
    { novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'rename-name' }, 'New name'), input),
    h('p', { id: 'rename-hint', class: 'hint' }, '1 to 100 characters. Its secret and scopes do not change.'),
    error,
    notice,
    h('div', { class: 'actions' }, save, cancel),
  );
  const dialog = h(
    'dialog',
    { 'aria-labelledby': 'rename-heading' },
    h('h2', { id: 'rename-heading' }, `Rename the token “${token.name}”`),
    form,
  );
  let renamed: string | null = null;
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (renamed === null) {
      if (trigger.isConnected) trigger.focus();
      return;
    }
    announce(`Renamed the token “${token.name}” to “${renamed}”`);
    void reload().then(() => {
      const again = document.querySelector<HTMLElement>(`tr[data-token-id="${token.id}"] button[data-action="rename"]`);
      focusOn(again ?? document.getElementById('list-heading') ?? document.body);
    });
  });
  cancel.addEventListener('click', () => dialog.close());
  const flag = (message: string): void => {
    error.textContent = message;
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    error.textContent = '';
    input.removeAttribute('aria-invalid');
    notice.replaceChildren();
    if (input.value.trim() === '') {
      flag('Give the token a name.');
      return;
    }
    save.disabled = true;
    api<TokenView>('PATCH', `${space.path}/${encodeURIComponent(token.id)}`, { name: input.value })
      .then((updated) => {
        renamed = updated.name;
        const who = session.identity();
        // The header names the signed-in token.
        if (who !== null && who.id === updated.id) {
          session.remember({ ...who, name: updated.name });
          shell.sessionChanged();
        }
        dialog.close();
      })
      .catch((err: unknown) => {
        save.disabled = false;
        if (err instanceof ApiError && err.status === 422) {
          const details = fieldErrors(err).get('name');
          if (details !== undefined) {
            flag(details.join('; '));
            return;
          }
        }
        dialogFailed(shell, notice, dialog, err, input);
      });
  });
  document.body.append(dialog);
  dialog.showModal();
  input.select();
}

// ---- conditions ----------------------------------------------------------------------

/** The three conditions' inputs, shared by the create form and the conditions dialog. */
interface ConditionFields {
  cidrs: HTMLTextAreaElement;
  cidrsError: HTMLParagraphElement;
  notBefore: HTMLInputElement;
  notBeforeError: HTMLParagraphElement;
  enabled: HTMLInputElement;
  fieldset: HTMLFieldSetElement;
  /** What the inputs say, as the API's fields (empty: null). */
  read(): Conditions;
}

function conditionFields(prefix: string, initial: Conditions, creating: boolean): ConditionFields {
  const id = (name: string): string => `${prefix}-${name}`;
  const cidrs = h('textarea', {
    id: id('cidrs'),
    name: 'allowed_cidrs',
    rows: 3,
    spellcheck: 'false',
    autocomplete: 'off',
    'aria-describedby': `${id('cidrs-hint')} ${id('cidrs-error')}`,
  });
  cidrs.value = cidrsText(initial.allowed_cidrs);
  const notBefore = h('input', {
    id: id('not-before'),
    name: 'not_before',
    type: 'datetime-local',
    step: 1,
    value: notBeforeLocal(initial.not_before),
    'aria-describedby': `${id('not-before-hint')} ${id('not-before-error')}`,
  });
  const enabled = h('input', {
    id: id('enabled'),
    name: 'enabled',
    type: 'checkbox',
    checked: initial.enabled,
    'aria-describedby': id('enabled-hint'),
  });
  const cidrsError = fieldError(id('cidrs-error'));
  const notBeforeError = fieldError(id('not-before-error'));
  // Left empty at creation, a limited calling token hands down its own (the server's rule).
  const inherited = creating ? ', or the networks of the token you are signed in with, when it has some' : '';
  const fieldset = h(
    'fieldset',
    { class: 'conditions-fields' },
    h('legend', {}, creating ? 'Conditions (optional)' : 'Conditions'),
    h(
      'div',
      { class: 'field' },
      h('label', { for: id('cidrs') }, 'Allowed networks'),
      cidrs,
      h(
        'p',
        { id: id('cidrs-hint'), class: 'hint' },
        `One CIDR per line or comma-separated, e.g. 203.0.113.0/24 or 2001:db8::/32. Empty: anywhere${inherited}.`,
      ),
      cidrsError,
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: id('not-before') }, 'Not before (UTC)'),
      notBefore,
      h(
        'p',
        { id: id('not-before-hint'), class: 'hint' },
        'The token is refused until this time, read as UTC. Empty: valid at once.',
      ),
      notBeforeError,
    ),
    h(
      'div',
      { class: 'check' },
      enabled,
      h('label', { for: id('enabled') }, 'Enabled'),
      h('span', { id: id('enabled-hint'), class: 'hint' }, 'Unchecked: refused everywhere, kept.'),
    ),
  );
  return {
    cidrs,
    cidrsError,
    notBefore,
    notBeforeError,
    enabled,
    fieldset,
    read: () => ({
      allowed_cidrs: parseCidrs(cidrs.value),
      not_before: notBeforeFrom(notBefore.value),
      enabled: enabled.checked,
    }),
  };
}

/**
 * A merge patch of the conditions that changed, in a small dialog; emptying a field sends
 * null (anywhere, valid at once). A 422 (a bad network, a time past the expiry) shows its
 * detail next to the field.
 */
function conditionsDialog(
  token: TokenView,
  trigger: HTMLButtonElement,
  shell: Shell,
  space: TokenSpace,
  reload: () => Promise<void>,
): void {
  const notice = noticeArea();
  const fields = conditionFields('cond', token, false);
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save');
  const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
  const form = h('form', { novalidate: true }, fields.fieldset, notice, h('div', { class: 'actions' }, save, cancel));
  const dialog = h(
    'dialog',
    { 'aria-labelledby': 'cond-heading' },
    h('h2', { id: 'cond-heading' }, `Conditions of the token “${token.name}”`),
    form,
  );
  let saved = false;
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (!saved) {
      if (trigger.isConnected) trigger.focus();
      return;
    }
    announce(`Saved the conditions of the token “${token.name}”`);
    void reload().then(() => {
      const again = document.querySelector<HTMLElement>(
        `tr[data-token-id="${token.id}"] button[data-action="conditions"]`,
      );
      focusOn(again ?? document.getElementById('list-heading') ?? document.body);
    });
  });
  cancel.addEventListener('click', () => dialog.close());
  const errorsFor: Record<string, [HTMLParagraphElement, HTMLElement]> = {
    allowed_cidrs: [fields.cidrsError, fields.cidrs],
    not_before: [fields.notBeforeError, fields.notBefore],
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    notice.replaceChildren();
    for (const [p, input] of Object.values(errorsFor)) {
      p.textContent = '';
      input.removeAttribute('aria-invalid');
    }
    const patch = conditionsPatch(token, fields.read());
    if (Object.keys(patch).length === 0) {
      dialog.close();
      return;
    }
    save.disabled = true;
    api<TokenView>('PATCH', `${space.path}/${encodeURIComponent(token.id)}`, patch)
      .then(() => {
        saved = true;
        dialog.close();
      })
      .catch((err: unknown) => {
        save.disabled = false;
        if (err instanceof ApiError && err.status === 422) {
          let first: HTMLElement | null = null;
          for (const [field, details] of fieldErrors(err)) {
            const entry = errorsFor[field];
            if (entry === undefined) continue;
            entry[0].textContent = details.join('; ');
            entry[1].setAttribute('aria-invalid', 'true');
            first ??= entry[1];
          }
          if (first !== null) {
            first.focus();
            return;
          }
        }
        dialogFailed(shell, notice, dialog, err, fields.cidrs);
      });
  });
  document.body.append(dialog);
  dialog.showModal();
  fields.cidrs.focus();
}

/** Enable or Disable in one click (a merge patch of `enabled`); the list then shows the result. */
function setEnabled(
  token: TokenView,
  enabled: boolean,
  trigger: HTMLButtonElement,
  shell: Shell,
  space: TokenSpace,
  notice: HTMLElement,
  reload: () => Promise<void>,
): void {
  trigger.disabled = true;
  notice.replaceChildren();
  api<TokenView>('PATCH', `${space.path}/${encodeURIComponent(token.id)}`, { enabled })
    .then(async () => {
      announce(`${enabled ? 'Enabled' : 'Disabled'} the token “${token.name}”`);
      await reload();
      // Focus stays on the row's toggle, now saying the opposite.
      const again = document.querySelector<HTMLElement>(
        `tr[data-token-id="${token.id}"] button[data-action="${enabled ? 'disable' : 'enable'}"]`,
      );
      focusOn(again ?? document.getElementById('list-heading') ?? document.body);
    })
    .catch((err: unknown) => {
      trigger.disabled = false;
      if (!reportError(shell, notice, err)) trigger.focus();
    });
}

// ---- create --------------------------------------------------------------------------

const EXPIRY_CHOICES: [value: string, label: string][] = [
  ['7', 'In 7 days'],
  ['30', 'In 30 days'],
  ['90', 'In 90 days'],
  ['365', 'In 1 year'],
  ['custom', 'On a date…'],
  ['never', 'Never'],
];

function fieldError(id: string): HTMLParagraphElement {
  return h('p', { id, class: 'field-error' });
}

function createSection(
  shell: Shell,
  space: TokenSpace,
  secretSlot: HTMLElement,
  reload: () => Promise<void>,
): HTMLElement {
  const name = h('input', {
    id: 'new-name',
    name: 'name',
    maxlength: 100,
    required: true,
    autocomplete: 'off',
    'aria-describedby': 'new-name-hint new-name-error',
  });
  const nameError = fieldError('new-name-error');
  const scopeBox = h('div', { class: 'scope-groups' }, loading('scopes'));
  const scopesError = fieldError('scopes-error');
  const expiry = h(
    'select',
    { id: 'new-expiry', name: 'expiry', 'aria-describedby': 'new-expiry-error' },
    EXPIRY_CHOICES.map(([v, label]) => h('option', { value: v, selected: v === '90' }, label)),
  );
  const date = h('input', {
    id: 'new-expiry-date',
    name: 'expiry_date',
    type: 'date',
    'aria-describedby': 'new-expiry-error',
  });
  const dateField = h(
    'div',
    { class: 'field', hidden: true },
    h('label', { for: 'new-expiry-date' }, 'Expiry date (UTC; the token works until the end of that day)'),
    date,
  );
  const expiryError = fieldError('new-expiry-error');
  const conditions = conditionFields('new', { allowed_cidrs: null, not_before: null, enabled: true }, true);
  const notice = noticeArea();
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create token');
  expiry.addEventListener('change', () => {
    dateField.hidden = expiry.value !== 'custom';
  });

  const form = h(
    'form',
    { novalidate: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'new-name' }, 'Name'),
      name,
      h('p', { id: 'new-name-hint', class: 'hint' }, 'What the token is for, e.g. ci-deploy. 1 to 100 characters.'),
      nameError,
    ),
    h(
      'fieldset',
      { 'aria-describedby': 'scopes-hint scopes-error' },
      h('legend', {}, 'Scopes'),
      h(
        'p',
        { id: 'scopes-hint', class: 'hint' },
        'write includes read. A token can grant only scopes it holds itself, so scopes yours lacks are disabled.',
        space.operatorScopes ? '' : ' Some scopes belong to the operator account only.',
      ),
      scopeBox,
      scopesError,
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'new-expiry' }, 'Expires'),
      expiry,
      h('p', { class: 'hint' }, 'A token never outlives the token that creates it.'),
    ),
    dateField,
    expiryError,
    conditions.fieldset,
    notice,
    submit,
  );

  void api<ScopeInfo[]>('GET', '/scopes')
    .then((scopes) => replace(scopeBox, scopePicker(scopes, space)))
    .catch((err: unknown) => {
      scopeBox.replaceChildren();
      reportError(shell, notice, err);
    });

  const errorsFor: Record<string, [HTMLParagraphElement, HTMLElement]> = {
    name: [nameError, name],
    scopes: [scopesError, scopeBox],
    expires_at: [expiryError, expiry.value === 'custom' ? date : expiry],
    allowed_cidrs: [conditions.cidrsError, conditions.cidrs],
    not_before: [conditions.notBeforeError, conditions.notBefore],
  };
  const clearErrors = (): void => {
    for (const [p, input] of Object.values(errorsFor)) {
      p.textContent = '';
      input.removeAttribute('aria-invalid');
    }
    notice.replaceChildren();
  };
  const flag = (field: string, message: string): void => {
    const entry = errorsFor[field];
    if (entry === undefined) return;
    entry[0].textContent = message;
    entry[1].setAttribute('aria-invalid', 'true');
  };

  /** Focus goes to the first field with a problem (for the scopes, their first box). */
  const focusFirstInvalid = (): boolean => {
    for (const [, input] of Object.values(errorsFor)) {
      if (input.getAttribute('aria-invalid') !== 'true') continue;
      const target = input === scopeBox ? scopeBox.querySelector<HTMLInputElement>('input:not([disabled])') : input;
      target?.focus();
      return true;
    }
    return false;
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearErrors();
    errorsFor.expires_at = [expiryError, expiry.value === 'custom' ? date : expiry];
    const scopes = [...form.querySelectorAll<HTMLInputElement>('input[name="scope"]:checked')].map((c) => c.value);
    const expires = expiryFrom(expiry.value, date.value, Date.now());
    // What the browser can tell on its own; everything else is the server's to judge (422).
    if (name.value.trim() === '') flag('name', 'Give the token a name.');
    if (scopes.length === 0) flag('scopes', 'Choose at least one scope.');
    if (expires === '') flag('expires_at', 'Choose the expiry date.');
    if (focusFirstInvalid()) return;
    submit.disabled = true;
    // "Never" sends no expires_at: the new token then lives as long as the signed-in one
    // (forever, if that never expires), since a token never outlives its creator. Empty
    // conditions are left out too: the server's defaults (or the signed-in token's own
    // networks and not_before, when it has them).
    const { allowed_cidrs, not_before, enabled } = conditions.read();
    api<CreatedToken>('POST', space.path, {
      name: name.value,
      scopes,
      ...(expires === null ? {} : { expires_at: expires }),
      ...(allowed_cidrs === null ? {} : { allowed_cidrs }),
      ...(not_before === null ? {} : { not_before }),
      ...(enabled ? {} : { enabled }),
    })
      .then(async (created) => {
        form.reset();
        dateField.hidden = true;
        showTokenSecret(secretSlot, created);
        await reload();
      })
      .catch((err: unknown) => {
        if (err instanceof ApiError && err.status === 422) {
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
    { class: 'card', 'aria-labelledby': 'create-heading' },
    h('h2', { id: 'create-heading' }, space.createTitle),
    form,
  );
}

function scopePicker(scopes: readonly ScopeInfo[], space: TokenSpace): HTMLElement[] {
  const byResource = new Map<string, ScopeInfo[]>();
  for (const s of scopes) byResource.set(s.resource, [...(byResource.get(s.resource) ?? []), s]);
  return [...byResource].map(([resource, list]) =>
    h(
      'div',
      { class: 'scope-group', role: 'group', 'aria-labelledby': `res-${resource}` },
      h('span', { id: `res-${resource}`, class: 'resource' }, resource),
      list.map((s) => {
        const offer = scopeOffer(s, (scope) => session.holds(scope), space.operatorScopes);
        const held = offer.enabled;
        const id = `scope-${s.scope.replace(':', '-')}`;
        return h(
          'div',
          { class: held ? 'scope' : 'scope disabled' },
          h('input', {
            type: 'checkbox',
            id,
            name: 'scope',
            value: s.scope,
            disabled: !held,
            'aria-describedby': `${id}-desc`,
          }),
          h('label', { for: id }, s.action),
          h('span', { id: `${id}-desc`, class: 'hint' }, s.description, offer.enabled ? '' : ` (${offer.reason})`),
        );
      }),
    ),
  );
}

// ---- the secret, once ----------------------------------------------------------------

/**
 * The panel that shows a token's secret once, after creation or regeneration (`note`:
 * what became of the old secret).
 */
function showTokenSecret(slot: HTMLElement, created: CreatedToken, note?: string): void {
  showSecret(slot, {
    heading: `Copy the token “${created.name}” now`,
    kept: 'infracat keeps only a hash of it and cannot show it again.',
    label: 'New token',
    secret: created.token,
    ...(note === undefined ? {} : { note }),
    after: () => document.getElementById('list-heading'),
  });
}
