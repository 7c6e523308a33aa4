// The token endpoints of the spec, plus GET /api-tokens/{id}, GET /api-tokens/current,
// PATCH /api-tokens/{id}, POST /api-tokens/{id}/rotate and GET /scopes. Every response
// here carries Cache-Control: no-store. Each acts inside the calling token's account
// only: another account's token id is answered exactly as an unknown one (404), so
// nothing here tells whether it exists.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { auditContext } from '../audit/context.js';
import { AppError } from '../errors.js';
import { callerOf } from '../http/caller.js';
import { installMergePatchParser } from '../http/json-body.js';
import { noStoreAnswers } from '../http/no-store.js';
import { NoQuery } from '../http/no-query.js';
import { noBodyAsEmptyObject } from '../http/optional-body.js';
import { readTokenListQuery } from '../http/page-query.js';
import type { App } from '../http/types.js';
import { GRACE_MAX_S, USAGE_SPAN_DEFAULT_DAYS, USAGE_SPAN_MAX_DAYS } from './limits.js';
import {
  CreatedToken,
  CreateTokenBody,
  CurrentTokenView,
  IdParams,
  PatchTokenBody,
  RotateTokenBody,
  RotatedToken,
  LIST_PER_PAGE_DEFAULT,
  LIST_PER_PAGE_MAX,
  pagedList,
  ScopeList,
  TOKEN_LIST_ORDER,
  TokenListQuery,
  TokenView,
  UsageList,
  UsageQuery,
  type UsageBucketView,
} from './schemas.js';
import { nextLastUsePageLink, nextPageLink, type TokenListPage } from './query.js';
import { createdView, currentView, rotatedView, tokenView, usageView } from './views.js';
import type { TokenService } from './service.js';

const tags = ['tokens'];

// The OpenAPI prose of rotate and patch, shared with their /accounts/{id}/api-tokens twins.
export const ROTATE_DESCRIPTION =
  'Gives the token a new secret and answers it once, in `token` (the token keeps its id, name, scopes and ' +
  'created_at), and in `previous_secret_expires_at` until when the secret current until now works (null: ' +
  'no grace period). Body (optional; no body at all is `{}`): `grace_period_s`, how many seconds the secret ' +
  `current until now keeps working (0 to ${GRACE_MAX_S}, default 0: refused at once); \`expires_at\`, a new expiry ` +
  "with the rules of creation (absent: the token keeps its expiry, capped at the calling token's). " +
  'At most two secrets are ever live: rotating again during a grace period ends that grace period at once ' +
  '(the oldest secret is refused, the one current until now gets the new grace period). ' +
  'The old secret is refused at once by the instance that rotated (after its grace period), and within ' +
  'TOKEN_CACHE_TTL_MS by the others. A token can rotate only tokens it could delete: those whose scopes ' +
  'it holds (itself included); otherwise 403 INSUFFICIENT_SCOPE. An expired token: 409 CONFLICT (create a ' +
  "new one). Unknown id, or another account's: 404.";
export const PATCH_DESCRIPTION =
  'A JSON merge patch (RFC 7396), as `application/merge-patch+json` or `application/json`: the fields ' +
  'present are set (`name`, `scopes`: the whole new list), the others kept; `{}` answers the token ' +
  'unchanged. null or any other field is 422. As at creation, the calling token must hold every scope it ' +
  'grants, and it edits only tokens it could delete (whose scopes it holds): otherwise 403 ' +
  'INSUFFICIENT_SCOPE. Narrowed scopes are enforced at once on the instance that made the change and within ' +
  "TOKEN_CACHE_TTL_MS on the others. Unknown id, or another account's: 404.";
export const ROTATE_CONFLICT = 'The token has expired and cannot be rotated (CONFLICT)';
// The OpenAPI prose of the token list, shared with its /accounts/{id}/api-tokens twin.
export const TOKEN_LIST_DESCRIPTION =
  'Live tokens and those expired within TOKEN_EXPIRED_RETENTION_DAYS (so their owner sees why they stopped ' +
  `working), oldest first (created_at, then id). At most \`per_page\` tokens (default ${LIST_PER_PAGE_DEFAULT}, ` +
  `at most ${LIST_PER_PAGE_MAX}); when more follow, a \`Link: <...>; rel="next"\` header names the next page ` +
  '(follow it as it is): keyset pages, so tokens created meanwhile never make a page skip or repeat one. ' +
  '`sort=last_used_at` orders the whole list by last use instead: the most recently used first, never-used ' +
  'tokens last, ties by id; the order of last_used_at as written (every LAST_USED_FLUSH_MS). A token used ' +
  'during a walk moves ahead, to a page already read: no token is ever listed twice, and one used meanwhile ' +
  'may not come again. The next link keeps `sort`; a cursor of the other order is 400 INVALID_QUERY. ' +
  'The body stays a bare array.';

