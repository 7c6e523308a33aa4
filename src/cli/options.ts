// Flag parsing shared by the commands, on node:util's parseArgs (no dependency).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './command.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export function parseFlags<O extends Options>(args: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({
      args,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals,
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * The value a pair of opposite boolean flags gives (`--enable`/`--disable`): true, false,
 * or undefined when neither is given. Both at once is a usage error.
 */
export function eitherFlag(values: Record<string, unknown>, yes: string, no: string): boolean | undefined {
  if (values[yes] === true && values[no] === true) throw new UsageError(`give --${yes} or --${no}, not both`);
  return values[yes] === true ? true : values[no] === true ? false : undefined;
}
