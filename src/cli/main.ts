#!/usr/bin/env node
// The `infracat` command: dispatches to one module per sub-command.
import { ConfigError } from '../config-error.js';
import { loadConfig, type SettingName } from '../config.js';
import { describeDatabase } from '../storage/database-url.js';
import { explainFailure, type FailureContext } from './failure.js';
import { VERSION } from '../version.js';
import { UsageError, type Command } from './command.js';
import { migrateCommand } from './migrate.js';
import { FLAGS, flagName, serveCommand } from './serve.js';
import { tokensCommand } from './tokens.js';
import { accountsCommand } from './accounts.js';
import { catalogCommand } from './catalog.js';
import { backupCommand } from './backup.js';
import { auditCommand } from './audit.js';
import { webhooksCommand } from './webhooks.js';

const COMMANDS: readonly Command[] = [
  serveCommand,
  migrateCommand,
  tokensCommand,
  accountsCommand,
  catalogCommand,
  auditCommand,
  webhooksCommand,
  backupCommand,
];

const mainHelp = `Usage: infracat <command> [options]

infracat: the catalog and API-token service of a cloud platform's control plane.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}
  help       show help for a command (infracat help serve)

Options:
  -h, --help     show this help
  -v, --version  print the version

Run 'infracat <command> --help' for a command's options.
`;

/**
 * Where a failed command was working: its settings as loadConfig read them, with the flags
 * (serve's; the other commands take --database-url alone).
 */
function failureContext(args: string[]): FailureContext {
  const overrides: Partial<Record<SettingName, string>> = {};
  for (const { env } of FLAGS) {
    const name = flagName(env);
    const i = args.indexOf(`--${name}`);
    const value = i >= 0 ? args[i + 1] : args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
    if (value !== undefined) overrides[env] = value;
  }
  try {
    const config = loadConfig(process.env, overrides);
    return { database: describeDatabase(config.database), listen: `${config.host}:${config.port}` };
  } catch {
    // The settings themselves are bad: the failure is a ConfigError, which needs no context.
    return { database: 'the configured database' };
  }
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help') {
    process.stdout.write(mainHelp);
    return name === undefined ? 2 : 0;
  }
  if (name === '-v' || name === '--version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (name === 'help') {
    const target = COMMANDS.find((c) => c.name === rest[0]);
    process.stdout.write(target?.help ?? mainHelp);
    return target !== undefined || rest[0] === undefined ? 0 : 2;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) {
    process.stderr.write(`infracat: unknown command '${name}'\n\n${mainHelp}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(command.help);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        `infracat ${command.name}: ${err.message}\nRun 'infracat ${command.name} --help' for usage.\n`,
      );
      return 2;
    }
    const { message, exitCode } = explainFailure(err, failureContext(rest));
    // A bad setting is the process's, not the command's: the same line whatever the command.
    process.stderr.write(`${err instanceof ConfigError ? 'infracat' : `infracat ${command.name}`}: ${message}\n`);
    return exitCode;
  }
}

// `infracat tokens list | head -1`: the reader went away. That ends the command
// quietly, as it does for any Unix filter, instead of an EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

// `serve` keeps the process alive through its listening socket; others exit here.
main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`infracat: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
