// A modal confirmation for an action that cannot be taken back (or refuses every token of
// an account, or a token's old secret): it names what it acts on, may ask how (a grace
// period), the safe choice has focus, Escape cancels, and the server's refusal shows
// inside it. Focus returns to the button that opened it.
import { h, type Child } from '../dom.js';
import { ApiError } from '../problems.js';
import { errorText, noticeArea, reportError, showNotice, type Shell } from './common.js';

export interface Confirmation {
  title: string;
  detail: string;
  confirmLabel: string;
  /** Choices the action reads (a grace period), shown between the detail and the buttons. */
  content?: Child;
  /** The action; a rejection is shown in the dialog (a refused token ends the session). */
  action: () => Promise<void>;
  /** After the action succeeded and the dialog closed. */
  done: () => void;
}

export function confirmDialog(shell: Shell, trigger: HTMLElement, c: Confirmation): void {
  const notice = noticeArea();
  const cancel = h('button', { type: 'button', class: 'secondary', autofocus: true }, 'Cancel');
  const confirm = h('button', { type: 'button', class: 'danger' }, c.confirmLabel);
  const dialog = h(
    'dialog',
    { 'aria-labelledby': 'confirm-heading', 'aria-describedby': 'confirm-detail' },
    h('h2', { id: 'confirm-heading' }, c.title),
    h('p', { id: 'confirm-detail' }, c.detail),
    c.content,
    notice,
    h('div', { class: 'actions' }, confirm, cancel),
  );
  let succeeded = false;
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (succeeded) c.done();
    else if (trigger.isConnected) trigger.focus();
  });
  cancel.addEventListener('click', () => dialog.close());
  confirm.addEventListener('click', () => {
    confirm.disabled = true;
    c.action()
      .then(() => {
        succeeded = true;
        // Escape may have closed the dialog while the request ran: the outcome still counts.
        if (dialog.open) dialog.close();
        else c.done();
      })
      .catch((err: unknown) => {
        confirm.disabled = false;
        if (err instanceof ApiError && err.status === 401) {
          dialog.close();
          reportError(shell, notice, err);
          return;
        }
        // The alert reads the refusal out; focus (lost with the disabled button) goes to
        // the safe choice.
        showNotice(notice, errorText(err));
        cancel.focus();
      });
  });
  document.body.append(dialog);
  dialog.showModal();
}
