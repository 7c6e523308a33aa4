// What makes a create request valid, beyond what the JSON schema can say.
// Pure functions: no HTTP, no storage.
import type { FieldError } from '../errors.js';
import { SECRET_SHAPE } from '../redact.js';
import { ALLOWED_CIDRS_MAX, cidrWithin, parseCidr } from './conditions.js';
import { GRACE_MAX_S, NAME_MAX } from './limits.js';
import { OPERATOR_ONLY_SCOPES, type ScopeRegistry } from './scopes.js';

export interface CreateTokenInput {
  name: string;
  scopes: string[];
  /**
   * RFC 3339 timestamp; null: never expires; absent (undefined): the creator's expiry
   * (never, for a creator that never expires and for the operator).
   */
  expires_at?: string | null | undefined;
  /** CIDRs the token may be used from; null: anywhere; absent: the creator's (anywhere, for the operator). */
  allowed_cidrs?: string[] | null | undefined;
  /** RFC 3339: refused before then; null: at once; absent: the creator's (at once, for the operator). */
  not_before?: string | null | undefined;
  /** false: refused everywhere, kept; absent or null: true. */
  enabled?: boolean | null | undefined;
}

/** A token's conditions of use, as stored. */
export interface Conditions {
  /** Canonical CIDRs; null: anywhere. */
  allowedCidrs: string[] | null;
  /** Epoch milliseconds; null: at once. */
  notBefore: number | null;
  enabled: boolean;
}

export interface ValidCreate extends Conditions {
  name: string;
  scopes: string[];
  expiresAt: number | null;
}

/**
 * The token making a request. The operator (CLI, bootstrap) is not a token and is
 * passed as null: it may grant any scope and any lifetime.
 */
export interface Caller {
  scopes: readonly string[];
  /** Epoch milliseconds, or null for a token that never expires. */
  expiresAt: number | null;
  /**
   * The networks the calling token may be used from (null: anywhere): a token it creates
   * or edits is never usable from anywhere else.
   */
  allowedCidrs: readonly string[] | null;
  /** When the calling token started to work (null: at once): no token it sets starts earlier. */
  notBefore: number | null;
}

export interface RuleContext {
  registry: ScopeRegistry;
  now: number;
  maxLifetimeMs: number;
  /** Who asks; a new token never outlives a calling token. */
  caller: Caller | null;
  /** Whether the token is for the operator account: only its tokens may hold operator-only scopes. */
  operatorAccount: boolean;
}

// Refused anywhere in a name, by Unicode property rather than by a list: controls (Cc),
// format characters (Cf: bidi controls and marks, zero-width characters, the soft
// hyphen, word joiner, tag characters, U+180E...), line and paragraph separators (Zl,
// Zp), and default-ignorable code points (Default_Ignorable_Code_Point: shown as nothing
// wherever they stand, such as the combining grapheme joiner U+034F, the Khmer inherent
// vowels U+17B4/U+17B5, variation selectors, Hangul fillers). Any of them lets one name
// look like another (`admin` + U+034F reads as `admin`), or breaks the line it is shown on.
const REFUSED = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
const REFUSED_KIND: [RegExp, string][] = [
  [/\p{Cc}/u, 'a control character'],
  [/\p{Cf}/u, 'an invisible format character'],
  [/\p{Zl}/u, 'a line separator'],
  [/\p{Zp}/u, 'a paragraph separator'],
  [/\p{Default_Ignorable_Code_Point}/u, 'an invisible (default-ignorable) character'],
];
// The one default-ignorable code point a name keeps: U+FE0F, the emoji presentation
// selector, where it shows: right after an emoji drawn as text by default, which it turns
// into the emoji (❤ and ❤️ look different), and in a keycap (#️⃣). Anywhere else (after
// a letter, an emoji already drawn as one, another selector) it shows nothing.
const EMOJI_SELECTOR = /(.)\uFE0F(\u20E3?)/gsu;
const EMOJI = /^\p{Emoji}$/u;
const EMOJI_PRESENTATION = /^\p{Emoji_Presentation}$/u;
const KEYCAP_BASE = /^[#*0-9]$/;

/** `raw` without the U+FE0F that show (above): what remains is checked against REFUSED. */
function withoutEmojiSelectors(raw: string): string {
  if (!raw.includes('\uFE0F')) return raw;
  return raw.replace(EMOJI_SELECTOR, (all, base: string, keycap: string) => {
    const shows = KEYCAP_BASE.test(base) ? keycap !== '' : EMOJI.test(base) && !EMOJI_PRESENTATION.test(base);
    return shows ? base + keycap : all;
  });
}
// What shows nothing on its own: whitespace and separators (Z*), default-ignorable code
// points (the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, variation selectors...),
// the other C* categories (private use and unassigned code points have no agreed glyph),
// and combining marks (M*), which need a base character to show on.
const NOT_VISIBLE = /[\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Z}\p{C}\p{M}]/u;
const MARK = /^\p{M}$/u;
// Graphic characters whose glyph is blank by design while no Unicode property says so:
// BRAILLE PATTERN BLANK (So, used as an "empty" name elsewhere) and MUSICAL SYMBOL NULL
// NOTEHEAD (So). The only hand-listed exceptions.
const BLANK_GLYPHS: ReadonlySet<number> = new Set([0x2800, 0x1d159]);

