// `infracat accounts create|list|update|suspend|resume|delete`: the operator's path to accounts,
// straight to the configured store (no HTTP, no token needed). Running instances refuse
// a suspended or deleted account's tokens within about a second (the change feed).
import { createAccountService } from '../accounts/index.js';
import { cliAuditContext } from '../audit/context.js';
import { accountView } from '../accounts/views.js';
import { ACCOUNT_RATE_LIMIT_MAX, type Account } from '../accounts/schemas.js';
import type { AccountFilter } from '../storage/types.js';
import { createTokenDomain } from '../tokens/index.js';
import { UsageError, type Command } from './command.js';
import { parseFlags } from './options.js';
import { withStore } from './store.js';
import { CLI_PAGE, printList } from './pages.js';
import { fail } from './tokens.js';

const help = `Usage: infracat accounts <create|list|update|suspend|resume|delete> [options]

Manage accounts (the platform's customers, each with its own tokens) directly in the
configured store (DATABASE_URL or --database-url).

  infracat accounts create --name NAME [--external-id ID] [--json]
      Creates an active account. --json prints the same JSON as POST /api/v1/accounts.
      Then: infracat tokens create --account ID ... mints its first token.
  infracat accounts list [--status active|suspended] [--external-id ID] [--json]
      Lists accounts, oldest first (the operator account first): all of them, read
      and printed ${CLI_PAGE} at a time. --json prints one array of what
      GET /api/v1/accounts pages.
  infracat accounts update ID [--name NAME] [--rate-limit N|default] [--json]
      Renames the account, or sets its own rate limit: N requests per window for all its
      tokens together (0: none), or 'default' for RATE_LIMIT_ACCOUNT. As
      PATCH /api/v1/accounts/{id}.
  infracat accounts suspend ID [--json]
  infracat accounts resume ID [--json]
      Refuses (suspend) or restores (resume) every token of the account.
  infracat accounts delete ID [--json]
      Deletes the account and every token of it.
  The operator account can be neither suspended nor deleted.

Options:
  --database-url URL    DATABASE_URL
  -h, --help            show this help
`;

/** --rate-limit: a whole number of requests per window (0: none), or 'default' (null). */
function rateLimitFlag(value: string): number | null {
  if (value === 'default') return null;
  if (!/^(0|[1-9][0-9]{0,7})$/.test(value) || Number(value) > ACCOUNT_RATE_LIMIT_MAX)
    throw new UsageError(`--rate-limit must be a whole number from 0 to ${ACCOUNT_RATE_LIMIT_MAX}, or default`);
  return Number(value);
}

function print(json: boolean, account: Account, text: string): void {
  if (json) process.stdout.write(`${JSON.stringify(account, null, 2)}\n`);
  else process.stdout.write(`${text}\n`);
}

export const accountsCommand: Command = {
  name: 'accounts',
  summary: 'create, list, update, suspend, resume and delete accounts',
  help,
  async run(args) {
    const [sub, ...rest] = args;
    if (sub === 'create') {
      const { values } = parseFlags(rest, {
        name: { type: 'string' },
        'external-id': { type: 'string' },
        json: { type: 'boolean' },
        'database-url': { type: 'string' },
      });
      if (values.name === undefined) throw new UsageError('create needs --name');
      return withStore(values['database-url'], async (store, config) => {
        const service = createAccountService(store, createTokenDomain(config, store).cache);
        try {
          const view = accountView(
            await service.create({ name: values.name!, external_id: values['external-id'] ?? null }, cliAuditContext()),
          );
          print(values.json === true, view, `created ${view.id} "${view.name}"`);
          return 0;
        } catch (err) {
          return fail(err, 'accounts');
        }
      });
    }
    if (sub === 'list') {
      const { values } = parseFlags(rest, {
        status: { type: 'string' },
        'external-id': { type: 'string' },
        json: { type: 'boolean' },
        'database-url': { type: 'string' },
      });
      const status = values.status;
      if (status !== undefined && status !== 'active' && status !== 'suspended')
        throw new UsageError('--status must be active or suspended');
      return withStore(values['database-url'], async (store, config) => {
        const service = createAccountService(store, createTokenDomain(config, store).cache);
        try {
          const filter: AccountFilter = { status, externalId: values['external-id'] };
          await printList({
            json: values.json === true,
            read: (after) => service.list(filter, { after, perPage: CLI_PAGE }),
            view: accountView,
            header: ['ID', 'NAME', 'EXTERNAL ID', 'STATUS', 'CREATED'],
            cells: (account) => {
              const v = accountView(account);
              return [v.id, v.name, v.external_id ?? '-', v.status, v.created_at];
            },
            empty: 'no accounts',
          });
          return 0;
        } catch (err) {
          return fail(err, 'accounts');
        }
      });
    }
    if (sub === 'update') {
      const { values, positionals } = parseFlags(
        rest,
        {
          name: { type: 'string' },
          'rate-limit': { type: 'string' },
          json: { type: 'boolean' },
          'database-url': { type: 'string' },
        },
        true,
      );
      if (positionals.length !== 1) throw new UsageError('update needs exactly one account id');
      if (values.name === undefined && values['rate-limit'] === undefined)
        throw new UsageError('update needs --name or --rate-limit');
      const rateLimit = values['rate-limit'] === undefined ? undefined : rateLimitFlag(values['rate-limit']);
      const id = positionals[0]!;
      return withStore(values['database-url'], async (store, config) => {
        const service = createAccountService(store, createTokenDomain(config, store).cache);
        try {
          const updated = await service.update(id, { name: values.name, rateLimit }, cliAuditContext());
          if (updated === null) {
            process.stderr.write(`infracat accounts: no account with id ${id}\n`);
            return 1;
          }
          const view = accountView(updated);
          const limit = view.rate_limit === null ? 'the default rate limit' : `a rate limit of ${view.rate_limit}`;
          print(values.json === true, view, `${view.id} "${view.name}" has ${limit}`);
          return 0;
        } catch (err) {
          return fail(err, 'accounts');
        }
      });
    }
    if (sub === 'suspend' || sub === 'resume' || sub === 'delete') {
      const { values, positionals } = parseFlags(
        rest,
        { json: { type: 'boolean' }, 'database-url': { type: 'string' } },
        true,
      );
      if (positionals.length !== 1) throw new UsageError(`${sub} needs exactly one account id`);
      const id = positionals[0]!;
      return withStore(values['database-url'], async (store, config) => {
        const service = createAccountService(store, createTokenDomain(config, store).cache);
        try {
          if (sub === 'delete') {
            if (!(await service.delete(id, cliAuditContext()))) {
              process.stderr.write(`infracat accounts: no account with id ${id}\n`);
              return 1;
            }
            if (values.json === true) process.stdout.write(`${JSON.stringify({ deleted: id })}\n`);
            else process.stdout.write(`deleted ${id} and its tokens\n`);
            return 0;
          }
          const updated = await service.update(
            id,
            { status: sub === 'suspend' ? 'suspended' : 'active' },
            cliAuditContext(),
          );
          if (updated === null) {
            process.stderr.write(`infracat accounts: no account with id ${id}\n`);
            return 1;
          }
          const view = accountView(updated);
          print(values.json === true, view, `${view.id} "${view.name}" is ${view.status}`);
          return 0;
        } catch (err) {
          return fail(err, 'accounts');
        }
      });
    }
    throw new UsageError(
      sub === undefined
        ? 'missing sub-command: create, list, update, suspend, resume or delete'
        : `unknown sub-command '${sub}'`,
    );
  },
};
