// `infracat backup FILE`: a consistent copy of a live SQLite database, taken while the
// server keeps serving and writing (a `cp` of the database file misses what still sits in
// its -wal file). PostgreSQL is backed up with its own tools; the store says so.
import { NotSupportedError } from '../storage/types.js';
import { UsageError, type Command } from './command.js';
import { parseFlags } from './options.js';
import { withStore } from './store.js';

export const backupCommand: Command = {
  name: 'backup',
  summary: 'write a consistent copy of the live SQLite database to a new file',
  help: `Usage: infracat backup FILE [options]

Copies the configured SQLite database to FILE with SQLite's online backup API: one
consistent state, including writes still in the -wal file, while servers keep running
and writing. FILE must not exist yet; the copy is checked (integrity_check), written
with mode 0600 and synced before it appears under its name.

Restore: stop every infracat process using the database, replace the database file
with the backup, delete the old database's -wal and -shm files, start again.

PostgreSQL: use pg_dump / pg_restore (see docs/operations.md, "Backups").

Options:
  --database-url URL    DATABASE_URL
  -h, --help            show this help
`,
  async run(args) {
    const { values, positionals } = parseFlags(args, { 'database-url': { type: 'string' } }, true);
    if (positionals.length !== 1) throw new UsageError('backup needs exactly one FILE');
    const file = positionals[0]!;
    return withStore(values['database-url'], async (store) => {
      try {
        const report = await store.backup(file);
        process.stdout.write(
          `backed up ${store.description} to ${report.file} (${report.bytes} bytes, integrity ok)\n`,
        );
        return 0;
      } catch (err) {
        if (err instanceof NotSupportedError) {
          process.stderr.write(`infracat backup: ${err.message}\n`);
          return 69; // EX_UNAVAILABLE
        }
        process.stderr.write(`infracat backup: ${(err as Error).message}\n`);
        return 73; // EX_CANTCREAT
      }
    });
  },
};
