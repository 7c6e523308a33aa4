// A query parameter the server reads as text by a pattern (plain decimal digits: Ajv's
// number coercion would also take `1e2`, `0x10` or ` 5`) that is a number all the same.
// The route validates the text; the OpenAPI document states the number it stands for,
// so that generated clients type it as one (src/http/openapi.ts swaps it in).

/** Marks a schema with the schema the OpenAPI document shows instead (a symbol: never on the wire). */
export const DOCUMENTED_AS = Symbol('openapi.documentedAs');

export interface DocumentedNumber {
  type: 'integer' | 'number';
  minimum?: number;
  maximum?: number;
  default?: number;
  examples?: number[];
}

/** `text`, documented as `number` (its description is kept). */
export function numericText<T extends object>(text: T, number: DocumentedNumber): T {
  return Object.assign(text, { [DOCUMENTED_AS]: number });
}

export function documentedAs(schema: unknown): DocumentedNumber | undefined {
  return typeof schema === 'object' && schema !== null
    ? (schema as { [DOCUMENTED_AS]?: DocumentedNumber })[DOCUMENTED_AS]
    : undefined;
}