/**
 * One page of the account's tokens in the order `page` asks for, and the Link header of the
 * next one (with the query's `sort` as the client wrote it): shared by /api/v1/api-tokens
 * and its operator twin.
 */
export async function tokenListAnswer(
  service: TokenService,
  accountId: string,
  page: TokenListPage,
  sort: TokenListQuery['sort'],
  path: string,
): Promise<{ tokens: TokenView[]; link: string | null }> {
  if (page.sort === 'last_used_at') {
    const { items, next } = await service.listByLastUse(accountId, page);
    return {
      tokens: items.map(tokenView),
      link: next === null ? null : nextLastUsePageLink(path, { sort }, page.perPage, next),
    };
  }
  const { items, next } = await service.list(accountId, page);
  return {
    tokens: items.map(tokenView),
    link: next === null ? null : nextPageLink(path, { sort }, page.perPage, next),
  };
}

// The OpenAPI prose of the usage, shared with its /accounts/{id}/api-tokens twin.
export const USAGE_DESCRIPTION =
  "The token's uses counted per hour: a bare array of hourly buckets, oldest first, each with `valid` (uses " +
  'let through), `refused` and `refused_by_reason` (only the reasons with a count). Hours without any use ' +
  `are absent. \`since\` and \`until\` (RFC 3339) choose the hours: from the hour holding since (default: ` +
  `${USAGE_SPAN_DEFAULT_DAYS} days before until) to until (exclusive; default: now), at most ` +
  `${USAGE_SPAN_MAX_DAYS} days apart (400 INVALID_QUERY otherwise). Uses are counted in memory and written ` +
  'every LAST_USED_FLUSH_MS (1 s by default): a use shows here within that interval plus the time its batch ' +
  "takes. Kept TOKEN_USAGE_RETENTION_DAYS (90 by default). Unknown id, or another account's: 404.";

/**
 * The usage answer of a token of `accountId`, or 404: shared by /api/v1/api-tokens/{id}/usage
 * and its operator twin.
 */
export async function usageAnswer(
  service: TokenService,
  accountId: string,
  id: string,
  query: UsageQuery,
): Promise<UsageBucketView[]> {
  const cells = await service.usage(accountId, id, query);
  if (cells === null) throw new AppError('NOT_FOUND', `no token with id ${id}`);
  return cells.map(usageView);
}

const LIST_PATH = '/api/v1/api-tokens';

export interface TokenRouteOptions {
  service: TokenService;
}

