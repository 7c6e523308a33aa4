import { describeDatabase } from '../storage/database-url.js';
import type { Command } from './command.js';
import { parseFlags } from './options.js';
import { withStore } from './store.js';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply pending schema migrations and exit',
  help: `Usage: infracat migrate [options]

Applies pending schema migrations to the configured database and exits. Safe to run
while other instances start or run: on PostgreSQL a row lock serialises migrators.
\`serve\` does the same at start, so this is for deploy pipelines that migrate first.

Options:
  --database-url URL    DATABASE_URL (default: the SQLite file ./data/infracat.sqlite)
  -h, --help            show this help
`,
  async run(args) {
    const { values } = parseFlags(args, { 'database-url': { type: 'string' } });
    return withStore(
      values['database-url'],
      async (_store, config, report) => {
        const what = report.applied.length === 0 ? 'already current' : `applied ${report.applied.join(', ')}`;
        process.stdout.write(`${describeDatabase(config.database)}: schema at version ${report.version} (${what})\n`);
        return 0;
      },
      { create: true },
    );
  },
};
