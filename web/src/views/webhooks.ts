// The Webhooks page (#/webhooks): the account's webhooks (URL, description, events,
// state, creation), paged with "Load more"; with webhooks:write, a form to create one (its
// signing secret shown once), and per webhook Send a test, Disable/Enable, Rotate secret
// (the new secret shown once) and Delete behind a confirmation. Each webhook's delivery
// log opens under its row, newest first, paged the same way. Offered in the nav only to
// a token holding webhooks:read.
import {
  api,
  apiPage,
  type CreatedWebhook,
  type Webhook,
  type WebhookDelivery,
  type WebhookTestQueued,
} from '../api.js';
import { announce, focusOn, h, replace } from '../dom.js';
import { exactTime, relativeTime, shortDate } from '../format.js';
import { ApiError, fieldErrors } from '../problems.js';
import { session } from '../session.js';
import {
  createBody,
  deliveriesPath,
  deliveryOutcome,
  durationText,
  eventGroups,
  webhookActions,
  webhookName,
  webhookState,
  type WebhookAction,
} from '../webhooks.js';
import { cell, loading, noticeArea, refusePage, reportError, showNotice, tags, type Shell } from './common.js';
import { confirmDialog } from './confirm.js';
import { loadMore } from './load-more.js';
import { showSecret } from './secret.js';

/** Shows why the signed-in token (or no token) cannot use the page; false when it can. */
function refusal(root: HTMLElement): boolean {
  return refusePage(root, 'webhooks:read', {
    signedOut: "Webhooks send your account's events to a URL of yours. Sign in first.",
    lacking: 'The Webhooks page needs a token holding webhooks:read. This token lacks it.',
  });
}

export function webhooksView(root: HTMLElement, shell: Shell): void {
  if (refusal(root)) return;
  const secretSlot = h('div');
  const list = h('section', { class: 'card', 'aria-labelledby': 'list-heading' });
  const state: ListState = { loads: 0 };
  const reload = (): Promise<void> => loadList(list, shell, secretSlot, state);
  void reload();
  replace(root, secretSlot, session.holds('webhooks:write') ? createSection(shell, secretSlot, reload) : null, list);
}

/** Which load of the list is the latest: a late answer of an earlier one is dropped. */
interface ListState {
  loads: number;
}

// ---- list ----------------------------------------------------------------------------

async function loadList(section: HTMLElement, shell: Shell, secretSlot: HTMLElement, state: ListState): Promise<void> {
  const load = ++state.loads;
  const current = (): boolean => load === state.loads;
  const notice = noticeArea();
  const refresh = h('button', { type: 'button', class: 'secondary' }, 'Refresh');
  const body = h('div', {}, loading('webhooks'));
  replace(
    section,
    h('div', { class: 'section-head' }, h('h2', { id: 'list-heading' }, 'All webhooks'), refresh),
    notice,
    body,
  );
  refresh.addEventListener('click', () => {
    void loadList(section, shell, secretSlot, state).then(() => announce('Webhook list refreshed'));
  });
  let page: { items: Webhook[]; next: string | null };
  try {
    page = await apiPage<Webhook>('/webhooks');
  } catch (err) {
    if (!current()) return;
    if (!reportError(shell, notice, err)) body.replaceChildren();
    return;
  }
  if (!current()) return;
  if (page.items.length === 0) {
    replace(body, h('p', { class: 'muted' }, 'No webhooks.'));
    return;
  }
  const reload = (): Promise<void> => loadList(section, shell, secretSlot, state);
  const row = (w: Webhook): HTMLTableRowElement => webhookRow(w, shell, secretSlot, notice, reload);
  const rows = h('tbody', {}, page.items.map(row));
  const [moreNotice, moreBox] = loadMore({
    id: 'webhooks-more',
    next: page.next,
    rows,
    row,
    noun: 'webhook',
    shell,
    section,
    current,
  });
  replace(body, webhookTable(rows), moreNotice, moreBox);
}

