// Flag parsing shared by the commands, on node:util's parseArgs (no dependency).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './command.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export function parseFlags<O extends Options>(args: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** `--database-url` etc. as config overrides; only the flags actually given. */
export function defined<T extends Record<string, string | boolean | undefined>>(values: T): Partial<Record<keyof T, string>> {
  const out: Partial<Record<keyof T, string>> = {};
  for (const [k, v] of Object.entries(values)) if (typeof v === 'string') out[k as keyof T] = v;
  return out;
}