/** U+XXXX: how a refused character is named in an error (the character itself may not show). */
function codePointLabel(c: string): string {
  return `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Whether one code point shows something on its own. */
export function isVisible(c: string): boolean {
  return !NOT_VISIBLE.test(c) && !BLANK_GLYPHS.has(c.codePointAt(0)!);
}

/**
 * A token name: 1-100 code points once leading and trailing spaces are trimmed, with
 * no character of the refused kinds (checked before trimming, so a trailing
 * newline or U+2028 is refused, not silently cut), at least one visible character, and
 * no invisible or blank-looking character at either end (where it could hide: `admin`
 * + U+2800 would look like `admin`). A trailing combining mark is fine: it sits on
 * the character before it (as U+FE0F does on an emoji).
 */
export function validateName(raw: string): { name: string } | { error: FieldError } {
  const pointer = '/name';
  if (!raw.isWellFormed()) return { error: { pointer, detail: 'must be valid Unicode text' } };
  const refused = REFUSED.exec(withoutEmojiSelectors(raw))?.[0];
  if (refused !== undefined) {
    const kind = REFUSED_KIND.find(([re]) => re.test(refused))![1];
    return {
      error: {
        pointer,
        detail:
          `must not contain ${codePointLabel(refused)}, ${kind} ` +
          '(control, format, default-ignorable, line and paragraph separator characters are refused)',
      },
    };
  }
  const name = raw.trim();
  const chars = [...name];
  if (chars.length < 1) return { error: { pointer, detail: 'must not be empty or only whitespace' } };
  if (!chars.some(isVisible)) {
    return {
      error: {
        pointer,
        detail:
          'must contain at least one visible character ' +
          `(it has only blank or invisible ones, such as ${codePointLabel(chars[0]!)})`,
      },
    };
  }
  const first = chars[0]!;
  const last = chars[chars.length - 1]!;
  if (!isVisible(first))
    return {
      error: { pointer, detail: `must not begin with ${codePointLabel(first)}, which shows nothing on its own` },
    };
  if (!isVisible(last) && !MARK.test(last))
    return { error: { pointer, detail: `must not end with ${codePointLabel(last)}, which shows nothing on its own` } };
  if (chars.length > NAME_MAX)
    return { error: { pointer, detail: `must be at most ${NAME_MAX} characters (got ${chars.length})` } };
  // A name is shown to everyone who lists tokens and sent to services in X-Token-Name: a
  // pasted secret must not end up there (the detail does not quote it).
  if (name.includes('_') && new RegExp(SECRET_SHAPE.source).test(name)) {
    return {
      error: {
        pointer,
        detail: 'must not contain a secret (something shaped like <prefix>_ and 30 or more letters and digits)',
      },
    };
  }
  return { name };
}

// RFC 3339 date-time (section 5.6), components captured for the calendar check below.
// `\d` without the u flag is ASCII 0-9 only.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
const FORMAT_HINT = 'must be an RFC 3339 timestamp, e.g. 2027-01-31T00:00:00Z';

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * An RFC 3339 timestamp as epoch milliseconds, or why not. Each component is checked
 * against the calendar (Date.parse would roll 2027-02-30 over into March, and T24:00
 * into the next day). A leap second (:60) is refused: epoch time has no such instant,
 * and taking it as the next second would be a reading the client did not write.
 * Digits past milliseconds are dropped (never rounded up: an expiry only gets earlier).
 */
export function parseTimestamp(text: string): { at: number } | { error: string } {
  const m = RFC3339.exec(text);
  if (m === null) return { error: FORMAT_HINT };
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const [fraction, sign, offsetHour, offsetMinute] = [m[7] ?? '', m[8], Number(m[9] ?? 0), Number(m[10] ?? 0)];
  const impossible = (why: string) => ({ error: `must be a real date and time: ${why}` });
  if (month < 1 || month > 12) return impossible(`month ${m[2]} does not exist (01-12)`);
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) return impossible(`${m[1]}-${m[2]} has no day ${m[3]} (01-${days})`);
  if (hour > 23) return impossible(`hour ${m[4]} does not exist (00-23)`);
  if (minute > 59) return impossible(`minute ${m[5]} does not exist (00-59)`);
  if (second === 60) return impossible('second 60 (a leap second) is not accepted (00-59)');
  if (second > 59) return impossible(`second ${m[6]} does not exist (00-59)`);
  if (offsetHour > 23) return impossible(`offset hour ${m[9]} does not exist (00-23)`);
  if (offsetMinute > 59) return impossible(`offset minute ${m[10]} does not exist (00-59)`);
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0-99 to 1900-1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, '0')));
  const offsetMs = (sign === '-' ? -1 : 1) * (offsetHour * 60 + offsetMinute) * 60_000;
  return { at: date.getTime() - offsetMs };
}

function validateExpiry(
  asked: string | null | undefined,
  ctx: RuleContext,
): { expiresAt: number | null } | { error: FieldError } {
  const pointer = '/expires_at';
  // A new token never outlives the token that creates it.
  const limit = ctx.caller?.expiresAt ?? null;
  if (asked === undefined) return { expiresAt: limit };
  const limitText = limit === null ? '' : new Date(limit).toISOString();
  if (asked === null) {
    if (limit === null) return { expiresAt: null };
    return {
      error: {
        pointer,
        detail:
          `must not be null: the token making this request expires at ${limitText} ` +
          'and a token never outlives its creator (leave expires_at out to get that time)',
      },
    };
  }
  const parsed = parseTimestamp(asked);
  if ('error' in parsed) return { error: { pointer, detail: parsed.error } };
  const at = parsed.at;
  if (at <= ctx.now) return { error: { pointer, detail: 'must be in the future' } };
  if (at - ctx.now > ctx.maxLifetimeMs)
    return { error: { pointer, detail: `must be within ${Math.floor(ctx.maxLifetimeMs / 86_400_000)} days from now` } };
  if (limit !== null && at > limit) {
    return {
      error: {
        pointer,
        detail:
          `must be at or before ${limitText}, ` +
          'when the token making this request expires (a token never outlives its creator)',
      },
    };
  }
  return { expiresAt: at };
}

/** Scope list errors: empty, unknown or malformed, or operator-only outside the operator account. */
function validateScopes(scopes: readonly string[], ctx: RuleContext): FieldError[] {
  const errors: FieldError[] = [];
  if (scopes.length === 0) errors.push({ pointer: '/scopes', detail: 'must hold at least one scope' });
  errors.push(...ctx.registry.validate(scopes));
  if (!ctx.operatorAccount) {
    scopes.forEach((scope, i) => {
      if (OPERATOR_ONLY_SCOPES.includes(scope) && ctx.registry.has(scope))
        errors.push({
          pointer: `/scopes/${i}`,
          detail: `"${scope}" can only be held by tokens of the operator account`,
        });
    });
  }
  return errors;
}

/**
 * An allowed_cidrs list (null: anywhere) as canonical CIDRs: 1 to ALLOWED_CIDRS_MAX
 * networks, each parsed strictly (conditions.ts), no two the same once canonical, and,
 * from a calling token that has a list, each within one of its networks.
 */
function validateCidrs(
  asked: readonly string[] | null,
  ctx: RuleContext,
): { cidrs: string[] | null } | { errors: FieldError[] } {
  const pointer = '/allowed_cidrs';
  const limit = ctx.caller?.allowedCidrs ?? null;
  if (asked === null) {
    if (limit === null) return { cidrs: null };
    return {
      errors: [
        {
          pointer,
          detail:
            `must not be null: the token making this request may be used only from ${limit.join(', ')}, ` +
            'and no token it sets may be used from anywhere else (leave allowed_cidrs out to get its networks)',
        },
      ],
    };
  }
  const errors: FieldError[] = [];
  if (asked.length === 0)
    errors.push({ pointer, detail: 'must hold at least one network (null: usable from anywhere)' });
  if (asked.length > ALLOWED_CIDRS_MAX)
    errors.push({ pointer, detail: `must hold at most ${ALLOWED_CIDRS_MAX} networks (got ${asked.length})` });
  const cidrs: string[] = [];
  asked.slice(0, ALLOWED_CIDRS_MAX).forEach((text, i) => {
    const parsed = parseCidr(text);
    if ('error' in parsed) {
      errors.push({ pointer: `${pointer}/${i}`, detail: parsed.error });
      return;
    }
    if (cidrs.includes(parsed.cidr)) {
      errors.push({ pointer: `${pointer}/${i}`, detail: `${parsed.cidr} is listed twice` });
      return;
    }
    if (limit !== null && !limit.some((outer) => cidrWithin(parsed.cidr, outer))) {
      errors.push({
        pointer: `${pointer}/${i}`,
        detail:
          `${parsed.cidr} is not within the networks the token making this request may be used from ` +
          `(${limit.join(', ')}): a token never gives another a wider allowed_cidrs than its own`,
      });
      return;
    }
    cidrs.push(parsed.cidr);
  });
  return errors.length > 0 ? { errors } : { cidrs };
}

/** A not_before (null: at once), never earlier than the calling token's. */
function validateNotBefore(
  asked: string | null,
  ctx: RuleContext,
): { notBefore: number | null } | { error: FieldError } {
  const pointer = '/not_before';
  const limit = ctx.caller?.notBefore ?? null;
  const limitText = limit === null ? '' : new Date(limit).toISOString();
  const tooEarly = (what: string) => ({
    error: {
      pointer,
      detail:
        `${what}: the token making this request works only from ${limitText}, ` +
        'and no token it sets starts earlier (leave not_before out to get that time)',
    },
  });
  if (asked === null) return limit === null ? { notBefore: null } : tooEarly('must not be null');
  const parsed = parseTimestamp(asked);
  if ('error' in parsed) return { error: { pointer, detail: parsed.error } };
  if (limit !== null && parsed.at < limit) return tooEarly(`must be at or after ${limitText}`);
  return { notBefore: parsed.at };
}

/** not_before against the expiry it would have: a token that could never work is refused. */
export function notBeforeProblem(notBefore: number | null, expiresAt: number | null): FieldError | null {
  if (notBefore === null || expiresAt === null || notBefore < expiresAt) return null;
  return {
    pointer: '/not_before',
    detail: `must be before the token's expiry (${new Date(expiresAt).toISOString()}): it would never work`,
  };
}

