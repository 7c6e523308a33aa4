// What the token list offers and says about regenerating (rotating) a token and about a
// token's conditions, and how it asks for its order, decided without the DOM. Unit-tested
// in test/console/logic.test.ts.
import { exactTime, isExpired, shortDate } from './format.js';

/** The grace periods offered, in seconds; the first (none) is the default. */
export const GRACE_CHOICES: readonly { seconds: number; label: string }[] = [
  { seconds: 0, label: 'None: the old secret stops working at once' },
  { seconds: 3_600, label: '1 hour' },
  { seconds: 86_400, label: '1 day' },
];

export type TokenAction = 'rename' | 'conditions' | 'disable' | 'enable' | 'regenerate';

/** How the token list is ordered: as the API lists it by default (oldest first), or by last use. */
export type TokenOrder = 'created' | 'last_used';

/**
 * The first page of the token list at `path` (the API collection) in `order`. The API orders
 * the whole list (`sort=last_used_at`: the most recent use first, never-used tokens last),
 * so every page that Load more adds follows on in the same order.
 */
export function tokenListPath(path: string, order: TokenOrder): string {
  return order === 'last_used' ? `${path}?sort=last_used_at` : path;
}

/**
 * The write actions a token row offers besides Delete: none unless the signed-in token
 * holds the scope the space's writes need (api-tokens:write on the API tokens page,
 * accounts:write on an account's page); an expired token is not regenerated (the server
 * answers 409: its new secret would not work either). A disabled token offers Enable,
 * an enabled one Disable, except the token this session signs in with: disabling it in
 * one click would lock the console out (its conditions dialog can still do it).
 */
export function tokenActions(
  token: { id: string; expires_at: string | null; enabled: boolean },
  writeScope: string,
  holds: (scope: string) => boolean,
  now: number,
  sessionTokenId?: string,
): TokenAction[] {
  if (!holds(writeScope)) return [];
  const actions: TokenAction[] = ['rename', 'conditions'];
  if (!token.enabled) actions.push('enable');
  else if (token.id !== sessionTokenId) actions.push('disable');
  if (!isExpired(token.expires_at, now)) actions.push('regenerate');
  return actions;
}

/** A token's conditions as the API shows them (docs/token-lifecycle.md, "Conditions"). */
export interface Conditions {
  allowed_cidrs: string[] | null;
  not_before: string | null;
  enabled: boolean;
}

/** One compact label of the list's Conditions column; `title` holds the whole of it. */
export interface ConditionLabel {
  kind: 'disabled' | 'networks' | 'not-before';
  text: string;
  title?: string;
}

/**
 * "Disabled", "from 10.0.0.0/8 +2", "not before 1 Jan 2027": what limits the token, most
 * drastic first; none when it works from anywhere, at once. A not_before already past
 * limits nothing and is left out.
 */
export function conditionLabels(token: Conditions, now: number): ConditionLabel[] {
  const labels: ConditionLabel[] = [];
  if (!token.enabled) labels.push({ kind: 'disabled', text: 'Disabled' });
  const cidrs = token.allowed_cidrs ?? [];
  if (cidrs.length > 0) {
    const more = cidrs.length > 1 ? ` +${cidrs.length - 1}` : '';
    labels.push({ kind: 'networks', text: `from ${cidrs[0]}${more}`, title: `Only from ${cidrs.join(', ')}` });
  }
  if (token.not_before !== null && Date.parse(token.not_before) > now) {
    labels.push({
      kind: 'not-before',
      text: `not before ${shortDate(token.not_before)}`,
      title: `Refused until ${exactTime(token.not_before)}`,
    });
  }
  return labels;
}

/**
 * The allowed networks typed into the form: one per line or comma-separated, blanks
 * ignored; nothing typed is null (anywhere). Judging each network is the server's (422
 * names the bad one): the console does not keep a second CIDR parser.
 */
export function parseCidrs(text: string): string[] | null {
  const cidrs = text
    .split(/[\s,]+/)
    .map((c) => c.trim())
    .filter((c) => c !== '');
  return cidrs.length === 0 ? null : cidrs;
}

/** The networks as the form shows them, one per line. */
export function cidrsText(cidrs: readonly string[] | null): string {
  return (cidrs ?? []).join('\n');
}

/**
 * A datetime-local value ("2027-01-01T09:30", seconds optional), read as UTC, as RFC
 * 3339; empty is null (valid at once). Malformed input is sent as typed, for the server's 422.
 */
export function notBeforeFrom(local: string): string | null {
  if (local === '') return null;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2})?(?:\.\d+)?$/.exec(local);
  return m === null ? local : `${m[1]}${m[2] ?? ':00'}Z`;
}

/** An RFC 3339 time as a datetime-local value in UTC (seconds only when there are some). */
export function notBeforeLocal(iso: string | null): string {
  if (iso === null) return '';
  const utc = new Date(iso).toISOString();
  return utc.slice(17, 19) === '00' ? utc.slice(0, 16) : utc.slice(0, 19);
}

/**
 * The merge patch that takes a token's conditions to the edited ones: only what changed
 * (a not_before by its instant, the networks in order), null to clear. Empty: nothing to send.
 */
export function conditionsPatch(token: Conditions, edited: Conditions): Partial<Conditions> {
  const patch: Partial<Conditions> = {};
  if ((token.allowed_cidrs ?? []).join(',') !== (edited.allowed_cidrs ?? []).join(',')) {
    patch.allowed_cidrs = edited.allowed_cidrs;
  }
  const instant = (t: string | null): number | null => (t === null ? null : Date.parse(t));
  // NaN (a malformed time, sent for the server's 422) never equals: it is sent.
  if (instant(token.not_before) !== instant(edited.not_before)) patch.not_before = edited.not_before;
  if (token.enabled !== edited.enabled) patch.enabled = edited.enabled;
  return patch;
}

/** A grace choice's value from the form, or null when it is not one that was offered. */
export function graceFrom(value: string): number | null {
  const choice = GRACE_CHOICES.find((c) => String(c.seconds) === value);
  return choice === undefined ? null : choice.seconds;
}

/**
 * What the panel with the new secret says happened to the old one, and to this session
 * when it signs in with the rotated token: it carries on with the new secret, since the
 * old one is refused now (no grace) or soon (grace), and the console holds the new one.
 */
export function rotationNote(graceS: number, thisSession: boolean, now: number): string {
  const until = exactTime(new Date(now + graceS * 1000).toISOString());
  const old =
    graceS === 0 ? 'The old secret no longer works.' : `The old secret keeps working until ${until}, then is refused.`;
  return thisSession ? `${old} This session signs in with this token: it now uses the new secret.` : old;
}
