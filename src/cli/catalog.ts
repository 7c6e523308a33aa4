// `infracat catalog validate|apply|export`: the operator's tools for the catalog file
// kept in version control. apply validates first, prints the diff, and changes
// everything or nothing (one optimistic insert of the new revision).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Readline from 'node:readline/promises';
import { AppError, MAX_FIELD_ERRORS } from '../errors.js';
import { cliAuditContext } from '../audit/context.js';
import { formatDiff, isEmptyDiff, removedCount, type CatalogDiff } from '../catalog/diff.js';
import {
  formatCatalog,
  parseCatalogText,
  validateCatalog,
  type CatalogProblem,
  type ParseResult,
} from '../catalog/file.js';
import type { Catalog } from '../catalog/model.js';
import { OPERATOR_ACCOUNT_ID } from '../accounts/ids.js';
import { revisionView } from '../catalog/revision-view.js';
import { CatalogService } from '../catalog/service.js';
import { UsageError, type Command } from './command.js';
import { parseFlags } from './options.js';
import { withStore } from './store.js';

const help = `Usage: infracat catalog <validate|apply|export|history|rollback> [options]

The catalog (images, plans, regions) lives in the database; operators keep it as a YAML
or JSON file in version control (see catalog/default.yaml for the format).

  infracat catalog validate FILE
      Checks FILE and lists every problem with its entry and field. Exit 1 if any.
  infracat catalog apply FILE [--dry-run] [--allow-removals]
      Validates FILE, prints what changes (+ added, - removed, ~ changed), and applies
      it in one step: a file with any problem changes nothing. Running instances serve
      the new catalog within about a second. --dry-run stops after the diff.
      An apply that removes entries (an empty or truncated file removes everything)
      needs --allow-removals, or a "yes" typed at the prompt on a terminal.
  infracat catalog export [--format yaml|json]
      Writes the live catalog to stdout in the file format (export then apply is a no-op).
  infracat catalog history [--json]
      Lists the applied revisions, newest first: version, when, by whom, what changed.
  infracat catalog rollback --to N [--dry-run] [--allow-removals]
      Applies revision N's document again, as a new revision (history is never
      rewritten): prints the diff against the live catalog; the same --dry-run and
      removal guard as apply. Audited as catalog.applied with rollback_of N.

Options:
  --database-url URL    DATABASE_URL (apply, export, history, rollback)
  -h, --help            show this help
`;

export function formatProblem(p: CatalogProblem): string {
  return `${p.entry}${p.field !== undefined ? `.${p.field}` : ''}: ${p.message}`;
}

async function readCatalogFile(file: string): Promise<ParseResult> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return {
      ok: false,
      problems: [
        {
          entry: 'file',
          pointer: '',
          message: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        },
      ],
    };
  }
  return parseCatalogText(text);
}

