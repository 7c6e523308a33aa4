// Sign in by pasting a token: checked against /api/v1/api-tokens/current before it is kept.
import { api, type CurrentToken } from '../api.js';
import { h } from '../dom.js';
import { session } from '../session.js';
import { errorText, noticeArea, showNotice } from './common.js';

export function signInForm(onSignedIn: (who: CurrentToken) => void, reason?: string): HTMLElement {
  const input = h('input', {
    id: 'signin-token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'signin-help',
  });
  const notice = noticeArea();
  if (reason !== undefined) showNotice(notice, reason);
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h(
    'form',
    { class: 'card narrow', 'aria-labelledby': 'signin-heading', novalidate: true },
    h('h2', { id: 'signin-heading' }, 'Sign in'),
    h('label', { for: 'signin-token' }, 'API token'),
    input,
    h(
      'p',
      { id: 'signin-help', class: 'hint' },
      'Paste a token (it starts with icat_). ' +
        'It stays in this browser tab only and is sent to nothing but this server. ',
      'The first token of a new installation is printed in the server log at its first start; more come from ',
      h('code', {}, 'infracat tokens create'),
      '.',
    ),
    notice,
    submit,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (token === '') {
      showNotice(notice, 'Paste an API token first.');
      input.setAttribute('aria-invalid', 'true');
      input.focus();
      return;
    }
    submit.disabled = true;
    api<CurrentToken>('GET', '/api-tokens/current', undefined, token)
      .then((who) => {
        session.signIn(token, who);
        input.value = '';
        onSignedIn(who);
      })
      .catch((err: unknown) => {
        showNotice(notice, errorText(err));
        input.setAttribute('aria-invalid', 'true');
        input.focus();
      })
      .finally(() => {
        submit.disabled = false;
      });
  });
  return form;
}
