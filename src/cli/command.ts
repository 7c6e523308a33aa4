// What every `infracat` sub-command provides. main.ts dispatches; one file per command.
export interface Command {
  name: string;
  summary: string;
  /** Full --help text. */
  help: string;
  /** Resolves to the process exit code (long-running commands resolve when started). */
  run(args: string[]): Promise<number>;
}

/** A wrong invocation: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
