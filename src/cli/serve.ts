import { loadConfig, SETTINGS, type SettingName } from '../config.js';
import { serve } from '../server.js';
import type { Command } from './command.js';
import { parseFlags } from './options.js';

/** Words of `text` in lines of at most `width` characters, each starting with `indent`. */
function wrap(text: string, indent: string, width = 80): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(indent + line);
  return lines.join('\n');
}

// Every setting with its default and what it means (the same text as the table of docs/settings.md).
const settingsHelp = SETTINGS.map((s) => {
  const shown = s.default === '' ? '(unset)' : s.default;
  return `  ${s.env}=${shown}\n${wrap(s.description, '      ')}`;
}).join('\n');

// The settings `serve` also takes as flags: PORT is --port, LOG_LEVEL --log-level.
export const FLAGS = [
  { env: 'PORT', arg: 'N', note: '' },
  { env: 'HOST', arg: 'ADDR', note: '' },
  { env: 'LOG_LEVEL', arg: 'LEVEL', note: '' },
  { env: 'DATABASE_URL', arg: 'URL', note: ' (sqlite:PATH, postgres://...)' },
] as const satisfies readonly { env: SettingName; arg: string; note: string }[];

export const flagName = (env: SettingName): string => env.toLowerCase().replaceAll('_', '-');

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the HTTP server (migrates the schema first)',
  help: `Usage: infracat serve [options]

Runs the HTTP API. Applies pending schema migrations first. Stops gracefully on
SIGTERM/SIGINT. Flags override the matching environment variables.

Options:
${FLAGS.map((f) => `  ${`--${flagName(f.env)} ${f.arg}`.padEnd(22)}${f.env}${f.note}`).join('\n')}
  -h, --help            show this help

Environment (NAME=default):
${settingsHelp}
`,
  async run(args) {
    const options = Object.fromEntries(FLAGS.map((f) => [flagName(f.env), { type: 'string' as const }]));
    const { values } = parseFlags(args, options);
    const overrides: Partial<Record<SettingName, string>> = {};
    for (const { env } of FLAGS) {
      const value = values[flagName(env)];
      if (typeof value === 'string') overrides[env] = value;
    }
    const config = loadConfig(process.env, overrides);
    await serve(config);
    return 0;
  },
};
