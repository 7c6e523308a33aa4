// The forms of a catalog value, converted by walking its schema (schemas.ts), so that no
// field is ever listed a second time:
// - wire/file form: the schema's fields in the schema's order, prices as Amounts;
// - model form (memory and storage): the same fields, except that a Money field is held
//   as integer cents under the name its schema gives (price_monthly -> price_cents).
import { Type, type Static, type TObject, type TProperties, type TSchema } from 'typebox';
import { Amount, CENTS_FIELD, isMoney, parseMoney, type TMoney } from './money.js';

type ModelKey<P extends TProperties, K> = K extends keyof P ? (P[K] extends TMoney<infer Field> ? Field : K) : K;

/** The in-memory form of an entity schema: its Static type with Money fields renamed to their cents field. */
export type Model<T extends TObject> = { [K in keyof Static<T> as ModelKey<T['properties'], K>]: Static<T>[K] };

const modelKey = (key: string, schema: TSchema): string => (isMoney(schema) ? schema[CENTS_FIELD] : key);

/** A validated file value -> its model form (a price becomes cents). */
export function toModel(schema: TSchema, value: unknown): unknown {
  if (isMoney(schema))
    return parseMoney(value as number) ?? fail(`${String(value)} passed validation but is not an amount`);
  if (Type.IsArray(schema)) return (value as unknown[]).map((item) => toModel(schema.items, item));
  if (!Type.IsObject(schema)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(schema.properties)) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[modelKey(key, property)] = toModel(property, v);
  }
  return out;
}

/** A model value -> its wire/file form: the schema's fields only, in its order, prices as Amounts. */
export function toWire(schema: TSchema, value: unknown): unknown {
  if (isMoney(schema)) return new Amount(value as number);
  if (Type.IsArray(schema)) return (value as unknown[]).map((item) => toWire(schema.items, item));
  if (!Type.IsObject(schema)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(schema.properties)) {
    const v = (value as Record<string, unknown>)[modelKey(key, property)];
    // An optional list left empty says nothing: a written file leaves it out.
    if (v === undefined || (Type.IsOptional(property) && Array.isArray(v) && v.length === 0)) continue;
    out[key] = toWire(property, v);
  }
  return out;
}

/**
 * Wire/file data as JSON text, laid out as JSON.stringify(value, null, indent) would
 * (compact when indent is ''), an Amount written as its two-decimal number: JSON.stringify
 * cannot write 6.00 (JSON.rawJSON, which could, is not in Node 20).
 */
export function jsonText(value: unknown, indent = '', depth = ''): string {
  if (value instanceof Amount) return value.toString();
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const inner = depth + indent;
  const [newline, colon] = indent === '' ? ['', ':'] : ['\n', ': '];
  const items = Array.isArray(value)
    ? value.map((item) => inner + jsonText(item, indent, inner))
    : Object.entries(value).map(
        ([key, item]) => `${inner}${JSON.stringify(key)}${colon}${jsonText(item, indent, inner)}`,
      );
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  return items.length === 0 ? open + close : `${open}${newline}${items.join(`,${newline}`)}${newline}${depth}${close}`;
}

function fail(message: string): never {
  throw new Error(message);
}
