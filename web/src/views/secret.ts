// The panel that shows a secret once (a new token's, a webhook's signing secret): a
// warning that it is the only time, a read-only field with a copy button, and "Done",
// which removes the panel and with it the only copy on the page.
import { focusOn, h, replace } from '../dom.js';

export interface SecretShown {
  /** "Copy the token “ci-deploy” now". */
  heading: string;
  /** What infracat keeps of the secret, after "This is the only time it is shown." */
  kept: string;
  /** The field's label ("New token"). */
  label: string;
  secret: string;
  /** What became of the old secret, after a rotation. */
  note?: string;
  /** Where focus goes once the panel is dismissed. */
  after: () => HTMLElement | null;
}

export function showSecret(slot: HTMLElement, s: SecretShown): void {
  const status = h('p', { class: 'hint', role: 'status' });
  const value = h('input', {
    id: 'new-secret',
    type: 'text',
    readonly: true,
    value: s.secret,
    spellcheck: 'false',
    autocomplete: 'off',
    class: 'secret',
    'aria-describedby': 'secret-warning',
  });
  const copy = h('button', { type: 'button', class: 'primary' }, 'Copy');
  const done = h('button', { type: 'button', class: 'secondary' }, 'Done, I have stored it');
  copy.addEventListener('click', () => {
    void copyText(value).then((ok) => {
      status.textContent = ok
        ? 'Copied to the clipboard.'
        : 'Could not copy automatically: the text is selected, press Ctrl+C (⌘C on a Mac).';
    });
  });
  done.addEventListener('click', () => {
    // The secret lives only in this element; removing it forgets it.
    slot.replaceChildren();
    focusOn(s.after() ?? document.body);
  });
  const panel = h(
    'section',
    { class: 'card secret-panel', 'aria-labelledby': 'secret-heading' },
    h('h2', { id: 'secret-heading' }, s.heading),
    h(
      'p',
      { id: 'secret-warning', class: 'warning' },
      h('strong', {}, 'This is the only time it is shown.'),
      ` ${s.kept} Store it in a password manager or secret store before you leave this page.`,
    ),
    s.note === undefined ? null : h('p', { id: 'secret-note' }, s.note),
    h('label', { for: 'new-secret' }, s.label),
    h('div', { class: 'copy-row' }, value, copy),
    status,
    done,
  );
  replace(slot, panel);
  focusOn(panel.querySelector('h2')!);
}

async function copyText(input: HTMLInputElement): Promise<boolean> {
  input.select();
  try {
    await navigator.clipboard.writeText(input.value);
    return true;
  } catch {
    // Clipboard API unavailable (plain http on a non-local host): fall back to the selection.
    return document.execCommand('copy');
  }
}
