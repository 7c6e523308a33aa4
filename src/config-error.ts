// A setting that cannot be used: its value is invalid (src/config.ts), or a file it names
// is not what it should hold (src/secret-scanning/keys.ts). Either stops the start with
// one line naming the setting; the CLI exits with EX_CONFIG (src/cli/failure.ts).
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