function reportProblems(file: string, { problems, more }: { problems: CatalogProblem[]; more?: boolean }): number {
  process.stderr.write(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n`);
  // Multi-line problems (a YAML syntax error quotes the line, with a caret) stay indented.
  for (const p of problems) process.stderr.write(`  ${formatProblem(p).replaceAll('\n', '\n    ')}\n`);
  if (more === true)
    process.stderr.write(
      `  ... more problems were cut (validation stops after ${MAX_FIELD_ERRORS}); fix these and run it again\n`,
    );
  return 1;
}

function withCatalog<T>(url: string | undefined, body: (svc: CatalogService) => Promise<T>): Promise<T> {
  return withStore(url, (store, config) =>
    body(new CatalogService(store.catalog, { refreshMs: config.catalogRefreshMs })),
  );
}

// Node's readline, loaded only when a question is asked: every command is part of every
// start of the server (one bundle), and readline was 0.5 MB of each.
const require = createRequire(import.meta.url);

/** On a terminal, asks before removing entries; anywhere else (CI, pipes) the answer is no. */
async function confirmRemovals(count: number): Promise<boolean> {
  if (process.stdin.isTTY !== true || process.stdout.isTTY !== true) return false;
  const { createInterface } = require('node:readline/promises') as typeof Readline;
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answer = await rl.question(
      `Remove ${count} entr${count === 1 ? 'y' : 'ies'} from the live catalog? Type "yes" to apply: `,
    );
    return answer.trim().toLowerCase() === 'yes';
  } finally {
    rl.close();
  }
}

interface ApplyFlags {
  'dry-run'?: boolean | undefined;
  'allow-removals'?: boolean | undefined;
}

/**
 * Prints the diff, then (unless a dry run or nothing changes) applies `next` on top of
 * `baseVersion`: an apply that removes entries needs --allow-removals or a "yes" typed on
 * a terminal. `rollbackOf`: the revision whose document `next` is.
 */
async function applyPlan(
  svc: CatalogService,
  next: Catalog,
  { diff, baseVersion }: { diff: CatalogDiff; baseVersion: number },
  flags: ApplyFlags,
  rollbackOf?: number,
): Promise<number> {
  process.stdout.write(formatDiff(diff));
  if (flags['dry-run'] === true) {
    process.stdout.write('dry run: nothing applied\n');
    return 0;
  }
  if (isEmptyDiff(diff)) {
    process.stdout.write(`catalog unchanged (version ${baseVersion})\n`);
    return 0;
  }
  const removals = removedCount(diff);
  if (removals > 0 && flags['allow-removals'] !== true && !(await confirmRemovals(removals))) {
    process.stderr.write(
      `infracat catalog: refused: this ${rollbackOf === undefined ? 'apply' : 'rollback'} would remove ` +
        `${removals} entr${removals === 1 ? 'y' : 'ies'} (lines starting with -); ` +
        'nothing applied. Re-run with --allow-removals if that is intended.\n',
    );
    return 1;
  }
  try {
    const version = await svc.apply(next, baseVersion, cliAuditContext(), rollbackOf);
    process.stdout.write(
      rollbackOf === undefined
        ? `applied as catalog version ${version}\n`
        : `rolled back to the document of version ${rollbackOf}, applied as catalog version ${version}\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof AppError) {
      process.stderr.write(`infracat catalog: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

/** Who applied a revision, in a word or three: `api_token deploy-bot (tok_...)`, `cli alice`, `-` if unrecorded. */
function appliedByText(by: { type: string; id: string | null; name: string | null } | null): string {
  if (by === null) return '-';
  return [by.type, by.name, by.id === null ? null : `(${by.id})`].filter((p) => p !== null).join(' ');
}

/** Every revision, newest first (the store pages them). */
async function allRevisions(svc: CatalogService): Promise<ReturnType<typeof revisionView>[]> {
  const out: ReturnType<typeof revisionView>[] = [];
  for (;;) {
    const page = await svc.revisions(100, out.at(-1)?.version);
    out.push(...page.map((r) => revisionView(r, OPERATOR_ACCOUNT_ID)));
    if (page.length < 100) return out;
  }
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

export const catalogCommand: Command = {
  name: 'catalog',
  summary: 'validate, apply and export the catalog file; its history and rollback',
  help,
  async run(args) {
    const [sub, ...rest] = args;
    if (sub === 'validate') {
      const { positionals } = parseFlags(rest, {}, true);
      if (positionals.length !== 1) throw new UsageError('validate needs exactly one FILE');
      const file = positionals[0]!;
      const result = await readCatalogFile(file);
      if (!result.ok) return reportProblems(file, result);
      const c = result.catalog;
      process.stdout.write(
        `${file}: ok (${c.images.length} images, ${c.plans.length} plans, ` +
          `${c.regions.length} regions, ${c.currency})\n`,
      );
      return 0;
    }
    if (sub === 'apply') {
      const { values, positionals } = parseFlags(
        rest,
        { 'dry-run': { type: 'boolean' }, 'allow-removals': { type: 'boolean' }, 'database-url': { type: 'string' } },
        true,
      );
      if (positionals.length !== 1) throw new UsageError('apply needs exactly one FILE');
      const file = positionals[0]!;
      const result = await readCatalogFile(file);
      if (!result.ok) return reportProblems(file, result);
      return withCatalog(values['database-url'], async (svc) => {
        const plan = await svc.plan(result.catalog);
        return applyPlan(svc, result.catalog, plan, values);
      });
    }
    if (sub === 'export') {
      const { values, positionals } = parseFlags(
        rest,
        { format: { type: 'string' }, 'database-url': { type: 'string' } },
        true,
      );
      if (positionals.length > 0) throw new UsageError('export takes no FILE; redirect stdout');
      const format = values.format ?? 'yaml';
      if (format !== 'yaml' && format !== 'json') throw new UsageError('--format must be yaml or json');
      return withCatalog(values['database-url'], async (svc) => {
        await svc.load();
        process.stdout.write(formatCatalog(svc.snapshot.catalog, format));
        return 0;
      });
    }
    if (sub === 'history') {
      const { values, positionals } = parseFlags(
        rest,
        { json: { type: 'boolean' }, 'database-url': { type: 'string' } },
        true,
      );
      if (positionals.length > 0) throw new UsageError('history takes no arguments');
      return withCatalog(values['database-url'], async (svc) => {
        const revisions = await allRevisions(svc);
        if (values.json === true) {
          process.stdout.write(`${JSON.stringify(revisions, null, 2)}\n`);
          return 0;
        }
        if (revisions.length === 0) {
          process.stdout.write('no catalog applied yet\n');
          return 0;
        }
        const rows = revisions.map((r) => [
          String(r.version),
          r.applied_at,
          appliedByText(r.applied_by),
          r.summary ?? '-',
        ]);
        process.stdout.write(table([['VERSION', 'APPLIED_AT', 'APPLIED_BY', 'SUMMARY'], ...rows]));
        return 0;
      });
    }
    if (sub === 'rollback') {
      const { values, positionals } = parseFlags(
        rest,
        {
          to: { type: 'string' },
          'dry-run': { type: 'boolean' },
          'allow-removals': { type: 'boolean' },
          'database-url': { type: 'string' },
        },
        true,
      );
      if (positionals.length > 0) throw new UsageError('rollback takes no FILE; name the revision with --to N');
      const to = values.to;
      if (to === undefined || !/^[1-9][0-9]{0,8}$/.test(to))
        throw new UsageError('rollback needs --to N, the version to roll back to (a whole number from 1)');
      return withCatalog(values['database-url'], async (svc) => {
        let plan;
        try {
          plan = await svc.planRollback(Number(to));
        } catch (err) {
          if (err instanceof AppError) {
            process.stderr.write(`infracat catalog: ${err.message}\n`);
            return 1;
          }
          throw err;
        }
        // Today's rules hold for an old document too (e.g. a successor sunset since).
        const checked = validateCatalog(JSON.parse(formatCatalog(plan.catalog, 'json')) as unknown);
        if (!checked.ok) return reportProblems(`catalog version ${to}`, checked);
        return applyPlan(svc, plan.catalog, plan, values, Number(to));
      });
    }
    throw new UsageError(
      sub === undefined
        ? 'missing sub-command: validate, apply, export, history or rollback'
        : `unknown sub-command '${sub}'`,
    );
  },
};
