// Two Ajv instances behind Fastify's validator compiler:
// - bodies are validated strictly: no type coercion ("name": 123 is an error, not
//   "123"), unknown properties rejected rather than silently dropped;
// - query strings, path params and headers arrive as text, so they are coerced.
//
// Schemas are compiled on a route's first request, not when Fastify asks at ready():
// compiling every route's schemas and serialisers at start doubles the cold start and
// adds a quarter to idle memory, for routes a process may never serve (BENCHMARKS.md).
// For the same reason each Ajv instance is made by the first schema it compiles.
import { Ajv, type Options, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';

// ajv-formats is CommonJS with a default export; NodeNext sees the module object.
const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

const common: Options = { allErrors: true, useDefaults: true, strict: false, removeAdditional: false };
const newAjv = (options: Options): Ajv => addFormats(new Ajv({ ...common, ...options }));
let bodyAjv: Ajv | undefined;
let textAjv: Ajv | undefined;
const ajvFor = (httpPart: string | undefined): Ajv =>
  httpPart === 'body' ? (bodyAjv ??= newAjv({ coerceTypes: false })) : (textAjv ??= newAjv({ coerceTypes: 'array' }));

/** Ajv's function for `schema`, compiled on its first call. */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  let compiled: ValidateFunction | undefined;
  const validate = Object.assign(
    (data: unknown): boolean => {
      compiled ??= ajvFor(httpPart).compile(schema as object);
      const ok = compiled(data);
      validate.errors = compiled.errors;
      return ok;
    },
    { errors: undefined as ValidateFunction['errors'] },
  );
  return validate;
};

type ValidatorFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']
>;

/**
 * validatorCompiler as the app's schema controller takes it (src/http/instance.ts), for every route.
 * Given there instead of set with setValidatorCompiler(), Fastify never loads its default
 * Ajv compiler (2 ms of a start). Fastify's type wants Ajv's own function type back; what it
 * calls is a FastifySchemaCompiler, as with setValidatorCompiler().
 */
export const buildValidator = (() => validatorCompiler) as unknown as ValidatorFactory;
