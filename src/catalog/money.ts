// Money: one type, one parser, one formatter. Inside the service (memory, storage) a price
// is an integer number of cents, so sums and comparisons are exact; the wire and the
// catalog file show it as a JSON/YAML number with exactly two fraction digits (6.00, not
// 6), which JSON.stringify and YAML's own writer cannot produce from a number.
import { Type, type TNumber, type TNumberOptions } from 'typebox';
import { explained } from './problems.js';

/**
 * The largest price, in cents (99999999.99). Up to it, a two-decimal number read from a
 * file converts to cents exactly (the float noise of `x * 100` stays far below the
 * tolerance below); beyond, it could not be held or written exactly, so it is refused.
 */
export const MAX_CENTS = 9_999_999_999;

/** 600 -> "6.00": the text every writer (wire bytes, YAML, JSON file) puts in its output. */
export function formatMoney(cents: number): string {
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

// A query string states an amount as decimal text: up to 9 digits, then up to two decimals.
export const MONEY_TEXT_PATTERN = /^[0-9]{1,9}(\.[0-9]{1,2})?$/;

/**
 * An amount as a query or a file states it -> integer cents; undefined when it is not one.
 * Text ("24.50", matching MONEY_TEXT_PATTERN) converts digit by digit, exactly. A file's
 * number is a binary float (5.99 * 100 is 598.9999999999999): it must be finite, from 0 to
 * MAX_CENTS, and within a tolerance of whole cents that accepts that noise and nothing a
 * person could have written (5.999 is refused). The Money schema states the same rule.
 */
export function parseMoney(amount: number | string): number | undefined {
  if (typeof amount === 'string') {
    if (!MONEY_TEXT_PATTERN.test(amount)) return undefined;
    const [units = '', fraction = ''] = amount.split('.');
    return Number(units) * 100 + Number(fraction.padEnd(2, '0'));
  }
  const cents = Math.round(amount * 100);
  const exact = Number.isFinite(amount) && amount >= 0 && cents <= MAX_CENTS && Math.abs(cents - amount * 100) <= 1e-6;
  return exact ? cents : undefined;
}

/**
 * A price on its way out (wire bytes, catalog file): the writers recognise it and write
 * formatMoney(cents) where they would write a number.
 */
export class Amount {
  constructor(readonly cents: number) {}

  toString(): string {
    return formatMoney(this.cents);
  }
}

/** Marks a Money schema with the in-memory field holding its cents (a symbol: not in OpenAPI). */
export const CENTS_FIELD = Symbol('catalog.centsField');

export interface TMoney<Field extends string = string> extends TNumber {
  readonly [CENTS_FIELD]: Field;
}

/**
 * A price field of the file and wire forms, held in memory (and storage) as integer cents
 * under `centsField`: `price_monthly: Money('price_cents', ...)` is 6.00 on the wire and
 * `price_cents: 600` inside. The bounds are checked by the schema; the two fraction digits
 * by the catalog file's own validation only (withCentsRule below).
 */
export function Money<Field extends string>(centsField: Field, options: TNumberOptions = {}): TMoney<Field> {
  const schema = Type.Number({
    minimum: 0,
    maximum: MAX_CENTS / 100,
    ...options,
    [CENTS_FIELD]: centsField,
  });
  return explained(schema as TMoney<Field>, {
    // NaN fails the bounds too (Ajv checks isNaN there); Infinity fails maximum.
    type: 'must be a number such as 6.00',
    minimum: `must be >= 0 and <= ${formatMoney(MAX_CENTS)}`,
    maximum: `must be >= 0 and <= ${formatMoney(MAX_CENTS)}`,
    multipleOf: (e) => `must have at most two decimals (got ${String(e.data)})`,
  });
}

export function isMoney(schema: unknown): schema is TMoney {
  return typeof schema === 'object' && schema !== null && CENTS_FIELD in schema;
}

/**
 * A copy of `schema` whose Money fields also say `multipleOf: 0.01`, for the catalog file's
 * validation (file.ts), whose Ajv applies it with multipleOfPrecision 6: the tolerance of
 * parseMoney, so 19.99 passes and 5.999 does not. Not in the published schema: there, a
 * standard validator divides binary floats exactly and refuses ordinary prices (19.99,
 * 1.15, 0.29); the OpenAPI document states the two digits in words.
 */
export function withCentsRule<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((s: unknown) => withCentsRule(s)) as T;
  if (typeof schema !== 'object' || schema === null) return schema;
  const copy: Record<string | symbol, unknown> = Object.fromEntries(
    Object.entries(schema).map(([k, v]) => [k, withCentsRule(v)]),
  );
  // The problem messages and the cents field travel as symbols.
  for (const key of Object.getOwnPropertySymbols(schema)) copy[key] = (schema as Record<symbol, unknown>)[key];
  if (isMoney(schema)) copy.multipleOf = 0.01;
  return copy as T;
}
