// Ajv, its formats and Fastify's fast-json-stringify compiler, each loaded by its first use.
//
// Why a CommonJS module: what an ES module imports is evaluated before the module itself,
// so every start evaluated these libraries (~4 ms of module evaluation, BENCHMARKS.md
// "Start-up, session 17") though validators and serialisers compile on a route's first
// request (validation.ts, serialization.ts). A require() inside a function runs when the
// function does, under tsx and in the bundle alike (esbuild keeps its place).
/* eslint-disable @typescript-eslint/no-require-imports -- what this module is for */
import type * as AjvModule from 'ajv';
import type * as AjvFormats from 'ajv-formats';
import type * as SerializerCompiler from '@fastify/fast-json-stringify-compiler';

let ajv: typeof AjvModule | undefined;
let formats: typeof AjvFormats | undefined;
let serializerCompiler: typeof SerializerCompiler | undefined;

export = {
  ajv: (): typeof AjvModule => (ajv ??= require('ajv') as typeof AjvModule),
  // ajv-formats is CommonJS with a default export; its module object is the function.
  ajvFormats: (): typeof AjvFormats => (formats ??= require('ajv-formats') as typeof AjvFormats),
  serializerCompiler: (): typeof SerializerCompiler =>
    (serializerCompiler ??= require('@fastify/fast-json-stringify-compiler') as typeof SerializerCompiler),
};
