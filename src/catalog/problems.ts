// Problems of a catalog file as an operator reads them, e.g.
// `plans[3] (s-1vcpu-1gb).price_monthly: must have at most two decimals (got 5.999)`.
// The schemas state the rules; beside a rule whose generic message would say less, the
// schema carries its own (under a symbol, so it reaches neither the OpenAPI document nor
// Ajv). This module turns Ajv's errors into problems: where (entry, field) and what.
import type { ErrorObject } from 'ajv';

export interface CatalogProblem {
  /** e.g. `plans[3] (s-1vcpu-1gb)`, or `file` for the whole document. */
  entry: string;
  /** The field, when the problem is one field's. */
  field?: string;
  /** RFC 6901 pointer into the document (`/plans/3/price_monthly`); '' for the whole document. */
  pointer: string;
  message: string;
}

/** Path segments -> RFC 6901 pointer. */
export function pointerOf(segments: readonly (string | number)[]): string {
  return segments.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

type Message = string | ((error: ErrorObject) => string);
/** Messages by the JSON Schema keyword that failed; `default` for any keyword not listed. */
type Messages = Partial<Record<string, Message>>;

const MESSAGES = Symbol('catalog.problemMessages');

/** Attaches problem messages to a schema; a single message stands for every keyword. */
export function explained<T extends object>(schema: T, messages: Message | Messages): T {
  const own = typeof messages === 'object' ? messages : { default: messages };
  const current = (schema as { [MESSAGES]?: Messages })[MESSAGES];
  return Object.assign(schema, { [MESSAGES]: { ...current, ...own } });
}

type Schema = Record<string, unknown> & { [MESSAGES]?: Messages };

const TYPE_NAMES: Record<string, string> = {
  string: 'must be a string',
  integer: 'must be an integer',
  number: 'must be a number',
  boolean: 'must be true or false',
  array: 'must be a list',
  object: 'must be a mapping',
};

// What a rule says when its schema has no message of its own.
const GENERIC: Messages = {
  required: (e) => {
    const missing = (e.parentSchema as { properties: Record<string, Schema> }).properties[
      e.params.missingProperty as string
    ];
    return missing?.type === 'array' ? 'is required (use [] for none)' : 'is required';
  },
  additionalProperties: 'unknown field',
  type: (e) => TYPE_NAMES[e.params.type as string] ?? `must be of type ${String(e.params.type)}`,
  minLength: 'must be a non-empty string',
  maxItems: (e) => `must list at most ${String(e.params.limit)}`,
  maxLength: (e) => `must be at most ${String(e.params.limit)} characters`,
  minimum: (e) => `must be >= ${String(e.params.limit)}`,
  maximum: (e) => `must be <= ${String(e.params.limit)}`,
  multipleOf: (e) => `must be a multiple of ${String(e.params.multipleOf)}`,
  uniqueItems: (e) => `must not list ${JSON.stringify((e.data as unknown[])[e.params.j as number])} twice`,
  anyOf: (e) => {
    const choices = (e.parentSchema as { anyOf: { const?: unknown }[] }).anyOf.map((s) => String(s.const));
    return `must be one of ${choices.join(', ')}`;
  },
};

const messagesOf = (schema: object | undefined): Messages | undefined => (schema as Schema | undefined)?.[MESSAGES];

function messageOf(e: ErrorObject): string {
  const own = messagesOf(e.parentSchema);
  const message = own?.[e.keyword] ?? own?.default ?? GENERIC[e.keyword] ?? e.message ?? e.keyword;
  return typeof message === 'function' ? message(e) : message;
}

/**
 * Path segments of the value an error is about (a missing or unknown field included);
 * `at`: the path of the value that was validated (an entry validated on its own).
 */
export function errorPath(e: ErrorObject, at: readonly string[] = []): string[] {
  const segments = [
    ...at,
    ...(e.instancePath === ''
      ? []
      : e.instancePath
          .slice(1)
          .split('/')
          .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))),
  ];
  if (e.keyword === 'required') segments.push(e.params.missingProperty as string);
  if (e.keyword === 'additionalProperties') segments.push(e.params.additionalProperty as string);
  return segments;
}

/**
 * Ajv's errors (verbose) over the value at `at` as problems, each once. `entryOf(list,
 * index)` names an entry of one of the document's entity lists; anything else is the file's.
 */
export function problemsFromErrors(
  errors: readonly ErrorObject[],
  entryOf: (list: string, index: number) => string | undefined,
  at: readonly string[] = [],
): CatalogProblem[] {
  const problems = new Map<string, CatalogProblem>();
  for (const e of errors) {
    // A union's branches each fail; the union's own error says it once, with every choice.
    if (e.schemaPath.includes('/anyOf/')) continue;
    const path = errorPath(e, at);
    const [top, index, field] = path;
    const entry = top !== undefined && index !== undefined ? entryOf(top, Number(index)) : undefined;
    const where = entry !== undefined ? { entry, field } : { entry: 'file', field: top };
    const message = messageOf(e);
    const pointer = pointerOf(path);
    const problem: CatalogProblem =
      where.field === undefined
        ? { entry: where.entry, pointer, message }
        : { entry: where.entry, field: where.field, pointer, message };
    problems.set(JSON.stringify(problem), problem);
  }
  return [...problems.values()];
}
