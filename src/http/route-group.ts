// A group of routes as a plugin of its own (encapsulated: its hooks, parsers and schemas
// stay its own), named, and registered after the plugins that every route relies on: they
// attach authentication and rate limiting as each route is declared, collect it into the
// OpenAPI document, and give it the JSON parser and the problem answers.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginOptions, RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import type { App } from './types.js';

const EVERY_ROUTE_NEEDS = [
  'infracat-json-body',
  'infracat-services',
  'infracat-problems',
  'infracat-auth',
  'infracat-rate-limit',
  'infracat-openapi',
];

export function routeGroup<Options extends FastifyPluginOptions>(
  name: string,
  routes: (app: App, options: Options) => void,
) {
  return fp<Options, RawServerDefault, TypeBoxTypeProvider>(
    (app, options, done) => {
      routes(app, options);
      done();
    },
    { name, dependencies: EVERY_ROUTE_NEEDS, encapsulate: true },
  );
}