export function validateCreate(
  input: CreateTokenInput,
  ctx: RuleContext,
): { value: ValidCreate } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const name = validateName(input.name);
  if ('error' in name) errors.push(name.error);
  errors.push(...validateScopes(input.scopes, ctx));
  const expiry = validateExpiry(input.expires_at, ctx);
  if ('error' in expiry) errors.push(expiry.error);
  // Left out: the creator's conditions, so a new token is never usable more widely than it.
  const cidrs =
    input.allowed_cidrs === undefined
      ? { cidrs: copy(ctx.caller?.allowedCidrs ?? null) }
      : validateCidrs(input.allowed_cidrs, ctx);
  if ('errors' in cidrs) errors.push(...cidrs.errors);
  const notBefore =
    input.not_before === undefined
      ? { notBefore: ctx.caller?.notBefore ?? null }
      : validateNotBefore(input.not_before, ctx);
  if ('error' in notBefore) errors.push(notBefore.error);
  else if ('expiresAt' in expiry) {
    const never = notBeforeProblem(notBefore.notBefore, expiry.expiresAt);
    if (never !== null) errors.push(never);
  }
  if (errors.length > 0 || 'error' in name || 'error' in expiry || 'errors' in cidrs || 'error' in notBefore)
    return { errors };
  return {
    value: {
      name: name.name,
      scopes: input.scopes,
      expiresAt: expiry.expiresAt,
      allowedCidrs: cidrs.cidrs,
      notBefore: notBefore.notBefore,
      enabled: input.enabled ?? true,
    },
  };
}

