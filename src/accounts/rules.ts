// What makes an account request valid, beyond what the JSON schema can say. Pure
// functions: no HTTP, no storage.
import type { FieldError } from '../errors.js';
import { SECRET_SHAPE } from '../redact.js';
import { validateName } from '../tokens/rules.js';

export const EXTERNAL_ID_MAX = 200;

// Printable: letters, marks, digits, punctuation and symbols (L, M, N, P, S) and the
// ASCII space. Not: controls, format characters (bidi, zero-width), separators other
// than U+0020, private-use or unassigned code points, and default-ignorable ones (the
// Hangul fillers are letters that show nothing). An id is compared byte for byte, so
// anything that can look like something else, or like nothing, is refused.
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
const MARK = /^\p{M}$/u;

function label(c: string): string {
  return `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * An external_id: 1-200 printable code points (above), not beginning with a space or a
 * combining mark, not ending with a space, and not shaped like a token secret (it is
 * shown in lists and filters, and errors and logs redact that shape). Kept exactly as
 * sent: no trimming, no case folding, no normalisation.
 */
export function validateExternalId(raw: string, pointer = '/external_id'): FieldError | null {
  if (!raw.isWellFormed()) return { pointer, detail: 'must be valid Unicode text' };
  const chars = [...raw];
  if (chars.length < 1) return { pointer, detail: 'must not be empty' };
  if (chars.length > EXTERNAL_ID_MAX)
    return { pointer, detail: `must be at most ${EXTERNAL_ID_MAX} characters (got ${chars.length})` };
  for (const c of chars) {
    if (!PRINTABLE.test(c) || IGNORABLE.test(c))
      return { pointer, detail: `must hold printable characters only; ${label(c)} is not one` };
  }
  if (chars[0] === ' ' || chars[chars.length - 1] === ' ')
    return { pointer, detail: 'must not begin or end with a space' };
  if (MARK.test(chars[0]!)) return { pointer, detail: `must not begin with ${label(chars[0]!)}, a combining mark` };
  if (raw.includes('_') && new RegExp(SECRET_SHAPE.source).test(raw))
    return {
      pointer,
      detail: 'must not contain a secret (something shaped like <prefix>_ and 30 or more letters and digits)',
    };
  return null;
}

export interface CreateAccountInput {
  name: string;
  external_id?: string | null | undefined;
}

export function validateCreateAccount(
  input: CreateAccountInput,
): { value: { name: string; externalId: string | null } } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const name = validateName(input.name);
  if ('error' in name) errors.push(name.error);
  const externalId = input.external_id ?? null;
  const bad = externalId === null ? null : validateExternalId(externalId);
  if (bad !== null) errors.push(bad);
  if ('error' in name || errors.length > 0) return { errors };
  return { value: { name: name.name, externalId } };
}
