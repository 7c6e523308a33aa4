// `infracat tokens create|list|usage|rotate|update|delete`: the operator's path, straight to the
// configured store (no HTTP, no token needed), in one account: --account ID, the operator
// account by default. Running instances see a delete, a rotation or an edit within about
// a second (storage announces it: src/fleet/changes.ts).
import { OPERATOR_ACCOUNT_ID } from '../accounts/ids.js';
import { cliAuditContext } from '../audit/context.js';
import { AppError } from '../errors.js';
import { createTokenDomain } from '../tokens/index.js';
import { GRACE_MAX_S, USAGE_SPAN_DEFAULT_DAYS, USAGE_SPAN_MAX_DAYS } from '../tokens/limits.js';
import { readUsageRange } from '../tokens/usage.js';
import { createdView, rotatedView, tokenView, usageView } from '../tokens/views.js';
import type { UsageBucketView } from '../tokens/schemas.js';
import { UsageError, type Command } from './command.js';
import { formatDuration, parseDuration } from './duration.js';
import { eitherFlag, parseFlags } from './options.js';
import { CLI_PAGE, printList } from './pages.js';
import type { LastUsePosition, TokenRecord } from '../storage/types.js';
import { withStore } from './store.js';
import { table } from './table.js';
import { checkHelp, checkToken } from './tokens-check.js';

const help = `Usage: infracat tokens <create|list|usage|rotate|update|delete|check> [options]

Manage API tokens directly in the configured store (DATABASE_URL or --database-url).

  infracat tokens create --name NAME --scopes SCOPE[,SCOPE...] [--expires-at RFC3339] [CONDITIONS] [--json]
  infracat tokens create --name NAME --all-scopes [--expires-at RFC3339] [CONDITIONS] [--json]
      Creates a token and prints it; the secret is shown this once. --json prints the
      same JSON as POST /api/v1/api-tokens. CONDITIONS: --allowed-cidrs CIDR[,CIDR...]
      (the networks it may be used from; default anywhere), --not-before RFC3339
      (refused until then), --disabled (refused everywhere until enabled). --all-scopes grants every scope of the
      registry (in another account than the operator's, every scope but accounts:*):
      the way back in when the admin token is lost, and the way an upgraded database's
      operator gets a token with accounts:read and accounts:write.
  infracat tokens list [--sort created|last-used] [--json]
      Lists live tokens and those expired within TOKEN_EXPIRED_RETENTION_DAYS (never
      their secrets), oldest first: all of them, read and printed ${CLI_PAGE} at a time.
      --sort last-used: the most recently used first, never-used ones last (as
      GET /api/v1/api-tokens?sort=last_used_at). --json prints one array of what
      GET /api/v1/api-tokens pages.
  infracat tokens usage ID [--since RFC3339] [--until RFC3339] [--json]
      Prints the token's uses per hour, oldest first: valid, refused, and the refusals
      by reason; hours without a use are left out. From the hour holding --since
      (default ${USAGE_SPAN_DEFAULT_DAYS} days before --until) to --until (exclusive; default now), at most
      ${USAGE_SPAN_MAX_DAYS} days apart. --json prints the JSON of GET /api/v1/api-tokens/{id}/usage. Uses
      are written every LAST_USED_FLUSH_MS by the instances that counted them.
  infracat tokens rotate ID [--grace DURATION] [--expires-at RFC3339] [--json]
      Gives the token a new secret and prints it; the secret is shown this once. The
      old secret keeps working for --grace (30s, 15m, 1h, 1d or plain seconds, at
      most ${formatDuration(GRACE_MAX_S)}; default 0: refused at once); rotating again ends an earlier grace
      period at once (at most two live secrets). Without --expires-at the token keeps
      its expiry. --json prints the JSON of POST /api/v1/api-tokens/{id}/rotate. Other
      running instances refuse the old secret within TOKEN_CACHE_TTL_MS of the end of
      its grace period.
  infracat tokens update ID [--name NAME] [--scopes SCOPE[,SCOPE...]]
                            [--allowed-cidrs CIDR[,CIDR...]|anywhere] [--not-before RFC3339|none]
                            [--enable|--disable] [--json]
      Renames the token, replaces its scopes (any registered scope; accounts:* only in
      the operator account) and/or sets its conditions (anywhere, none: cleared).
      --json prints PATCH /api/v1/api-tokens/{id}. Other running instances apply the
      change within about a second.
  infracat tokens delete ID [--json]
      Deletes a token. Other running instances refuse it within about a second.
${checkHelp}
Options:
  --account ID          the account to act in (default: the operator account,
                        ${OPERATOR_ACCOUNT_ID})
  --database-url URL    DATABASE_URL
  -h, --help            show this help
`;

