import { loadConfig, SETTINGS } from '../config.js';
import { serve } from '../server.js';
import type { Command } from './command.js';
import { parseFlags } from './options.js';

const settingsHelp = SETTINGS.map((s) => `  ${s.env.padEnd(22)} ${s.default === '' ? '(unset)' : s.default}`).join('\n');

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

Environment (default):
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