function webhookTable(rows: HTMLTableSectionElement): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'responsive webhooks' },
      h(
        'caption',
        { class: 'visually-hidden' },
        'Webhooks, oldest first; Deliveries opens the delivery log of one under it',
      ),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['URL', 'Description', 'Events', 'State', 'Created'].map((c) => h('th', { scope: 'col' }, c)),
          h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')),
        ),
      ),
      rows,
    ),
  );
}

function webhookRow(
  w: Webhook,
  shell: Shell,
  secretSlot: HTMLElement,
  notice: HTMLElement,
  reload: () => Promise<void>,
): HTMLTableRowElement {
  const now = Date.now();
  const name = webhookName(w);
  const state = webhookState(w, now);
  const button = (action: WebhookAction, label: string, onclick: (trigger: HTMLButtonElement) => void) =>
    h(
      'button',
      {
        type: 'button',
        class: action === 'delete' ? 'danger small' : 'secondary small',
        'data-action': action,
        'aria-label': `${label} webhook ${name}`,
        onclick: (e: Event) => onclick(e.currentTarget as HTMLButtonElement),
      },
      label,
    );
  const actionButton = (action: WebhookAction): HTMLButtonElement => {
    switch (action) {
      case 'test':
        return button(action, 'Send test', (b) => sendTest(w, b, shell, notice));
      case 'disable':
      case 'enable':
        return button(action, action === 'enable' ? 'Enable' : 'Disable', (b) =>
          setEnabled(w, action === 'enable', b, shell, notice, reload),
        );
      case 'rotate':
        return button(action, 'Rotate secret', (b) => confirmRotate(w, b, shell, secretSlot, reload));
      case 'delete':
        return button(action, 'Delete', (b) => confirmDelete(w, b, shell, reload));
    }
  };
  return h(
    'tr',
    { 'data-webhook-id': w.id },
    h('th', { scope: 'row', 'data-label': 'URL' }, h('code', { class: 'webhook-url' }, w.url)),
    cell(
      'Description',
      w.description === null
        ? h('span', { class: 'muted' }, 'None')
        : h('span', { class: 'webhook-description' }, w.description),
    ),
    cell(
      'Events',
      tags(w.events, `Events of ${name}`),
      w.all_accounts ? h('span', { class: 'badge' }, 'every account') : null,
    ),
    cell(
      'State',
      h('span', { class: `status webhook-state ${state.ok ? 'ok' : 'off'}` }, state.text),
      state.notes.map((n) => h('span', { class: 'hint webhook-note' }, n)),
    ),
    cell('Created', h('time', { datetime: w.created_at, title: exactTime(w.created_at) }, shortDate(w.created_at))),
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
            'data-action': 'deliveries',
            'aria-expanded': 'false',
            'aria-label': `Deliveries of webhook ${name}`,
            onclick: (e: Event) => toggleDeliveries(e.currentTarget as HTMLButtonElement, w, shell),
          },
          'Deliveries',
        ),
        webhookActions(w, (scope) => session.holds(scope)).map(actionButton),
      ),
    ),
  );
}

// ---- the delivery log ----------------------------------------------------------------

/** An open delivery log: reload it (its first page again), and say something in it. */
interface DeliveryLog {
  reload(): Promise<void>;
  status: HTMLElement;
}

const logs = new WeakMap<HTMLTableRowElement, DeliveryLog>();

