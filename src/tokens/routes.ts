// The token endpoints of the spec, plus GET /api-tokens/{id}, GET /api-tokens/current
// and GET /scopes. Every response here carries Cache-Control: no-store.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { AppError } from '../errors.js';
import type { App } from '../http/types.js';
import { CreatedToken, CreateTokenBody, IdParams, ScopeList, TokenList, TokenView } from './schemas.js';
import { createdView, tokenView } from './views.js';
import type { TokenService } from './service.js';

export interface TokenRouteOptions {
  service: TokenService;
}

export function tokenRoutes(app: App, { service }: TokenRouteOptions): void {
  void app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    scope.addHook('onRequest', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
    });

    scope.post(
      '/api/v1/api-tokens',
      { config: { auth: { scopes: ['api-tokens:write'] } }, schema: { body: CreateTokenBody, response: { 201: CreatedToken } } },
      async (request, reply) => {
        const issued = await service.create(request.body, request.token?.scopes ?? []);
        reply.code(201).header('location', `/api/v1/api-tokens/${issued.token.id}`);
        return createdView(issued);
      },
    );

    scope.get(
      '/api/v1/api-tokens',
      { config: { auth: { scopes: ['api-tokens:read'] } }, schema: { response: { 200: TokenList } } },
      async () => (await service.list()).map(tokenView),
    );

    scope.get(
      '/api/v1/api-tokens/current',
      { config: { auth: { scopes: [] } }, schema: { response: { 200: TokenView } } },
      async (request) => tokenView(service.withPendingUse(request.token!)),
    );

    scope.get(
      '/api/v1/api-tokens/:id',
      { config: { auth: { scopes: ['api-tokens:read'] } }, schema: { params: IdParams, response: { 200: TokenView } } },
      async (request) => {
        const token = await service.get(request.params.id);
        if (token === null) throw new AppError('NOT_FOUND', `no token with id ${request.params.id}`);
        return tokenView(token);
      },
    );

    scope.delete(
      '/api/v1/api-tokens/:id',
      { config: { auth: { scopes: ['api-tokens:write'] } }, schema: { params: IdParams } },
      async (request, reply) => {
        if (!(await service.delete(request.params.id))) throw new AppError('NOT_FOUND', `no token with id ${request.params.id}`);
        return reply.code(204).send();
      },
    );

    scope.get('/api/v1/scopes', { schema: { response: { 200: ScopeList } } }, async () => [...service.registry.all()]);
  });
}
