// Two Ajv instances behind Fastify's validator compiler:
// - bodies are validated strictly: no type coercion ("name": 123 is an error, not
//   "123"), unknown properties rejected rather than silently dropped;
// - query strings, path params and headers arrive as text, so they are coerced.
import { Ajv, type Options } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS with a default export; NodeNext sees the module object.
const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

const common: Options = { allErrors: true, useDefaults: true, strict: false, removeAdditional: false };
const bodyAjv = addFormats(new Ajv({ ...common, coerceTypes: false }));
const textAjv = addFormats(new Ajv({ ...common, coerceTypes: 'array' }));

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};
