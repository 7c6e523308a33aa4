// What the token list offers and says about regenerating (rotating) a token, decided
// without the DOM. Unit-tested in test/console/logic.test.ts.
import { exactTime, isExpired } from './format.js';

/** The grace periods offered, in seconds; the first (none) is the default. */
export const GRACE_CHOICES: readonly { seconds: number; label: string }[] = [
  { seconds: 0, label: 'None: the old secret stops working at once' },
  { seconds: 3_600, label: '1 hour' },
  { seconds: 86_400, label: '1 day' },
];

export type TokenAction = 'rename' | 'regenerate';

/**
 * The write actions a token row offers besides Delete: none unless the signed-in token
 * holds the scope the space's writes need (api-tokens:write on the API tokens page,
 * accounts:write on an account's page); an expired token is not regenerated (the server
 * answers 409: its new secret would not work either).
 */
export function tokenActions(
  token: { expires_at: string | null },
  writeScope: string,
  holds: (scope: string) => boolean,
  now: number,
): TokenAction[] {
  if (!holds(writeScope)) return [];
  return isExpired(token.expires_at, now) ? ['rename'] : ['rename', 'regenerate'];
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
