// The only reader of process.env. Every setting is declared once in SETTINGS (name,
// default, parser, one-line description); README's configuration table mirrors it and
// a test keeps the two in step. A bad value stops the start with one clear line.
import path from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export type DatabaseConfig =
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; url: string };

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly logLevel: LogLevel;
  readonly database: DatabaseConfig;
  readonly databasePoolMax: number;
  readonly databaseTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Parser<T> = (raw: string, name: string) => T;

interface Setting<K extends keyof Config> {
  env: string;
  key: K;
  /** '' means unset. */
  default: string;
  description: string;
  parse: Parser<Config[K]>;
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function integer(min: number, max: number): Parser<number> {
  return (raw, name) => {
    if (!/^\d+$/.test(raw.trim())) throw bad(name, raw, `expected an integer from ${min} to ${max}`);
    const n = Number(raw.trim());
    if (n < min || n > max) throw bad(name, raw, `expected an integer from ${min} to ${max}`);
    return n;
  };
}

function bad(name: string, raw: string, expected: string): ConfigError {
  const shown = raw.length > 60 ? `${raw.slice(0, 57)}...` : raw;
  return new ConfigError(`invalid ${name} ${JSON.stringify(shown)}: ${expected}`);
}

export const DEFAULT_SQLITE_PATH = './data/infracat.sqlite';

export function parseDatabaseUrl(raw: string, name = 'DATABASE_URL'): DatabaseConfig {
  const value = raw.trim();
  if (value === '') return { kind: 'sqlite', path: path.resolve(DEFAULT_SQLITE_PATH) };
  if (value.startsWith('sqlite:')) {
    // sqlite:PATH, also tolerating sqlite://PATH for people used to URL forms.
    const file = value.slice('sqlite:'.length).replace(/^\/\/(?=\/|\.)/, '');
    if (file === '' || file === '//') throw bad(name, raw, 'sqlite: needs a file path, e.g. sqlite:./data/infracat.sqlite');
    if (file === ':memory:') throw bad(name, raw, 'an in-memory database would lose every write; give a file path');
    return { kind: 'sqlite', path: path.resolve(file) };
  }
  if (value.startsWith('postgres://') || value.startsWith('postgresql://')) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw bad(name, redactUrl(raw), 'not a valid postgres:// URL');
    }
    if (url.hostname === '' && !url.searchParams.has('host')) throw bad(name, redactUrl(raw), 'the postgres URL has no host');
    return { kind: 'postgres', url: value };
  }
  throw bad(name, redactUrl(raw), 'expected unset, sqlite:PATH, postgres://... or postgresql://...');
}

/** A database URL fit for logs and messages: the password is replaced. */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return raw.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
  }
}

export function describeDatabase(db: DatabaseConfig): string {
  return db.kind === 'sqlite' ? `sqlite:${db.path}` : redactUrl(db.url);
}

// Declared in README order. `flag` is the matching `infracat serve` option.
export const SETTINGS = [
  {
    env: 'PORT', key: 'port', default: '8080', description: 'TCP port to listen on (0 picks a free one).',
    parse: integer(0, 65535),
  },
  {
    env: 'HOST', key: 'host', default: '127.0.0.1',
    description: 'Address to bind. Loopback by default; use 0.0.0.0 (or ::) in a container or behind a load balancer.',
    parse: (raw, name) => {
      const v = raw.trim();
      if (v === '' || /\s/.test(v)) throw bad(name, raw, 'expected a host name or IP address');
      return v;
    },
  },
  {
    env: 'LOG_LEVEL', key: 'logLevel', default: 'info', description: `Log level: ${LOG_LEVELS.join(', ')}.`,
    parse: (raw, name) => {
      const v = raw.trim().toLowerCase();
      if (!(LOG_LEVELS as readonly string[]).includes(v)) throw bad(name, raw, `expected one of ${LOG_LEVELS.join(', ')}`);
      return v;
    },
  },
  {
    env: 'DATABASE_URL', key: 'database', default: '',
    description: `Storage. Unset: SQLite file ${DEFAULT_SQLITE_PATH} (directory created on first start); sqlite:PATH: that SQLite file; postgres://... or postgresql://...: PostgreSQL.`,
    parse: parseDatabaseUrl,
  },
  {
    env: 'DATABASE_POOL_MAX', key: 'databasePoolMax', default: '10', description: 'PostgreSQL: most connections in the pool of each instance.',
    parse: integer(1, 1000),
  },
  {
    env: 'DATABASE_TIMEOUT_MS', key: 'databaseTimeoutMs', default: '5000',
    description: 'PostgreSQL: connect and statement timeout; SQLite: busy timeout. Past it a request fails with 503 instead of hanging.',
    parse: integer(100, 600000),
  },
  {
    env: 'SHUTDOWN_TIMEOUT_MS', key: 'shutdownTimeoutMs', default: '10000',
    description: 'On SIGTERM/SIGINT: how long in-flight requests may take to finish before the process exits anyway.',
    parse: integer(0, 600000),
  },
] as const satisfies readonly Setting<keyof Config>[];

export type SettingName = (typeof SETTINGS)[number]['env'];

/**
 * Builds the validated, frozen config. `overrides` (from `serve` flags) win over `env`.
 * Empty environment values count as unset.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Record<SettingName, string>> = {},
): Config {
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS as readonly Setting<keyof Config>[]) {
    const fromFlag = overrides[s.env as SettingName];
    const fromEnv = env[s.env];
    const raw = fromFlag ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : s.default);
    out[s.key] = s.parse(raw, s.env);
  }
  return Object.freeze(out as unknown as Config);
}
