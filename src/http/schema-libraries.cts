// Ajv, its formats and Fastify's fast-json-stringify compiler, each loaded by its first use.
//
// Why a CommonJS module: what an ES module imports is evaluated before the module itself,
// so every start evaluated these libraries (4-6 ms of module evaluation and 1.7 MB, BENCHMARKS.md
// "Start-up, session 17") though validators and serialisers compile on a route's first
// request (validation.ts, serialization.ts). A require() inside a function runs when the
// function does; esbuild bundles the module it names and keeps the call in its place.
//
// Why `module.require` first: run from source (tsx, Node 20), this module is run by Node's ES
// module loader, whose require() breaks Ajv's own require cycle (ajv.ts and core.ts) when it
// loads Ajv first (test/catalog/lazy-file.test.ts); module.require is Node's CommonJS loader.
// In the bundle, esbuild's module object has no require, and the require() is the bundled one.
/* eslint-disable @typescript-eslint/no-require-imports -- what this module is for */
import type * as AjvModule from 'ajv';
import type * as AjvFormats from 'ajv-formats';
import type * as SerializerCompiler from '@fastify/fast-json-stringify-compiler';

let ajv: typeof AjvModule | undefined;
let formats: typeof AjvFormats | undefined;
let serializerCompiler: typeof SerializerCompiler | undefined;

// `module.require` is typed as always there; in the bundle it is not. Called as a method: it
// loads for `module`.
const fromNode = (id: string): unknown => ((module.require as unknown) === undefined ? undefined : module.require(id));

export = {
  ajv: (): typeof AjvModule => (ajv ??= (fromNode('ajv') ?? require('ajv')) as typeof AjvModule),
  // ajv-formats is CommonJS with a default export; its module object is the function.
  ajvFormats: (): typeof AjvFormats =>
    (formats ??= (fromNode('ajv-formats') ?? require('ajv-formats')) as typeof AjvFormats),
  serializerCompiler: (): typeof SerializerCompiler =>
    (serializerCompiler ??= (fromNode('@fastify/fast-json-stringify-compiler') ??
      require('@fastify/fast-json-stringify-compiler')) as typeof SerializerCompiler),
};
