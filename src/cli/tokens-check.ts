// `infracat tokens check SECRET|-`: is this string a well-formed infracat secret (shape,
// prefix, checksum: offline), and which token has it (from the configured store)? For
// whoever holds a string found somewhere (a log, a repository, a scanner's alert) and
// must decide what to do. The string is never printed, not even in part, and `-` reads
// it from stdin, so it need not be in the shell's history or in `ps`.
import { loadConfig } from '../config.js';
import { malformation } from '../secret-scanning/pattern.js';
import { hashSecret } from '../tokens/format.js';
import { isExpired, verdictOf, type TokenRefusal } from '../tokens/verdict.js';
import { UsageError } from './command.js';
import { parseFlags } from './options.js';
import { withStore } from './store.js';

export const checkHelp = `  infracat tokens check - [--offline] [--json]
  infracat tokens check SECRET [--offline] [--json]
      Says whether a string is a well-formed infracat secret (prefix, length,
      characters and checksum: checked offline) and, unless --offline, which token
      has it (id, name, account; current or grace-period previous secret; expired or
      not), or that none does. Never prints the string. Prefer - : it reads the secret
      from stdin (printf %s "$S" | infracat tokens check -), so it stays out of the
      shell history and the process list. Exit 0 when well-formed, 1 when not.
`;

/** Longest input read from stdin: a secret is 53 characters at most; this is plenty, and bounded. */
const MAX_STDIN_BYTES = 4096;

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY)
    process.stderr.write('infracat tokens check: reading the secret from stdin (end with Ctrl-D)\n');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const bytes = chunk as Buffer;
    size += bytes.length;
    if (size > MAX_STDIN_BYTES) throw new UsageError(`stdin holds more than ${MAX_STDIN_BYTES} bytes; pass one secret`);
    chunks.push(bytes);
  }
  // One line, its end of line dropped (echo, a file); anything more is not one secret.
  const text = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (/[\r\n]/.test(text)) throw new UsageError('stdin holds more than one line; pass one secret');
  return text;
}

interface Found {
  id: string;
  name: string;
  account_id: string;
  account_status: string;
  /** Which of the token's secrets this is: its current one, or the one a rotation replaced. */
  secret: 'current' | 'previous';
  /** For a previous secret, the end of its grace period (when it stops being accepted); else null. */
  grace_ends_at: string | null;
  expires_at: string | null;
  expired: boolean;
  /** Whether the service accepts this secret now (from an address within allowed_cidrs, when it has them). */
  accepted: boolean;
  /** Why it is refused now, as the service's verification judges it; null when accepted. */
  refused_because: TokenRefusal | null;
  /** The networks it is accepted from; null: anywhere. */
  allowed_cidrs: readonly string[] | null;
}

/** How `refused now` reads for each reason. */
const REFUSALS: Record<TokenRefusal, string> = {
  unknown: 'its grace period ended',
  suspended: 'its account is not active',
  expired: 'expired',
  disabled: 'disabled',
  not_yet_valid: 'not valid yet: before its not_before',
};

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function describe(found: Found | null): string {
  if (found === null) return 'no token has this secret (never issued by this database, or deleted, revoked or purged)';
  const status = found.account_status !== 'active' ? ` (${found.account_status})` : '';
  const lines = [
    `token ${found.id} "${found.name}" in account ${found.account_id}${status}`,
    found.grace_ends_at === null
      ? `  this is its ${found.secret} secret`
      : `  this is its previous secret (rotated out; grace period ${found.accepted ? 'until' : 'ended'} ` +
        `${found.grace_ends_at})`,
    `  ${found.expires_at === null ? 'never expires' : `${found.expired ? 'expired' : 'expires'} ${found.expires_at}`}`,
    found.refused_because === null
      ? `  accepted now${found.allowed_cidrs === null ? '' : ` from ${found.allowed_cidrs.join(', ')} only`}: ` +
        'revoke it if it leaked (infracat tokens delete ID)'
      : `  refused now (${REFUSALS[found.refused_because]})`,
  ];
  return lines.join('\n');
}

export async function checkToken(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    { json: { type: 'boolean' }, offline: { type: 'boolean' }, 'database-url': { type: 'string' } },
    true,
  );
  // The positional is never quoted back: it may be a secret.
  if (positionals.length !== 1) throw new UsageError('check needs exactly one secret, or - to read it from stdin');
  const secret = positionals[0] === '-' ? await readStdin() : positionals[0]!;
  const url = values['database-url'];
  const { tokenPrefix } = loadConfig(process.env, url !== undefined ? { DATABASE_URL: url } : {});
  const json = values.json === true;
  const why = malformation(secret, tokenPrefix);
  if (why !== null) {
    if (json) process.stdout.write(`${JSON.stringify({ well_formed: false, reason: why })}\n`);
    process.stderr.write(`infracat tokens: not a well-formed infracat secret: ${why}\n`);
    return 1;
  }
  const hash = hashSecret(secret);
  if (values.offline === true) {
    if (json) process.stdout.write(`${JSON.stringify({ well_formed: true, token_hash: hash, looked_up: false })}\n`);
    else process.stdout.write(`well-formed infracat secret (prefix ${tokenPrefix}_, checksum valid); not looked up\n`);
    return 0;
  }
  const found = await withStore(url, async (store) => {
    const token = await store.tokens.findByHash(hash);
    if (token === null) return null;
    const now = Date.now();
    const verdict = verdictOf(token, hash, now);
    // findByHash matches the current secret or the previous one of a rotation.
    const current = token.secretHash === hash;
    const graceEnd = current ? null : (token.previousExpiresAt ?? now);
    return {
      id: token.id,
      name: token.name,
      account_id: token.accountId,
      account_status: token.accountStatus,
      secret: current ? 'current' : 'previous',
      grace_ends_at: iso(graceEnd),
      expires_at: iso(token.expiresAt),
      expired: isExpired(token, now),
      accepted: verdict.ok,
      refused_because: verdict.ok ? null : verdict.reason,
      allowed_cidrs: token.allowedCidrs,
    } satisfies Found;
  });
  if (json)
    process.stdout.write(`${JSON.stringify({ well_formed: true, token_hash: hash, looked_up: true, token: found })}\n`);
  else
    process.stdout.write(`well-formed infracat secret (prefix ${tokenPrefix}_, checksum valid)\n${describe(found)}\n`);
  return 0;
}
