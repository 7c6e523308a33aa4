// The operator plane: /api/v1/accounts (create, list, get, patch, delete) and
// /api/v1/accounts/{id}/api-tokens (the tokens of one account, with the same bodies and
// answers as /api/v1/api-tokens: create, list, get, patch, rotate, delete). Only tokens
// of the operator account may hold the accounts:* scopes these need; they are also
// refused any other account's token here, whatever it holds (fail closed). Every
// response carries Cache-Control: no-store.
import { auditContext } from '../audit/context.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { installMergePatchParser } from '../http/json-body.js';
import { noStoreAnswers } from '../http/no-store.js';
import { NoQuery } from '../http/no-query.js';
import { noBodyAsEmptyObject } from '../http/optional-body.js';
import { callerOf } from '../http/caller.js';
import { readPageQuery, readTokenListQuery } from '../http/page-query.js';
import type { App } from '../http/types.js';
import { nextPageLink } from '../tokens/query.js';
import {
  PATCH_DESCRIPTION,
  ROTATE_CONFLICT,
  ROTATE_DESCRIPTION,
  TOKEN_LIST_DESCRIPTION,
  tokenListAnswer,
  USAGE_DESCRIPTION,
  usageAnswer,
} from '../tokens/routes.js';
import {
  CreatedToken,
  RotatedToken,
  CreateTokenBody,
  LIST_PER_PAGE_DEFAULT,
  LIST_PER_PAGE_MAX,
  pagedList,
  PatchTokenBody,
  RotateTokenBody,
  TOKEN_LIST_ORDER,
  TokenListQuery,
  TokenView,
  UsageList,
  UsageQuery,
} from '../tokens/schemas.js';
import type { TokenService } from '../tokens/service.js';
import { createdView, rotatedView, tokenView } from '../tokens/views.js';
import { isOperatorAccount } from './ids.js';
import {
  Account,
  AccountIdParams,
  AccountQuery,
  AccountTokenParams,
  CreateAccountBody,
  PatchAccountBody,
} from './schemas.js';
import type { AccountService } from './service.js';
import { accountView } from './views.js';

const tags = ['accounts'];

export interface AccountRouteOptions {
  accounts: AccountService;
  tokens: TokenService;
}

/** 403 unless the authenticated token belongs to the operator account. */
async function operatorOnly(request: FastifyRequest): Promise<void> {
  const token = request.token;
  if (token !== null && !isOperatorAccount(token.accountId)) {
    throw new AppError('INSUFFICIENT_SCOPE', 'only tokens of the operator account may manage accounts');
  }
}

const notFound = (id: string) => new AppError('NOT_FOUND', `no account with id ${id}`);

