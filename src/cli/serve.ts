import { loadConfig, SETTINGS } from '../config.js';
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

// Every setting with its default and what it means (the same text as README's table).
const settingsHelp = SETTINGS.map((s) => {
  const shown = s.default === '' ? '(unset)' : s.default;
  return `  ${s.env}=${shown}\n${wrap(s.description, '      ')}`;
}).join('\n');

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the HTTP server (migrates the schema first)',
  help: `Usage: infracat serve [options]

Runs the HTTP API. Applies pending schema migrations first. Stops gracefully on
SIGTERM/SIGINT. Flags override the matching environment variables.

Options:
  --port N              PORT
  --host ADDR           HOST
  --log-level LEVEL     LOG_LEVEL
  --database-url URL    DATABASE_URL (sqlite:PATH, postgres://...)
  -h, --help            show this help

Environment (NAME=default):
${settingsHelp}
`,
  async run(args) {
    const { values } = parseFlags(args, {
      port: { type: 'string' },
      host: { type: 'string' },
      'log-level': { type: 'string' },
      'database-url': { type: 'string' },
    });
    const config = loadConfig(process.env, {
      ...(values.port !== undefined ? { PORT: values.port } : {}),
      ...(values.host !== undefined ? { HOST: values.host } : {}),
      ...(values['log-level'] !== undefined ? { LOG_LEVEL: values['log-level'] } : {}),
      ...(values['database-url'] !== undefined ? { DATABASE_URL: values['database-url'] } : {}),
    });
    await serve(config);
    return 0;
  },
};