export function fail(err: unknown, command = 'tokens'): number {
  if (!(err instanceof AppError)) throw err;
  process.stderr.write(`infracat ${command}: ${err.message}\n`);
  for (const e of err.extras.errors ?? []) process.stderr.write(`  ${e.pointer.replace(/^\//, '')}: ${e.detail}\n`);
  const valid = err.extras.members?.valid_scopes;
  if (Array.isArray(valid)) process.stderr.write(`  valid scopes: ${valid.join(', ')}\n`);
  return 1;
}

export { table };

/** `--sort` of tokens list, and the order of the API each stands for. */
const LIST_SORTS = ['created', 'last-used'] as const;

/** A problem of the usage range, in the flags' words: `--until must be after --since (...)`. */
function flagProblem(e: { pointer: string; detail: string }): string {
  const detail = e.detail.replace(/\b(since|until)\b/g, '--$1');
  return detail.startsWith('--') ? detail : `${e.pointer.replace('querystring:/', '--')} ${detail}`;
}

/** One hour of usage as a table row: the refusals by reason as `reason n, ...` (`-`: none). */
function usageRow(v: UsageBucketView): string[] {
  const reasons = Object.entries(v.refused_by_reason).map(([reason, n]) => `${reason} ${n}`);
  return [v.hour, String(v.valid), String(v.refused), reasons.length === 0 ? '-' : reasons.join(', ')];
}