/** Opens (or closes) the delivery log of a webhook in a row under its own; returns it when open. */
function toggleDeliveries(button: HTMLButtonElement, w: Webhook, shell: Shell, keepOpen = false): DeliveryLog | null {
  const tr = button.closest('tr');
  if (tr === null) return null;
  const open = tr.nextElementSibling;
  if (open instanceof HTMLTableRowElement && open.dataset.deliveriesOf === w.id) {
    if (keepOpen) return logs.get(open) ?? null;
    open.remove();
    button.setAttribute('aria-expanded', 'false');
    return null;
  }
  const id = `deliveries-${w.id}`;
  const td = h('td', { colspan: 6, 'data-label': `Deliveries of ${webhookName(w)}` });
  const detail = h('tr', { class: 'deliveries-row', 'data-deliveries-of': w.id, id }, td);
  const log = deliveryLog(td, w, shell);
  logs.set(detail, log);
  tr.after(detail);
  button.setAttribute('aria-expanded', 'true');
  button.setAttribute('aria-controls', id);
  return log;
}

function deliveryLog(container: HTMLElement, w: Webhook, shell: Shell): DeliveryLog {
  const name = webhookName(w);
  const headingId = `deliveries-heading-${w.id}`;
  const notice = noticeArea();
  // What a test event came to; screen readers hear it from the page's own status region.
  const status = h('p', { class: 'hint test-status' });
  const refresh = h(
    'button',
    { type: 'button', class: 'secondary small', 'aria-label': `Refresh the deliveries of webhook ${name}` },
    'Refresh',
  );
  const body = h('div', {}, loading('deliveries'));
  const section = h(
    'section',
    { class: 'deliveries', 'aria-labelledby': headingId },
    h('div', { class: 'section-head' }, h('h3', { id: headingId }, `Delivery log of ${name}`), refresh),
    status,
    notice,
    body,
  );
  replace(container, section);
  let loads = 0;
  const reload = async (): Promise<void> => {
    const load = ++loads;
    const current = (): boolean => load === loads;
    notice.replaceChildren();
    let page: { items: WebhookDelivery[]; next: string | null };
    try {
      page = await apiPage<WebhookDelivery>(deliveriesPath(w.id));
    } catch (err) {
      if (current() && !reportError(shell, notice, err)) body.replaceChildren();
      return;
    }
    if (!current()) return;
    if (page.items.length === 0) {
      replace(body, h('p', { class: 'muted' }, 'No deliveries yet.'));
      return;
    }
    const now = Date.now();
    const row = (d: WebhookDelivery): HTMLTableRowElement => deliveryRow(d, now);
    const rows = h('tbody', {}, page.items.map(row));
    const [moreNotice, moreBox] = loadMore({
      id: `deliveries-more-${w.id}`,
      next: page.next,
      rows,
      row,
      noun: 'delivery attempt',
      shell,
      section,
      current,
    });
    replace(body, deliveryTable(rows, name), moreNotice, moreBox);
  };
  refresh.addEventListener('click', () => {
    void reload().then(() => announce(`Delivery log of ${name} refreshed`));
  });
  void reload();
  return { reload, status };
}

function deliveryTable(rows: HTMLTableSectionElement, name: string): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'responsive deliveries' },
      h('caption', { class: 'visually-hidden' }, `Delivery attempts to ${name}, newest first; times are UTC`),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Time', 'Event', 'Event id', 'Attempt', 'Outcome', 'Response', 'Duration'].map((c) =>
            h('th', { scope: 'col' }, c),
          ),
        ),
      ),
      rows,
    ),
  );
}

function deliveryRow(d: WebhookDelivery, now: number): HTMLTableRowElement {
  const outcome = deliveryOutcome(d, now);
  return h(
    'tr',
    {
      'data-delivery-id': d.id,
      'data-event-id': d.event_id,
      'data-outcome': outcome.ok ? 'succeeded' : 'failed',
    },
    h(
      'th',
      { scope: 'row', 'data-label': 'Time' },
      h('time', { datetime: d.attempted_at, title: relativeTime(d.attempted_at, now) }, exactTime(d.attempted_at)),
    ),
    cell('Event', h('code', { class: 'event-type' }, d.event_type)),
    cell('Event id', h('code', { class: 'event-id' }, d.event_id)),
    cell('Attempt', String(d.attempt)),
    cell(
      'Outcome',
      h('span', { class: `status outcome ${outcome.ok ? 'ok' : 'off'}` }, outcome.label),
      outcome.retry === null
        ? null
        : h('span', { class: 'hint retry', title: exactTime(d.next_attempt_at!) }, outcome.retry),
    ),
    cell(
      'Response',
      h('span', { class: 'response' }, outcome.response),
      outcome.detail === null ? null : h('span', { class: 'hint response-detail' }, outcome.detail),
    ),
    cell('Duration', durationText(d.duration_ms)),
  );
}

