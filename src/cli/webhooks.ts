// `infracat webhooks list|create|update|rotate-secret|delete|test|deliveries`: the operator's
// path, straight to the configured store (no HTTP, no token needed), in one account:
// --account ID, the operator account by default. The command delivers nothing itself: the
// running instances deliver what it queues (a test event) within WEBHOOK_POLL_MS, and sign
// and send by the webhook as it is stored when each delivery falls due.
import { OPERATOR_ACCOUNT_ID } from '../accounts/ids.js';
import type { Config } from '../config.js';
import type { Store } from '../storage/types.js';
import { cliAuditContext } from '../audit/context.js';
import { AppError } from '../errors.js';
import { WEBHOOK_EVENT_TYPES } from '../webhooks/events.js';
import { createWebhookDomain } from '../webhooks/index.js';
import type { WebhookService } from '../webhooks/service.js';
import { loadEncryptionKeys } from '../webhooks/keys.js';
import { DELIVERIES_PER_PAGE_MAX } from '../webhooks/schemas.js';
import { createdWebhookView, deliveryView, webhookView } from '../webhooks/views.js';
import { UsageError, type Command } from './command.js';
import { eitherFlag, parseFlags } from './options.js';
import { CLI_PAGE, printList } from './pages.js';
import { withStore } from './store.js';
import { table } from './table.js';
import { fail } from './tokens.js';

const LIMIT_DEFAULT = 30;

/** The webhook domain on `store`, with the keys the server uses (made beside a SQLite database if none yet). */
function domainOf(config: Config, store: Store) {
  const keys = loadEncryptionKeys(config, (message) =>
    process.stderr.write(`infracat webhooks: warning: ${message}\n`),
  );
  return createWebhookDomain(config, store, keys);
}

const help = `Usage: infracat webhooks <list|create|update|rotate-secret|delete|test|deliveries> [options]

Manage webhooks directly in the configured store (DATABASE_URL or --database-url).

  infracat webhooks list [--json]
      Lists the account's webhooks (never their secrets), oldest first. --json prints
      one array of what GET /api/v1/webhooks pages.
  infracat webhooks create --url URL --events TYPE[,TYPE...] [--description TEXT]
                           [--all-accounts] [--json]
      Creates a webhook and prints its signing secret, shown this once. The URL must
      be https and resolve to public addresses (WEBHOOK_ALLOW_PRIVATE_TARGETS=true
      allows http and private ones). --all-accounts (operator account only): it gets
      every account's events. On PostgreSQL it needs WEBHOOK_ENCRYPTION_KEYS, as the
      server does.
      Event types: ${WEBHOOK_EVENT_TYPES.join(', ')}.
  infracat webhooks update ID [--url URL] [--events TYPE[,TYPE...]]
                              [--description TEXT|--no-description]
                              [--all-accounts|--own-account] [--enable|--disable] [--json]
      Changes the webhook's URL (checked as at creation), replaces its event types,
      sets or removes its description, makes it receive every account's events or its
      own account's only (--all-accounts: operator account only), or switches it on or
      off: --disable drops what it had still to deliver; --enable starts afresh one
      infracat disabled after failing. --json prints PATCH /api/v1/webhooks/{id}.
  infracat webhooks rotate-secret ID [--json]
      Gives the webhook a new signing secret and prints it, shown this once; the
      previous secret also signs for 24 hours (a second signature). --json prints
      POST /api/v1/webhooks/{id}/rotate-secret. Needs the keys create does.
  infracat webhooks delete ID [--json]
      Deletes a webhook and what it had still to deliver.
  infracat webhooks test ID [--json]
      Queues a webhook.test event to the webhook; a running infracat delivers it.
  infracat webhooks deliveries ID [--limit N] [--json]
      The webhook's delivery log, newest first: the latest N attempts (default
      ${LIMIT_DEFAULT}, at most ${DELIVERIES_PER_PAGE_MAX}).

Options:
  --account ID          the account to act in (default: the operator account,
                        ${OPERATOR_ACCOUNT_ID})
  --database-url URL    DATABASE_URL
  -h, --help            show this help
`;

const COMMON = { json: { type: 'boolean' }, account: { type: 'string' }, 'database-url': { type: 'string' } } as const;

function noWebhook(id: string, account: string): AppError {
  return new AppError('NOT_FOUND', `no webhook with id ${id} in account ${account}`);
}

function noAccount(id: string): AppError {
  return new AppError('NOT_FOUND', `no account with id ${id} (see infracat accounts list)`);
}