/** `--scopes a,b`: the comma-separated scopes, trimmed, empty entries dropped. */
function scopeList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** --allowed-cidrs: the comma-separated networks; `anywhere` (update only) clears the condition. */
function cidrList(text: string, clearable: boolean): string[] | null {
  if (clearable && text.trim() === 'anywhere') return null;
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The conditions of a token in one cell: `-` when it has none. */
function conditionsCell(v: { allowed_cidrs: string[] | null; not_before: string | null; enabled: boolean }): string {
  const parts = [
    ...(v.enabled ? [] : ['disabled']),
    ...(v.allowed_cidrs === null ? [] : [`from ${v.allowed_cidrs.join(',')}`]),
    ...(v.not_before === null ? [] : [`not before ${v.not_before}`]),
  ];
  return parts.length === 0 ? '-' : parts.join('; ');
}

function noToken(id: string, account: string): AppError {
  return new AppError('NOT_FOUND', `no token with id ${id} in account ${account}`);
}

function noAccount(id: string): AppError {
  return new AppError('NOT_FOUND', `no account with id ${id} (see infracat accounts list)`);
}

export const tokensCommand: Command = {
  name: 'tokens',
  summary: 'create, list, rotate, update, delete and check API tokens in the store; their usage',
  help,
  async run(args) {
    const [sub, ...rest] = args;
    if (sub === 'create') {
      const { values } = parseFlags(rest, {
        name: { type: 'string' },
        scopes: { type: 'string' },
        'all-scopes': { type: 'boolean' },
        'expires-at': { type: 'string' },
        'allowed-cidrs': { type: 'string' },
        'not-before': { type: 'string' },
        disabled: { type: 'boolean' },
        json: { type: 'boolean' },
        account: { type: 'string' },
        'database-url': { type: 'string' },
      });
      const all = values['all-scopes'] === true;
      if (values.name === undefined || (values.scopes === undefined) === !all) {
        throw new UsageError('create needs --name and one of --scopes or --all-scopes');
      }
      const requested = scopeList(values.scopes ?? '');
      return withStore(values['database-url'], async (store, config) => {
        const { service } = createTokenDomain(config, store);
        const account = values.account ?? OPERATOR_ACCOUNT_ID;
        const scopes = all ? service.registry.namesFor(account === OPERATOR_ACCOUNT_ID) : requested;
        try {
          const issued = await service.create(
            {
              name: values.name!,
              scopes,
              expires_at: values['expires-at'] ?? null,
              allowed_cidrs: values['allowed-cidrs'] === undefined ? null : cidrList(values['allowed-cidrs'], false),
              not_before: values['not-before'] ?? null,
              enabled: values.disabled !== true,
            },
            null,
            account,
            cliAuditContext(),
          );
          const view = createdView(issued);
          if (values.json === true) process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
          else {
            const expires = view.expires_at ? `, expires ${view.expires_at}` : '';
            process.stdout.write(`created ${view.id} "${view.name}" with ${view.scopes.join(', ')}${expires}\n`);
            process.stdout.write(`token: ${view.token}\n(shown this once: store it now)\n`);
          }
          return 0;
        } catch (err) {
          return fail(err);
        }
      });
    }
    if (sub === 'list') {
      const { values } = parseFlags(rest, {
        sort: { type: 'string' },
        json: { type: 'boolean' },
        account: { type: 'string' },
        'database-url': { type: 'string' },
      });
      const sort = values.sort ?? 'created';
      if (!(LIST_SORTS as readonly string[]).includes(sort))
        throw new UsageError(`--sort must be one of ${LIST_SORTS.join(', ')}`);
      return withStore(values['database-url'], async (store, config) => {
        const account = values.account ?? OPERATOR_ACCOUNT_ID;
        // An unknown account is an error, not an empty list (a typo must not look like "no tokens").
        if ((await store.accounts.get(account)) === null) return fail(noAccount(account));
        const { service } = createTokenDomain(config, store);
        const output = {
          json: values.json === true,
          view: tokenView,
          header: ['ID', 'NAME', 'SCOPES', 'CREATED', 'LAST USED', 'EXPIRES', 'CONDITIONS'],
          cells: (token: TokenRecord) => {
            const v = tokenView(token);
            return [
              v.id,
              v.name,
              v.scopes.join(','),
              v.created_at,
              v.last_used_at ?? 'never',
              v.expires_at ?? 'never',
              conditionsCell(v),
            ];
          },
          empty: 'no tokens',
        };
        if (sort === 'last-used')
          await printList<TokenRecord, LastUsePosition>({
            ...output,
            read: (after) => service.listByLastUse(account, { after, perPage: CLI_PAGE }),
          });
        else await printList({ ...output, read: (after) => service.list(account, { after, perPage: CLI_PAGE }) });
        return 0;
      });
    }
    if (sub === 'usage') {
      const { values, positionals } = parseFlags(
        rest,
        {
          since: { type: 'string' },
          until: { type: 'string' },
          json: { type: 'boolean' },
          account: { type: 'string' },
          'database-url': { type: 'string' },
        },
        true,
      );
      if (positionals.length !== 1) throw new UsageError('usage needs exactly one token id');
      const query = { since: values.since, until: values.until };
      // The range as the API reads it, its problems named by the flags.
      const read = readUsageRange(query, Date.now());
      if ('errors' in read) throw new UsageError(read.errors.map(flagProblem).join('; '));
      const id = positionals[0]!;
      return withStore(values['database-url'], async (store, config) => {
        const account = values.account ?? OPERATOR_ACCOUNT_ID;
        if ((await store.accounts.get(account)) === null) return fail(noAccount(account));
        const cells = await createTokenDomain(config, store).service.usage(account, id, query);
        if (cells === null) return fail(noToken(id, account));
        const hours = cells.map(usageView);
        if (values.json === true) process.stdout.write(`${JSON.stringify(hours, null, 2)}\n`);
        else if (hours.length === 0) {
          const { from, to } = read.range;
          process.stdout.write(
            `no uses of ${id} from ${new Date(from).toISOString()} to ${new Date(to).toISOString()}\n`,
          );
        } else process.stdout.write(table([['HOUR', 'VALID', 'REFUSED', 'REFUSED BY REASON'], ...hours.map(usageRow)]));
        return 0;
      });
    }
    if (sub === 'rotate') {
      const { values, positionals } = parseFlags(
        rest,
        {
          grace: { type: 'string' },
          'expires-at': { type: 'string' },
          json: { type: 'boolean' },
          account: { type: 'string' },
          'database-url': { type: 'string' },
        },
        true,
      );
      if (positionals.length !== 1) throw new UsageError('rotate needs exactly one token id');
      let grace = 0;
      if (values.grace !== undefined) {
        const parsed = parseDuration(values.grace, GRACE_MAX_S);
        if ('error' in parsed) throw new UsageError(`--grace: ${parsed.error}`);
        grace = parsed.seconds;
      }
      const id = positionals[0]!;
      return withStore(values['database-url'], async (store, config) => {
        const account = values.account ?? OPERATOR_ACCOUNT_ID;
        if ((await store.accounts.get(account)) === null) return fail(noAccount(account));
        try {
          const issued = await createTokenDomain(config, store).service.rotate(
            account,
            id,
            { grace_period_s: grace, expires_at: values['expires-at'] },
            null,
            cliAuditContext(),
          );
          if (issued === null) return fail(noToken(id, account));
          const view = rotatedView(issued);
          if (values.json === true) process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
          else {
            const previous = view.previous_secret_expires_at;
            const expires = view.expires_at ? `; the token expires ${view.expires_at}` : '';
            process.stdout.write(`rotated ${view.id} "${view.name}"${expires}\n`);
            process.stdout.write(
              previous === null
                ? 'the previous secret is refused from now on\n'
                : `the previous secret keeps working until ${previous}\n`,
            );
            process.stdout.write(`token: ${view.token}\n(shown this once: store it now)\n`);
          }
          return 0;
        } catch (err) {
          return fail(err);
        }
      });
    }
    if (sub === 'update') {
      const { values, positionals } = parseFlags(
        rest,
        {
          name: { type: 'string' },
          scopes: { type: 'string' },
          'allowed-cidrs': { type: 'string' },
          'not-before': { type: 'string' },
          enable: { type: 'boolean' },
          disable: { type: 'boolean' },
          json: { type: 'boolean' },
          account: { type: 'string' },
          'database-url': { type: 'string' },
        },
        true,
      );
      if (positionals.length !== 1) throw new UsageError('update needs exactly one token id');
      const enabled = eitherFlag(values, 'enable', 'disable');
      const conditions = {
        ...(values['allowed-cidrs'] !== undefined ? { allowed_cidrs: cidrList(values['allowed-cidrs'], true) } : {}),
        ...(values['not-before'] !== undefined
          ? { not_before: values['not-before'] === 'none' ? null : values['not-before'] }
          : {}),
        ...(enabled !== undefined ? { enabled } : {}),
      };
      if (values.name === undefined && values.scopes === undefined && Object.keys(conditions).length === 0)
        throw new UsageError('update needs --name, --scopes, --allowed-cidrs, --not-before, --enable or --disable');
      const id = positionals[0]!;
      return withStore(values['database-url'], async (store, config) => {
        const account = values.account ?? OPERATOR_ACCOUNT_ID;
        if ((await store.accounts.get(account)) === null) return fail(noAccount(account));
        try {
          const patch = {
            ...(values.name !== undefined ? { name: values.name } : {}),
            ...(values.scopes !== undefined ? { scopes: scopeList(values.scopes) } : {}),
            ...conditions,
          };
          const updated = await createTokenDomain(config, store).service.update(
            account,
            id,
            patch,
            null,
            cliAuditContext(),
          );
          if (updated === null) return fail(noToken(id, account));
          const view = tokenView(updated);
          if (values.json === true) process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
          else
            process.stdout.write(
              `updated ${view.id} "${view.name}" with ${view.scopes.join(', ')}; conditions: ${conditionsCell(view)}\n`,
            );
          return 0;
        } catch (err) {
          return fail(err);
        }
      });
    }
    if (sub === 'delete') {
      const { values, positionals } = parseFlags(
        rest,
        { json: { type: 'boolean' }, account: { type: 'string' }, 'database-url': { type: 'string' } },
        true,
      );
      if (positionals.length !== 1) throw new UsageError('delete needs exactly one token id');
      const id = positionals[0]!;
      return withStore(values['database-url'], async (store, config) => {
        const account = values.account ?? OPERATOR_ACCOUNT_ID;
        if ((await store.accounts.get(account)) === null) return fail(noAccount(account));
        if (await createTokenDomain(config, store).service.delete(account, id, null, cliAuditContext())) {
          if (values.json === true) process.stdout.write(`${JSON.stringify({ deleted: id, account_id: account })}\n`);
          else process.stdout.write(`deleted ${id}\n`);
          return 0;
        }
        return fail(noToken(id, account));
      });
    }
    if (sub === 'check') return checkToken(rest);
    throw new UsageError(
      sub === undefined
        ? 'missing sub-command: create, list, usage, rotate, update, delete or check'
        : `unknown sub-command '${sub}'`,
    );
  },
};