// ---- row actions ---------------------------------------------------------------------

/** How long, at most, the page watches for a test event's first attempt after queueing it. */
const TEST_WATCH_POLLS = 30;
const TEST_WATCH_EVERY_MS = 1000;

/**
 * Queues a test event (202), opens the webhook's delivery log and watches its first page,
 * a bounded number of times, until the event's first attempt shows; then says how it went.
 */
function sendTest(w: Webhook, trigger: HTMLButtonElement, shell: Shell, notice: HTMLElement): void {
  const name = webhookName(w);
  trigger.disabled = true;
  notice.replaceChildren();
  api<WebhookTestQueued>('POST', `/webhooks/${encodeURIComponent(w.id)}/test`)
    .then((queued) => {
      const toggle = trigger.closest('tr')?.querySelector<HTMLButtonElement>('button[data-action="deliveries"]');
      const log = toggle === null || toggle === undefined ? null : toggleDeliveries(toggle, w, shell, true);
      const waiting = `Test event ${queued.event_id} queued for ${name}; waiting for its delivery…`;
      if (log !== null) log.status.textContent = waiting;
      announce(`Test event queued for ${name}`);
      void watchTest(w, queued.event_id, log, trigger);
    })
    .catch((err: unknown) => {
      if (!reportError(shell, notice, err)) trigger.focus();
    })
    .finally(() => {
      trigger.disabled = false;
    });
}

async function watchTest(w: Webhook, eventId: string, log: DeliveryLog | null, trigger: HTMLElement): Promise<void> {
  const name = webhookName(w);
  for (let i = 0; i < TEST_WATCH_POLLS; i++) {
    await new Promise((resolve) => window.setTimeout(resolve, TEST_WATCH_EVERY_MS));
    // The page moved on (another route, the list reloaded): nobody is watching.
    if (!trigger.isConnected) return;
    let attempt: WebhookDelivery | undefined;
    try {
      attempt = (await apiPage<WebhookDelivery>(deliveriesPath(w.id))).items.find((d) => d.event_id === eventId);
    } catch {
      // A failed look is as good as none: the next one (or Refresh) tries again.
      continue;
    }
    if (attempt === undefined) continue;
    const outcome = deliveryOutcome(attempt, Date.now());
    const said = `Test event to ${name}: ${outcome.label.toLowerCase()}, ${outcome.response}`;
    if (log !== null) {
      await log.reload();
      log.status.textContent = said;
    }
    announce(said);
    return;
  }
  if (log !== null)
    log.status.textContent = `No attempt of the test event ${eventId} yet: Refresh shows it once infracat makes one.`;
}

/** Enable or Disable in one click (a merge patch of `enabled`); the list then shows the result. */
function setEnabled(
  w: Webhook,
  enabled: boolean,
  trigger: HTMLButtonElement,
  shell: Shell,
  notice: HTMLElement,
  reload: () => Promise<void>,
): void {
  trigger.disabled = true;
  notice.replaceChildren();
  api<Webhook>('PATCH', `/webhooks/${encodeURIComponent(w.id)}`, { enabled })
    .then(async () => {
      announce(`${enabled ? 'Enabled' : 'Disabled'} the webhook “${webhookName(w)}”`);
      await reload();
      // Focus stays on the row's toggle, now saying the opposite.
      const again = document.querySelector<HTMLElement>(
        `tr[data-webhook-id="${w.id}"] button[data-action="${enabled ? 'disable' : 'enable'}"]`,
      );
      focusOn(again ?? document.getElementById('list-heading') ?? document.body);
    })
    .catch((err: unknown) => {
      trigger.disabled = false;
      if (!reportError(shell, notice, err)) trigger.focus();
    });
}

