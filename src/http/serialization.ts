// Response serialisers (fast-json-stringify, Fastify's own default) compiled on a route's
// first answer with a given status, not when Fastify asks at ready(), for routes and
// statuses a process may never serve; validation.ts does the same for Ajv and says what
// it buys.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;

// Fastify's own serialiser factory.
const fastifyFactory: SerializerFactory = SerializerSelector();

/** Fastify's `schemaController.compilersFactory.buildSerializer`, compiling lazily. */
export const buildLazySerializer: SerializerFactory = (externalSchemas, options) => {
  let compile: ReturnType<SerializerFactory> | undefined;
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc) => (serialize ??= (compile ??= fastifyFactory(externalSchemas, options))(route))(doc);
  };
};