/** `--events a,b`: the comma-separated types, trimmed, empty entries dropped; at least one, each known. */
function typeList(text: string): string[] {
  const events = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (events.length === 0) throw new UsageError(`--events needs one or more of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0)
    throw new UsageError(`unknown event type ${unknown.join(', ')}; one of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  return events;
}

/**
 * Runs `body` on the configured store in the account of --account (the operator account by
 * default), refused when there is no such account; a refusal of the service (an AppError)
 * is printed as every command prints one, exit 1.
 */
function inAccount(
  values: { account?: string | undefined; 'database-url'?: string | undefined },
  body: (account: string, service: WebhookService) => Promise<number>,
): Promise<number> {
  return withStore(values['database-url'], async (store, config) => {
    const account = values.account ?? OPERATOR_ACCOUNT_ID;
    if ((await store.accounts.get(account)) === null) return fail(noAccount(account), 'webhooks');
    try {
      return await body(account, domainOf(config, store).service);
    } catch (err) {
      return fail(err, 'webhooks');
    }
  });
}

const write = (value: unknown): void => void process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

export const webhooksCommand: Command = {
  name: 'webhooks',
  summary: 'list, create, update, delete and test webhooks, rotate their secrets, and read their delivery logs',
  help,
  async run(args) {
    const [sub, ...rest] = args;
    if (sub === 'list') {
      const { values } = parseFlags(rest, COMMON);
      return inAccount(values, async (account, service) => {
        await printList({
          json: values.json === true,
          read: (after) => service.list(account, { after, perPage: CLI_PAGE }),
          view: webhookView,
          header: ['ID', 'URL', 'EVENTS', 'ENABLED', 'FAILING SINCE', 'DESCRIPTION'],
          cells: (webhook) => {
            const v = webhookView(webhook);
            return [
              v.id,
              v.url,
              v.all_accounts ? `${v.events.join(',')} (every account)` : v.events.join(','),
              v.enabled ? 'yes' : v.disabled_reason === 'failing' ? 'no (failing)' : 'no',
              v.failing_since ?? '-',
              v.description ?? '-',
            ];
          },
          empty: 'no webhooks',
        });
        return 0;
      });
    }
    if (sub === 'create') {
      const { values } = parseFlags(rest, {
        ...COMMON,
        url: { type: 'string' },
        events: { type: 'string' },
        description: { type: 'string' },
        'all-accounts': { type: 'boolean' },
      });
      if (values.url === undefined || values.events === undefined)
        throw new UsageError('create needs --url and --events');
      const events = typeList(values.events);
      const input = {
        url: values.url,
        events,
        description: values.description,
        all_accounts: values['all-accounts'] === true,
      };
      return inAccount(values, async (account, service) => {
        const view = createdWebhookView(await service.create(account, input, cliAuditContext()));
        if (values.json === true) write(view);
        else {
          process.stdout.write(`created ${view.id} posting ${view.events.join(', ')} to ${view.url}\n`);
          process.stdout.write(`secret: ${view.secret}\n(shown this once: store it now)\n`);
        }
        return 0;
      });
    }
    if (sub === 'update') {
      const { values, positionals } = parseFlags(
        rest,
        {
          ...COMMON,
          url: { type: 'string' },
          events: { type: 'string' },
          description: { type: 'string' },
          'no-description': { type: 'boolean' },
          'all-accounts': { type: 'boolean' },
          'own-account': { type: 'boolean' },
          enable: { type: 'boolean' },
          disable: { type: 'boolean' },
        },
        true,
      );
      if (positionals.length !== 1) throw new UsageError('update needs exactly one webhook id');
      if (values.description !== undefined && values['no-description'] === true)
        throw new UsageError('give --description or --no-description, not both');
      const enabled = eitherFlag(values, 'enable', 'disable');
      const allAccounts = eitherFlag(values, 'all-accounts', 'own-account');
      const patch = {
        ...(values.url !== undefined ? { url: values.url } : {}),
        ...(values.events !== undefined ? { events: typeList(values.events) } : {}),
        ...(values.description !== undefined ? { description: values.description } : {}),
        ...(values['no-description'] === true ? { description: null } : {}),
        ...(allAccounts !== undefined ? { all_accounts: allAccounts } : {}),
        ...(enabled !== undefined ? { enabled } : {}),
      };
      if (Object.keys(patch).length === 0)
        throw new UsageError(
          'update needs --url, --events, --description, --no-description, --all-accounts, --own-account, ' +
            '--enable or --disable',
        );
      const id = positionals[0]!;
      return inAccount(values, async (account, service) => {
        const updated = await service.update(account, id, patch, cliAuditContext());
        if (updated === null) return fail(noWebhook(id, account), 'webhooks');
        const view = webhookView(updated);
        if (values.json === true) write(view);
        else
          process.stdout.write(
            `updated ${view.id} posting ${view.events.join(', ')} to ${view.url}; ` +
              `${view.enabled ? 'enabled' : 'disabled'}\n`,
          );
        return 0;
      });
    }
    if (sub === 'rotate-secret') {
      const { values, positionals } = parseFlags(rest, COMMON, true);
      if (positionals.length !== 1) throw new UsageError('rotate-secret needs exactly one webhook id');
      const id = positionals[0]!;
      return inAccount(values, async (account, service) => {
        const issued = await service.rotateSecret(account, id, cliAuditContext());
        if (issued === null) return fail(noWebhook(id, account), 'webhooks');
        const view = createdWebhookView(issued);
        if (values.json === true) write(view);
        else {
          process.stdout.write(
            `rotated the secret of ${view.id}; the previous one also signs until ${view.previous_secret_expires_at}\n`,
          );
          process.stdout.write(`secret: ${view.secret}\n(shown this once: store it now)\n`);
        }
        return 0;
      });
    }
    if (sub === 'delete' || sub === 'test') {
      const { values, positionals } = parseFlags(rest, COMMON, true);
      if (positionals.length !== 1) throw new UsageError(`${sub} needs exactly one webhook id`);
      const id = positionals[0]!;
      return inAccount(values, async (account, service) => {
        if (sub === 'delete') {
          if (!(await service.delete(account, id, cliAuditContext()))) return fail(noWebhook(id, account), 'webhooks');
          if (values.json === true) write({ deleted: id, account_id: account });
          else process.stdout.write(`deleted ${id}\n`);
          return 0;
        }
        const queued = await service.test(account, id);
        if (queued === null) return fail(noWebhook(id, account), 'webhooks');
        if (values.json === true) write({ event_id: queued.eventId, type: 'webhook.test' });
        else
          process.stdout.write(
            `queued webhook.test ${queued.eventId} for ${id}: a running infracat delivers it ` +
              `(infracat webhooks deliveries ${id})\n`,
          );
        return 0;
      });
    }
    if (sub === 'deliveries') {
      const { values, positionals } = parseFlags(rest, { ...COMMON, limit: { type: 'string' } }, true);
      if (positionals.length !== 1) throw new UsageError('deliveries needs exactly one webhook id');
      const limit = values.limit === undefined ? LIMIT_DEFAULT : Number(values.limit);
      // Plain decimal digits only (no 1e3, 0x10, +5): Number() reads them exactly.
      if (values.limit !== undefined && (!/^[1-9][0-9]*$/.test(values.limit) || limit > DELIVERIES_PER_PAGE_MAX))
        throw new UsageError(`--limit must be a whole number from 1 to ${DELIVERIES_PER_PAGE_MAX}`);
      const id = positionals[0]!;
      return inAccount(values, async (account, service) => {
        const page = await service.deliveries(account, id, { perPage: limit });
        if (page === null) return fail(noWebhook(id, account), 'webhooks');
        const views = page.items.map(deliveryView);
        if (values.json === true) write(views);
        else if (views.length === 0) process.stdout.write('no deliveries\n');
        else
          process.stdout.write(
            table([
              ['ATTEMPTED', 'EVENT', 'TYPE', 'ATTEMPT', 'STATUS', 'MS', 'RESULT'],
              ...views.map((d) => [
                d.attempted_at,
                d.event_id,
                d.event_type,
                String(d.attempt),
                d.status_code === null ? '-' : String(d.status_code),
                String(d.duration_ms),
                d.delivered
                  ? 'delivered'
                  : `${d.error ?? 'failed'}${d.next_attempt_at === null ? '' : `; next ${d.next_attempt_at}`}`,
              ]),
            ]),
          );
        if (page.next !== null)
          process.stderr.write(`infracat webhooks: older attempts not shown: raise --limit (${limit})\n`);
        return 0;
      });
    }
    throw new UsageError(
      sub === undefined
        ? 'missing sub-command: list, create, update, rotate-secret, delete, test or deliveries'
        : `unknown sub-command '${sub}'`,
    );
  },
};