function confirmDelete(w: Webhook, trigger: HTMLButtonElement, shell: Shell, reload: () => Promise<void>): void {
  const name = webhookName(w);
  confirmDialog(shell, trigger, {
    title: `Delete the webhook “${name}”?`,
    detail: 'Nothing more is sent to it, and what it had still to deliver is dropped. This cannot be undone.',
    confirmLabel: 'Delete the webhook',
    action: async () => {
      await api<undefined>('DELETE', `/webhooks/${encodeURIComponent(w.id)}`).catch((err: unknown) => {
        // Deleted meanwhile (another tab, the CLI): the outcome asked for.
        if (err instanceof ApiError && err.status === 404) return;
        throw err;
      });
    },
    done: () => {
      announce(`Deleted the webhook “${name}”`);
      void reload().then(() => focusOn(document.getElementById('list-heading') ?? document.body));
    },
  });
}

/** A new signing secret behind the shared confirmation; shown once in the secret panel. */
function confirmRotate(
  w: Webhook,
  trigger: HTMLButtonElement,
  shell: Shell,
  secretSlot: HTMLElement,
  reload: () => Promise<void>,
): void {
  const name = webhookName(w);
  let rotated: CreatedWebhook | null = null;
  confirmDialog(shell, trigger, {
    title: `Rotate the signing secret of “${name}”?`,
    detail:
      'The webhook gets a new signing secret, shown once. For 24 hours every delivery is signed with both, ' +
      'so your receiver can switch to the new one without missing a delivery.',
    confirmLabel: 'Rotate the secret',
    action: async () => {
      rotated = await api<CreatedWebhook>('POST', `/webhooks/${encodeURIComponent(w.id)}/rotate-secret`);
    },
    done: () => {
      if (rotated === null) return;
      showWebhookSecret(
        secretSlot,
        rotated,
        rotated.previous_secret_expires_at === null
          ? undefined
          : `The previous secret also signs until ${exactTime(rotated.previous_secret_expires_at)}.`,
      );
      announce(`Rotated the signing secret of “${name}”`);
      void reload();
    },
  });
}

function showWebhookSecret(slot: HTMLElement, created: CreatedWebhook, note?: string): void {
  showSecret(slot, {
    heading: `Copy the signing secret of “${webhookName(created)}” now`,
    kept: 'infracat keeps it encrypted, to sign each delivery, and cannot show it again.',
    label: 'Signing secret',
    secret: created.secret,
    ...(note === undefined ? {} : { note }),
    after: () => document.getElementById('list-heading'),
  });
}

// ---- create --------------------------------------------------------------------------