export function accountRoutes(app: App, { accounts, tokens }: AccountRouteOptions): void {
  /** The account, or 404: the account-scoped token routes act only inside an existing account. */
  async function existing(id: string): Promise<string> {
    if ((await accounts.get(id)) === null) throw notFound(id);
    return id;
  }

  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    noStoreAnswers(api);
    // After authentication (the routes' own onRequest hooks), before the body is validated.
    api.addHook('preValidation', operatorOnly);

    api.post(
      '/api/v1/accounts',
      {
        config: {
          auth: { scopes: ['accounts:write'] },
          problems: { 409: 'The external_id is already taken (CONFLICT)' },
        },
        schema: {
          tags,
          operationId: 'createAccount',
          summary: 'Create an account (active)',
          description: '201 with Location. 409 CONFLICT when another account has the same external_id.',
          body: CreateAccountBody,
          response: { 201: Account },
        },
      },
      async (request, reply) => {
        const account = await accounts.create(request.body, auditContext(request));
        reply.code(201).header('location', `/api/v1/accounts/${account.id}`);
        return accountView(account);
      },
    );

    api.get(
      '/api/v1/accounts',
      {
        config: { auth: { scopes: ['accounts:read'] } },
        schema: {
          tags,
          operationId: 'listAccounts',
          summary: 'List accounts, oldest first (the operator account first)',
          description:
            `Filters combine. At most \`per_page\` accounts (default ${LIST_PER_PAGE_DEFAULT}, ` +
            `at most ${LIST_PER_PAGE_MAX}); when more follow, a \`Link: <...>; rel="next"\` header names ` +
            'the next page with the same filters (follow it as it is): keyset pages, so accounts ' +
            'created meanwhile never make a page skip or repeat one.',
          querystring: AccountQuery,
          response: { 200: pagedList(Account, 'Accounts') },
        },
      },
      async (request, reply) => {
        const page = readPageQuery(request.query);
        const { status, external_id } = request.query;
        const { items, next } = await accounts.list({ status, externalId: external_id }, page);
        if (next !== null)
          reply.header('link', nextPageLink('/api/v1/accounts', { status, external_id }, page.perPage, next));
        return items.map(accountView);
      },
    );

    api.get(
      '/api/v1/accounts/:id',
      {
        config: { auth: { scopes: ['accounts:read'] } },
        schema: {
          tags,
          operationId: 'getAccount',
          summary: 'One account',
          params: AccountIdParams,
          querystring: NoQuery,
          response: { 200: Account },
        },
      },
      async (request) => {
        const account = await accounts.get(request.params.id);
        if (account === null) throw notFound(request.params.id);
        return accountView(account);
      },
    );

    api.delete(
      '/api/v1/accounts/:id',
      {
        config: {
          auth: { scopes: ['accounts:write'] },
          problems: { 409: 'The operator account cannot be deleted (OPERATOR_ACCOUNT)' },
        },
        schema: {
          tags,
          operationId: 'deleteAccount',
          summary: 'Delete an account and every token of it',
          description:
            'Its tokens are deleted with it: refused at once by this instance, by the others within ' +
            'TOKEN_CACHE_TTL_MS. The operator account: 409 OPERATOR_ACCOUNT.',
          params: AccountIdParams,
          response: { 204: { type: 'null', description: 'Deleted' } },
        },
      },
      async (request, reply) => {
        if (!(await accounts.delete(request.params.id, auditContext(request)))) throw notFound(request.params.id);
        return reply.code(204).send(null);
      },
    );

    // The merge-patch media type is accepted by this route only (its own plugin).
    void api.register(async (patchPlugin) => {
      const patchApi = patchPlugin.withTypeProvider<TypeBoxTypeProvider>();
      installMergePatchParser(patchPlugin);
      patchApi.patch(
        '/api/v1/accounts/:id',
        {
          config: {
            auth: { scopes: ['accounts:write'] },
            problems: { 409: 'The operator account cannot be suspended (OPERATOR_ACCOUNT)' },
          },
          schema: {
            tags,
            operationId: 'updateAccount',
            summary: 'Rename, suspend or resume an account, or set its rate limit (JSON merge patch)',
            description:
              'A JSON merge patch (RFC 7396), as `application/merge-patch+json` or `application/json`: ' +
              'the fields present are set (`name`, `status`, `rate_limit`), the others kept; `{}` changes ' +
              'nothing. `rate_limit` null returns the account to the default (RATE_LIMIT_ACCOUNT); null for ' +
              'another field, or any other field, is 422. Suspending refuses every token of the account ' +
              '(401 invalid_token) at once on this instance and within about a second on the others; ' +
              'resuming restores them; a new rate limit applies the same way. ' +
              'The operator account: 409 OPERATOR_ACCOUNT.',
            consumes: ['application/merge-patch+json', 'application/json'],
            params: AccountIdParams,
            body: PatchAccountBody,
            response: { 200: Account },
          },
        },
        async (request) => {
          const { name, status, rate_limit: rateLimit } = request.body;
          const account = await accounts.update(request.params.id, { name, status, rateLimit }, auditContext(request));
          if (account === null) throw notFound(request.params.id);
          return accountView(account);
        },
      );

      patchApi.patch(
        '/api/v1/accounts/:id/api-tokens/:token_id',
        {
          config: { auth: { scopes: ['accounts:write'] } },
          schema: {
            tags,
            operationId: 'updateAccountApiToken',
            summary: 'Rename an API token of an account or change its scopes (JSON merge patch)',
            description: `As PATCH /api/v1/api-tokens/{id}, inside account {id}. ${PATCH_DESCRIPTION}`,
            consumes: ['application/merge-patch+json', 'application/json'],
            params: AccountTokenParams,
            body: PatchTokenBody,
            response: { 200: TokenView },
          },
        },
        async (request) => {
          const id = await existing(request.params.id);
          const token = await tokens.update(
            id,
            request.params.token_id,
            request.body,
            callerOf(request.token),
            auditContext(request),
          );
          if (token === null) throw new AppError('NOT_FOUND', `no token with id ${request.params.token_id}`);
          return tokenView(token);
        },
      );
    });

    api.post(
      '/api/v1/accounts/:id/api-tokens',
      {
        config: {
          auth: { scopes: ['accounts:write'] },
          problems: { 409: 'The cap on live tokens of the account is reached (TOKEN_LIMIT_REACHED)' },
        },
        schema: {
          tags,
          operationId: 'createAccountApiToken',
          summary: 'Create an API token in an account (how a new customer gets its first token)',
          description:
            'Same body and answer as POST /api/v1/api-tokens, inside account {id}. The calling token ' +
            'still grants only scopes it holds (403 INSUFFICIENT_SCOPE) and the new token never outlives ' +
            'it; accounts:* scopes are 422 in any account but the operator one.',
          params: AccountIdParams,
          body: CreateTokenBody,
          response: { 201: CreatedToken },
        },
      },
      async (request, reply) => {
        const id = await existing(request.params.id);
        const issued = await tokens.create(request.body, callerOf(request.token), id, auditContext(request));
        reply.code(201).header('location', `/api/v1/accounts/${id}/api-tokens/${issued.token.id}`);
        return createdView(issued);
      },
    );

    api.get(
      '/api/v1/accounts/:id/api-tokens',
      {
        config: { auth: { scopes: ['accounts:read'] } },
        schema: {
          tags,
          operationId: 'listAccountApiTokens',
          summary: "An account's live API tokens (never their secrets), oldest first or by last use",
          description: `As GET /api/v1/api-tokens, inside account {id}. ${TOKEN_LIST_DESCRIPTION}`,
          params: AccountIdParams,
          querystring: TokenListQuery,
          response: { 200: pagedList(TokenView, 'API tokens', TOKEN_LIST_ORDER) },
        },
      },
      async (request, reply) => {
        const page = readTokenListQuery(request.query);
        const id = await existing(request.params.id);
        const path = `/api/v1/accounts/${encodeURIComponent(id)}/api-tokens`;
        const { tokens: listed, link } = await tokenListAnswer(tokens, id, page, request.query.sort, path);
        if (link !== null) reply.header('link', link);
        return listed;
      },
    );

    api.get(
      '/api/v1/accounts/:id/api-tokens/:token_id',
      {
        config: { auth: { scopes: ['accounts:read'] } },
        schema: {
          tags,
          operationId: 'getAccountApiToken',
          summary: 'One live API token of an account',
          params: AccountTokenParams,
          querystring: NoQuery,
          response: { 200: TokenView },
        },
      },
      async (request) => {
        const token = await tokens.get(await existing(request.params.id), request.params.token_id);
        if (token === null) throw new AppError('NOT_FOUND', `no token with id ${request.params.token_id}`);
        return tokenView(token);
      },
    );

    api.get(
      '/api/v1/accounts/:id/api-tokens/:token_id/usage',
      {
        config: { auth: { scopes: ['accounts:read'] } },
        schema: {
          tags,
          operationId: 'getAccountApiTokenUsage',
          summary: "A token's uses per hour, in an account",
          description: `As GET /api/v1/api-tokens/{id}/usage, inside account {id}. ${USAGE_DESCRIPTION}`,
          params: AccountTokenParams,
          querystring: UsageQuery,
          response: { 200: UsageList },
        },
      },
      async (request) => usageAnswer(tokens, await existing(request.params.id), request.params.token_id, request.query),
    );

    api.post(
      '/api/v1/accounts/:id/api-tokens/:token_id/rotate',
      {
        config: { auth: { scopes: ['accounts:write'] }, problems: { 409: ROTATE_CONFLICT } },
        // Before validation: a request without a body is `{}`.
        preValidation: noBodyAsEmptyObject,
        schema: {
          tags,
          operationId: 'rotateAccountApiToken',
          summary: 'Rotate an API token of an account: a new secret, the old one kept for an optional grace period',
          description: `As POST /api/v1/api-tokens/{id}/rotate, inside account {id}. ${ROTATE_DESCRIPTION}`,
          params: AccountTokenParams,
          body: RotateTokenBody,
          response: { 200: RotatedToken },
        },
      },
      async (request) => {
        const id = await existing(request.params.id);
        const issued = await tokens.rotate(
          id,
          request.params.token_id,
          request.body,
          callerOf(request.token),
          auditContext(request),
        );
        if (issued === null) throw new AppError('NOT_FOUND', `no token with id ${request.params.token_id}`);
        return rotatedView(issued);
      },
    );

    api.delete(
      '/api/v1/accounts/:id/api-tokens/:token_id',
      {
        config: { auth: { scopes: ['accounts:write'] } },
        schema: {
          tags,
          operationId: 'deleteAccountApiToken',
          summary: 'Delete an API token of an account',
          description:
            'As DELETE /api/v1/api-tokens/{id}, inside account {id}: the calling token deletes only ' +
            "tokens whose scopes it holds (403 INSUFFICIENT_SCOPE). Unknown id, or another account's: 404.",
          params: AccountTokenParams,
          response: { 204: { type: 'null', description: 'Deleted' } },
        },
      },
      async (request, reply) => {
        const id = await existing(request.params.id);
        if (!(await tokens.delete(id, request.params.token_id, callerOf(request.token), auditContext(request))))
          throw new AppError('NOT_FOUND', `no token with id ${request.params.token_id}`);
        return reply.code(204).send(null);
      },
    );
  });
}