export function tokenRoutes(app: App, { service }: TokenRouteOptions): void {
  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    noStoreAnswers(api);

    api.post(
      '/api/v1/api-tokens',
      {
        config: {
          auth: { scopes: ['api-tokens:write'] },
          problems: { 409: 'The cap on live tokens is reached (TOKEN_LIMIT_REACHED)' },
        },
        schema: {
          tags,
          operationId: 'createApiToken',
          summary: 'Create an API token',
          description:
            'The response is the only one that ever shows the secret (`token`). ' +
            'A token can only grant scopes it holds itself (403 INSUFFICIENT_SCOPE), ' +
            'and the new token never outlives it: ' +
            "without `expires_at` it gets the calling token's expiry; " +
            'a later one, or null from an expiring token, is 422. ' +
            '409 TOKEN_LIMIT_REACHED past TOKEN_MAX_LIVE live tokens in the account. ' +
            "The token is created in the calling token's account; only the operator account's tokens " +
            'may hold accounts:* scopes (422 elsewhere).',
          body: CreateTokenBody,
          response: {
            201: CreatedToken,
          },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request.token);
        const issued = await service.create(request.body, caller, caller.accountId, auditContext(request));
        reply.code(201).header('location', `/api/v1/api-tokens/${issued.token.id}`);
        return createdView(issued);
      },
    );

    api.get(
      LIST_PATH,
      {
        config: { auth: { scopes: ['api-tokens:read'] } },
        schema: {
          tags,
          operationId: 'listApiTokens',
          summary:
            "List the calling token's account's live API tokens (never their secrets), oldest first or by last use",
          description: TOKEN_LIST_DESCRIPTION,
          querystring: TokenListQuery,
          response: { 200: pagedList(TokenView, 'API tokens', TOKEN_LIST_ORDER) },
        },
      },
      async (request, reply) => {
        const page = readTokenListQuery(request.query);
        const accountId = callerOf(request.token).accountId;
        const { tokens, link } = await tokenListAnswer(service, accountId, page, request.query.sort, LIST_PATH);
        if (link !== null) reply.header('link', link);
        return tokens;
      },
    );

    api.get(
      '/api/v1/api-tokens/current',
      {
        config: { auth: { scopes: [] } },
        schema: {
          tags,
          operationId: 'getCurrentApiToken',
          summary: "The calling token's own metadata, and its account",
          querystring: NoQuery,
          response: { 200: CurrentTokenView },
        },
      },
      async (request) => currentView(service.withPendingUse(request.token!)),
    );

    api.get(
      '/api/v1/api-tokens/:id',
      {
        config: { auth: { scopes: ['api-tokens:read'] } },
        schema: {
          tags,
          operationId: 'getApiToken',
          summary: "One live API token of the calling token's account (another account's id: 404)",
          params: IdParams,
          querystring: NoQuery,
          response: { 200: TokenView },
        },
      },
      async (request) => {
        const token = await service.get(callerOf(request.token).accountId, request.params.id);
        if (token === null) throw new AppError('NOT_FOUND', `no token with id ${request.params.id}`);
        return tokenView(token);
      },
    );

    api.get(
      '/api/v1/api-tokens/:id/usage',
      {
        config: { auth: { scopes: ['api-tokens:read'] } },
        schema: {
          tags,
          operationId: 'getApiTokenUsage',
          summary: "A token's uses per hour, valid and refused by reason",
          description: USAGE_DESCRIPTION,
          params: IdParams,
          querystring: UsageQuery,
          response: { 200: UsageList },
        },
      },
      async (request) => usageAnswer(service, callerOf(request.token).accountId, request.params.id, request.query),
    );

    api.delete(
      '/api/v1/api-tokens/:id',
      {
        config: { auth: { scopes: ['api-tokens:write'] } },
        schema: {
          tags,
          operationId: 'deleteApiToken',
          summary: 'Delete an API token (refused everywhere within TOKEN_CACHE_TTL_MS)',
          description:
            'A token can delete only tokens whose scopes it holds itself (itself included); ' +
            'otherwise 403 INSUFFICIENT_SCOPE naming the scopes it lacks. ' +
            "Unknown id, or another account's: 404.",
          params: IdParams,
          response: { 204: { type: 'null', description: 'Deleted' } },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request.token);
        if (!(await service.delete(caller.accountId, request.params.id, caller, auditContext(request))))
          throw new AppError('NOT_FOUND', `no token with id ${request.params.id}`);
        return reply.code(204).send(null);
      },
    );

    api.post(
      '/api/v1/api-tokens/:id/rotate',
      {
        config: { auth: { scopes: ['api-tokens:write'] }, problems: { 409: ROTATE_CONFLICT } },
        // Before validation: a request without a body is `{}`.
        preValidation: noBodyAsEmptyObject,
        schema: {
          tags,
          operationId: 'rotateApiToken',
          summary: 'Rotate an API token: a new secret, the old one kept for an optional grace period',
          description: ROTATE_DESCRIPTION,
          params: IdParams,
          body: RotateTokenBody,
          response: { 200: RotatedToken },
        },
      },
      async (request) => {
        const caller = callerOf(request.token);
        const issued = await service.rotate(
          caller.accountId,
          request.params.id,
          request.body,
          caller,
          auditContext(request),
        );
        if (issued === null) throw new AppError('NOT_FOUND', `no token with id ${request.params.id}`);
        return rotatedView(issued);
      },
    );

    // The merge-patch media type is accepted by this route only (its own plugin), as for
    // PATCH /api/v1/accounts/{id}.
    void api.register(async (patchPlugin) => {
      installMergePatchParser(patchPlugin);
      patchPlugin.withTypeProvider<TypeBoxTypeProvider>().patch(
        '/api/v1/api-tokens/:id',
        {
          config: { auth: { scopes: ['api-tokens:write'] } },
          schema: {
            tags,
            operationId: 'updateApiToken',
            summary: 'Rename an API token or change its scopes (JSON merge patch)',
            description: PATCH_DESCRIPTION,
            consumes: ['application/merge-patch+json', 'application/json'],
            params: IdParams,
            body: PatchTokenBody,
            response: { 200: TokenView },
          },
        },
        async (request) => {
          const caller = callerOf(request.token);
          const token = await service.update(
            caller.accountId,
            request.params.id,
            request.body,
            caller,
            auditContext(request),
          );
          if (token === null) throw new AppError('NOT_FOUND', `no token with id ${request.params.id}`);
          return tokenView(token);
        },
      );
    });

    api.get(
      '/api/v1/scopes',
      {
        // From memory, anonymous: no storage fault reaches it; only a server shutting down refuses it.
        config: { problems: { 500: null, 503: 'The server is shutting down (SERVICE_UNAVAILABLE)' } },
        schema: {
          tags,
          operationId: 'listScopes',
          summary: 'The scope registry, with a description each',
          querystring: NoQuery,
          response: { 200: ScopeList },
        },
      },
      async () => [...service.registry.all()],
    );
  });
}