function createSection(shell: Shell, secretSlot: HTMLElement, reload: () => Promise<void>): HTMLElement {
  const url = h('input', {
    id: 'new-url',
    name: 'url',
    type: 'url',
    maxlength: 2048,
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'new-url-hint new-url-error',
  });
  const urlError = h('p', { id: 'new-url-error', class: 'field-error' });
  const description = h('input', {
    id: 'new-description',
    name: 'description',
    maxlength: 100,
    autocomplete: 'off',
    'aria-describedby': 'new-description-hint new-description-error',
  });
  const descriptionError = h('p', { id: 'new-description-error', class: 'field-error' });
  const events = h(
    'div',
    { class: 'scope-groups event-groups' },
    eventGroups().map((g) =>
      h(
        'div',
        { class: 'scope-group', role: 'group', 'aria-labelledby': `events-${g.resource}` },
        h('span', { id: `events-${g.resource}`, class: 'resource' }, g.resource),
        g.events.map((e) => {
          const id = `event-${e.type.replace('.', '-')}`;
          return h(
            'div',
            { class: 'scope' },
            h('input', { type: 'checkbox', id, name: 'event', value: e.type, 'aria-describedby': `${id}-desc` }),
            h('label', { for: id }, e.type.slice(e.type.indexOf('.') + 1)),
            h('span', { id: `${id}-desc`, class: 'hint' }, e.description),
          );
        }),
      ),
    ),
  );
  const eventsError = h('p', { id: 'events-error', class: 'field-error' });
  const notice = noticeArea();
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create webhook');
  const form = h(
    'form',
    { novalidate: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'new-url' }, 'URL'),
      url,
      h(
        'p',
        { id: 'new-url-hint', class: 'hint' },
        'Where events are POSTed, signed: an https URL whose host has public addresses only.',
      ),
      urlError,
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'new-description' }, 'Description'),
      description,
      h('p', { id: 'new-description-hint', class: 'hint' }, 'Optional: what it is for. At most 100 characters.'),
      descriptionError,
    ),
    h(
      'fieldset',
      { 'aria-describedby': 'events-hint events-error' },
      h('legend', {}, 'Events'),
      h(
        'p',
        { id: 'events-hint', class: 'hint' },
        'The events it receives. Send test reaches it whatever it subscribes to.',
      ),
      events,
      eventsError,
    ),
    notice,
    submit,
  );

  const errorsFor: Record<string, [HTMLParagraphElement, HTMLElement]> = {
    url: [urlError, url],
    description: [descriptionError, description],
    events: [eventsError, events],
  };
  const clearErrors = (): void => {
    for (const [p, input] of Object.values(errorsFor)) {
      p.textContent = '';
      input.removeAttribute('aria-invalid');
    }
    notice.replaceChildren();
  };
  const flag = (field: string, message: string): boolean => {
    const entry = errorsFor[field];
    if (entry === undefined) return false;
    entry[0].textContent = message;
    entry[1].setAttribute('aria-invalid', 'true');
    return true;
  };
  /** Focus goes to the first field with a problem (for the events, their first box). */
  const focusFirstInvalid = (): boolean => {
    for (const [, input] of Object.values(errorsFor)) {
      if (input.getAttribute('aria-invalid') !== 'true') continue;
      (input === events ? events.querySelector<HTMLInputElement>('input') : input)?.focus();
      return true;
    }
    return false;
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearErrors();
    const checked = [...form.querySelectorAll<HTMLInputElement>('input[name="event"]:checked')].map((c) => c.value);
    const body = createBody(url.value, description.value, checked);
    // What the browser can tell on its own; whether the URL is an allowed target is the server's to judge.
    if (body.url === '') flag('url', 'Give the URL events are sent to.');
    if (body.events.length === 0) flag('events', 'Choose at least one event.');
    if (focusFirstInvalid()) return;
    submit.disabled = true;
    api<CreatedWebhook>('POST', '/webhooks', body)
      .then(async (created) => {
        form.reset();
        showWebhookSecret(secretSlot, created);
        announce(`Created the webhook “${webhookName(created)}”`);
        await reload();
      })
      .catch((err: unknown) => {
        if (err instanceof ApiError && err.status === 422) {
          // Each problem next to its field; one about no field of the form (all_accounts) in the notice.
          const elsewhere: string[] = [];
          for (const [field, details] of fieldErrors(err)) {
            if (!flag(field, details.join('; '))) elsewhere.push(...details);
          }
          if (elsewhere.length > 0) {
            showNotice(notice, elsewhere.join('; '));
            if (!focusFirstInvalid()) submit.focus();
            return;
          }
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
    h('h2', { id: 'create-heading' }, 'Create a webhook'),
    form,
  );
}
