// `infracat audit list`: the operator's view of the audit trail, straight from the
// configured store (no HTTP, no token needed): every account's events, newest first, as
// GET /api/v1/audit-events shows them to the operator account's tokens.
import { OPERATOR_ACCOUNT_ID } from '../accounts/ids.js';
import { AUDIT_ACTIONS, type AuditAction } from '../audit/events.js';
import { ID_FILTER_PATTERN } from '../audit/schemas.js';
import { AuditService } from '../audit/service.js';
import { auditEventView } from '../audit/views.js';
import type { AuditEventRecord } from '../storage/types.js';
import { parseTimestamp } from '../tokens/rules.js';
import { UsageError, type Command } from './command.js';
import { parseFlags } from './options.js';
import { withStore } from './store.js';
import { table } from './tokens.js';

const LIMIT_DEFAULT = 100;
const LIMIT_MAX = 10_000;

const help = `Usage: infracat audit list [options]

Lists the audit trail in the configured store (DATABASE_URL or --database-url): every
change to tokens, accounts and the catalog, who made it, when and from where; every
account's, newest first. Nothing in it is ever a secret.

  infracat audit list [--since T] [--until T] [--action A] [--target-id ID]
                      [--account ID] [--limit N] [--json]

Options:
  --since T             only events at or after T (RFC 3339, e.g. 2026-11-01T00:00:00Z)
  --until T             only events before T
  --action A            only this action, one of:
                        ${AUDIT_ACTIONS.join(', ')}
  --target-id ID        only events about this token, account or catalog version
  --account ID          only this account's trail (a deleted account's too)
  --limit N             at most N events, the newest (default ${LIMIT_DEFAULT}, at most ${LIMIT_MAX});
                        stderr says when there are more
  --json                the events as GET /api/v1/audit-events shows them
  --database-url URL    DATABASE_URL
  -h, --help            show this help
`;

function instant(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const parsed = parseTimestamp(text);
  if ('error' in parsed) throw new UsageError(`--${flag} ${parsed.error}`);
  return parsed.at;
}

function id(flag: string, text: string | undefined): string | undefined {
  if (text !== undefined && !ID_FILTER_PATTERN.test(text))
    throw new UsageError(`--${flag} must be an id: 1-100 letters, digits, '_' or '-'`);
  return text;
}

/** One table row: who did what to which, when, from where, in whose account. */
function row(e: AuditEventRecord): string[] {
  const who = e.actorName ?? e.actorId ?? '-';
  const what = e.targetName === null ? (e.targetId ?? '-') : `${e.targetId ?? '-'} "${e.targetName}"`;
  return [
    new Date(e.occurredAt).toISOString(),
    e.action,
    `${e.actorType} ${who}`,
    `${e.targetType} ${what}`,
    e.accountId,
    e.ip ?? '-',
  ];
}

export const auditCommand: Command = {
  name: 'audit',
  summary: 'list the audit trail (who changed which token, account or catalog)',
  help,
  async run(args) {
    const [sub, ...rest] = args;
    if (sub !== 'list')
      throw new UsageError(sub === undefined ? 'missing sub-command: list' : `unknown sub-command '${sub}'`);
    const { values } = parseFlags(rest, {
      since: { type: 'string' },
      until: { type: 'string' },
      action: { type: 'string' },
      'target-id': { type: 'string' },
      account: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      'database-url': { type: 'string' },
    });
    const since = instant('since', values.since);
    const until = instant('until', values.until);
    if (since !== undefined && until !== undefined && until <= since)
      throw new UsageError('--until must be after --since');
    const action = values.action;
    if (action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(action))
      throw new UsageError(`--action must be one of ${AUDIT_ACTIONS.join(', ')}`);
    const limit = values.limit === undefined ? LIMIT_DEFAULT : Number(values.limit);
    // Plain decimal digits only (no 1e3, 0x10, +5): Number() reads them exactly.
    if (values.limit !== undefined && (!/^[1-9][0-9]*$/.test(values.limit) || limit > LIMIT_MAX))
      throw new UsageError(`--limit must be a whole number from 1 to ${LIMIT_MAX}`);
    const query = {
      accountId: id('account', values.account),
      action: action as AuditAction | undefined,
      targetId: id('target-id', values['target-id']),
      since,
      until,
      perPage: limit,
    };
    return withStore(values['database-url'], async (store, config) => {
      // The operator's reading: every account's trail (retention plays no part in a read).
      const service = new AuditService(store.audit, { retentionMs: config.auditRetentionDays * 86_400_000 });
      const page = await service.list(OPERATOR_ACCOUNT_ID, query);
      if (values.json === true)
        process.stdout.write(
          `${JSON.stringify(
            page.events.map((e) => auditEventView(e, OPERATOR_ACCOUNT_ID)),
            null,
            2,
          )}\n`,
        );
      else if (page.events.length === 0) process.stdout.write('no audit events\n');
      else
        process.stdout.write(
          table([['OCCURRED', 'ACTION', 'ACTOR', 'TARGET', 'ACCOUNT', 'IP'], ...page.events.map(row)]),
        );
      if (page.next !== null)
        process.stderr.write(
          `infracat audit: older events not shown: raise --limit (${limit}) or narrow the filters\n`,
        );
      return 0;
    });
  },
};