function copy(list: readonly string[] | null): string[] | null {
  return list === null ? null : [...list];
}

/** A JSON merge patch of a token (RFC 7396): the fields present are set. */
export interface PatchTokenInput {
  name?: string | undefined;
  scopes?: string[] | undefined;
  /** null clears a condition: anywhere, at once, enabled. */
  allowed_cidrs?: string[] | null | undefined;
  not_before?: string | null | undefined;
  enabled?: boolean | null | undefined;
}

export interface ValidPatch extends Partial<Conditions> {
  name?: string;
  scopes?: string[];
}

/** The fields of a patch, checked as creation checks them. */
export function validatePatch(
  input: PatchTokenInput,
  ctx: RuleContext,
): { value: ValidPatch } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const value: ValidPatch = {};
  if (input.name !== undefined) {
    const name = validateName(input.name);
    if ('error' in name) errors.push(name.error);
    else value.name = name.name;
  }
  if (input.scopes !== undefined) {
    errors.push(...validateScopes(input.scopes, ctx));
    value.scopes = input.scopes;
  }
  if (input.allowed_cidrs !== undefined) {
    const cidrs = validateCidrs(input.allowed_cidrs, ctx);
    if ('errors' in cidrs) errors.push(...cidrs.errors);
    else value.allowedCidrs = cidrs.cidrs;
  }
  if (input.not_before !== undefined) {
    const notBefore = validateNotBefore(input.not_before, ctx);
    if ('error' in notBefore) errors.push(notBefore.error);
    else value.notBefore = notBefore.notBefore;
  }
  if (input.enabled !== undefined) value.enabled = input.enabled ?? true;
  return errors.length > 0 ? { errors } : { value };
}

export interface RotateTokenInput {
  /** Seconds the secret current until now keeps working; 0 (default): refused at once. */
  grace_period_s?: number | undefined;
  /** As at creation; absent: the token keeps its expiry. */
  expires_at?: string | null | undefined;
}

/** A rotation's grace period (ms) and new expiry (undefined: unchanged). */
export function validateRotate(
  input: RotateTokenInput,
  ctx: RuleContext,
): { value: { graceMs: number; expiresAt: number | null | undefined } } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const grace = input.grace_period_s ?? 0;
  if (!Number.isInteger(grace) || grace < 0 || grace > GRACE_MAX_S)
    errors.push({ pointer: '/grace_period_s', detail: `must be a whole number of seconds from 0 to ${GRACE_MAX_S}` });
  let expiresAt: number | null | undefined;
  if (input.expires_at !== undefined) {
    const expiry = validateExpiry(input.expires_at, ctx);
    if ('error' in expiry) errors.push(expiry.error);
    else expiresAt = expiry.expiresAt;
  }
  return errors.length > 0 ? { errors } : { value: { graceMs: grace * 1000, expiresAt } };
}
