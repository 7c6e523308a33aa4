// The only reader of process.env. Every setting is declared once in SETTINGS (name,
// default, parser, one-line description); README's configuration table mirrors it and
// a test keeps the two in step. A bad value stops the start with one clear line.
import { GATEWAYS, type Gateway } from './gateway/forwarded.js';
import { compileRules, DEFAULT_RULES_JSON, type Rule } from './gateway/rules.js';
import { parseTrustProxy, type TrustProxy } from './http/trust-proxy.js';
import { DEFAULT_SQLITE_PATH, parseDatabaseUrl, shownDatabaseUrl, type DatabaseConfig } from './storage/database-url.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly logLevel: LogLevel;
  readonly accessLog: 'all' | 'errors';
  readonly database: DatabaseConfig;
  readonly databasePoolMax: number;
  readonly databaseTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  readonly trustProxy: TrustProxy;
  readonly tokenPrefix: string;
  readonly tokenMaxLive: number;
  readonly tokenMaxLifetimeDays: number;
  readonly tokenExpiredRetentionDays: number;
  readonly tokenCacheTtlMs: number;
  readonly tokenCacheMax: number;
  readonly lastUsedFlushMs: number;
  readonly authFailureLimit: number;
  readonly authFailureWindowS: number;
  readonly scopeResources: readonly string[];
  readonly bootstrapAdminToken: boolean;
  readonly catalogAccess: 'public' | 'token';
  readonly catalogRefreshMs: number;
  /** '' = chosen by access mode. */
  readonly catalogCacheControl: string;
  readonly authCheckRules: readonly Rule[];
  readonly authCheckGateway: Gateway;
  readonly rateLimit: number;
  readonly rateLimitAnonymous: number;
  readonly rateLimitWindowS: number;
  readonly metricsAccess: 'public' | 'loopback' | 'off';
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly corsOrigins: readonly string[];
  readonly console: boolean;
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

/** One of a fixed set of words (trimmed; LOG_LEVEL-style settings also lowercased). */
function oneOf<T extends string>(values: readonly T[], lower = false): Parser<T> {
  return (raw, name) => {
    const v = lower ? raw.trim().toLowerCase() : raw.trim();
    if (!(values as readonly string[]).includes(v)) throw bad(name, raw, `expected one of ${values.join(', ')}`);
    return v as T;
  };
}

function boolean(raw: string, name: string): boolean {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw bad(name, raw, 'expected true or false');
}

function bad(name: string, raw: string, expected: string): ConfigError {
  const shown = raw.length > 60 ? `${raw.slice(0, 57)}...` : raw;
  return new ConfigError(`invalid ${name} ${JSON.stringify(shown)}: ${expected}`);
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
    parse: oneOf(LOG_LEVELS, true),
  },
  {
    env: 'ACCESS_LOG', key: 'accessLog', default: 'all',
    description: 'Access-log lines at info: `all` (one line per request) or `errors` (only answers of 400 and above; a line costs about a third of a catalog read\'s throughput, see BENCHMARKS.md).',
    parse: oneOf(['all', 'errors'] as const),
  },
  {
    env: 'DATABASE_URL', key: 'database', default: '',
    description: `Storage. Unset: SQLite file ${DEFAULT_SQLITE_PATH} (created on first start, readable by the service user only); sqlite:PATH: that SQLite file; postgres://... or postgresql://...: PostgreSQL.`,
    parse: (raw, name) => {
      try {
        return parseDatabaseUrl(raw);
      } catch (err) {
        throw bad(name, shownDatabaseUrl(raw), (err as Error).message);
      }
    },
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
  {
    env: 'TRUST_PROXY', key: 'trustProxy', default: 'false',
    description: 'Whether to take the client address from X-Forwarded-For: false; a comma-separated list of your proxies\' addresses/CIDRs (recommended); or true (any peer: then any client can choose its address, and a warning is logged at start).',
    parse: (raw, name) => {
      try {
        return parseTrustProxy(raw);
      } catch (err) {
        throw bad(name, raw, (err as Error).message);
      }
    },
  },
  {
    env: 'TOKEN_PREFIX', key: 'tokenPrefix', default: 'icat',
    description: 'Prefix of token secrets (`icat_...`), so secret scanners can recognise them. 2-16 lowercase letters/digits.',
    parse: (raw, name) => {
      const v = raw.trim();
      if (!/^[a-z][a-z0-9]{1,15}$/.test(v)) throw bad(name, raw, 'expected 2-16 lowercase letters or digits, starting with a letter');
      return v;
    },
  },
  {
    env: 'TOKEN_MAX_LIVE', key: 'tokenMaxLive', default: '1000', description: 'Most live (unexpired) tokens; creating one more answers 409.',
    parse: integer(1, 1_000_000),
  },
  {
    env: 'TOKEN_MAX_LIFETIME_DAYS', key: 'tokenMaxLifetimeDays', default: '366', description: 'Furthest `expires_at` a new token may have, in days from now.',
    parse: integer(1, 36_500),
  },
  {
    env: 'TOKEN_EXPIRED_RETENTION_DAYS', key: 'tokenExpiredRetentionDays', default: '30',
    description: 'How long an expired token stays listed (so its owner can see that it expired) before it is purged, in days; 0 purges at expiry. Purged in the background, hourly.',
    parse: integer(0, 3650),
  },
  {
    env: 'TOKEN_CACHE_TTL_MS', key: 'tokenCacheTtlMs', default: '5000',
    description: 'How long a verified token is trusted from memory before storage is asked again: the bound within which a delete on another instance takes effect. 0 disables the cache.',
    parse: integer(0, 600_000),
  },
  {
    env: 'TOKEN_CACHE_MAX', key: 'tokenCacheMax', default: '10000', description: 'Most tokens held in the verification cache (least recently used go first).',
    parse: integer(1, 10_000_000),
  },
  {
    env: 'LAST_USED_FLUSH_MS', key: 'lastUsedFlushMs', default: '1000', description: 'Interval of the batched `last_used_at` writes (at most one write per token per interval).',
    parse: integer(10, 600_000),
  },
  {
    env: 'AUTH_FAILURE_LIMIT', key: 'authFailureLimit', default: '20', description: 'Failed authentications allowed per client address (IPv6: per /64) per window; past it, failures answer 429 and the address\'s token lookups run one at a time (valid tokens are still accepted).',
    parse: integer(1, 1_000_000),
  },
  {
    env: 'AUTH_FAILURE_WINDOW_S', key: 'authFailureWindowS', default: '60', description: 'Length of the failed-authentication window, in seconds.',
    parse: integer(1, 86_400),
  },
  {
    env: 'SCOPE_RESOURCES', key: 'scopeResources', default: 'api-tokens,apps,images,plans,regions',
    description: 'Comma-separated resources of the scope registry; each gets `:read` and `:write`.',
    parse: (raw, name) => {
      const list = raw.split(',').map((x) => x.trim()).filter((x) => x !== '');
      if (list.length === 0 || list.some((x) => !/^[a-z][a-z0-9-]{0,39}$/.test(x))) throw bad(name, raw, 'expected a comma-separated list of lowercase resource names');
      return [...new Set(list)];
    },
  },
  {
    env: 'BOOTSTRAP_ADMIN_TOKEN', key: 'bootstrapAdminToken', default: 'true',
    description: 'On the first start of a database holding no tokens, mint one admin token (every scope) and print it once to stderr. Decided once per database: later starts never mint one.',
    parse: boolean,
  },
  {
    env: 'CATALOG_ACCESS', key: 'catalogAccess', default: 'public',
    description: '`public`: catalogs are readable without a token; `token`: they need `images:read` / `plans:read` / `regions:read`. A bad token is refused either way.',
    parse: oneOf(['public', 'token'] as const),
  },
  {
    env: 'CATALOG_REFRESH_MS', key: 'catalogRefreshMs', default: '5000',
    description: 'How often each instance checks storage for a newly applied catalog: the bound on how stale a catalog read can be.',
    parse: integer(50, 3_600_000),
  },
  {
    env: 'CATALOG_CACHE_CONTROL', key: 'catalogCacheControl', default: '',
    description: 'Cache-Control of catalog responses. Unset: `public, max-age=60` when CATALOG_ACCESS=public, `private, max-age=60` when token.',
    parse: (raw, name) => {
      const v = raw.trim();
      if (/[\r\n]/.test(v) || v.length > 200) throw bad(name, raw, 'expected a Cache-Control header value');
      return v;
    },
  },
  {
    env: 'AUTH_CHECK_RULES', key: 'authCheckRules', default: DEFAULT_RULES_JSON,
    description: 'Forward-auth rule table (JSON): which scopes a forwarded method and path need, first match wins, no match is denied. See docs/forward-auth.md.',
    parse: (raw, name) => {
      try {
        return compileRules(raw);
      } catch (err) {
        throw bad(name, raw, (err as Error).message);
      }
    },
  },
  {
    env: 'AUTH_CHECK_GATEWAY', key: 'authCheckGateway', default: 'auto',
    description: 'Whose forwarded request `/api/v1/auth/check` reads: `nginx` (X-Original-Method/-URI), `traefik` (X-Forwarded-Method/-Uri), `envoy` (the `/api/v1/auth/check/<path>` form) or `auto` (any one of them). Set it to your gateway so only its headers count. See docs/forward-auth.md.',
    parse: oneOf(GATEWAYS),
  },
  {
    env: 'RATE_LIMIT', key: 'rateLimit', default: '600',
    description: 'Requests per window per token (per instance); 0 turns rate limiting off. Answers carry RateLimit / RateLimit-Policy headers; over it, 429.',
    parse: integer(0, 10_000_000),
  },
  {
    env: 'RATE_LIMIT_ANONYMOUS', key: 'rateLimitAnonymous', default: '300',
    description: 'Requests per window per client address for requests without a token (per instance); 0: no limit for them.',
    parse: integer(0, 10_000_000),
  },
  {
    env: 'RATE_LIMIT_WINDOW_S', key: 'rateLimitWindowS', default: '60', description: 'Length of the rate-limit window, in seconds.',
    parse: integer(1, 86_400),
  },
  {
    env: 'METRICS_ACCESS', key: 'metricsAccess', default: 'loopback',
    description: 'Who may read Prometheus metrics at /metrics: `loopback` (connections from this machine: 127.0.0.0/8 or ::1), `public`, or `off` (404).',
    parse: oneOf(['public', 'loopback', 'off'] as const),
  },
  {
    env: 'CONSOLE', key: 'console', default: 'true',
    description: 'Serve the web console at `/` (token management and catalog browsing in a browser, using only the public API). `false`: `/` answers 404.',
    parse: boolean,
  },
  {
    env: 'REQUEST_TIMEOUT_MS', key: 'requestTimeoutMs', default: '30000', description: 'Longest time to receive a whole request; past it the connection is closed (408).',
    parse: integer(1000, 600_000),
  },
  {
    env: 'HEADERS_TIMEOUT_MS', key: 'headersTimeoutMs', default: '10000', description: 'Longest time to receive the request headers (slow-loris guard).',
    parse: integer(1000, 600_000),
  },
  {
    env: 'KEEP_ALIVE_TIMEOUT_MS', key: 'keepAliveTimeoutMs', default: '65000', description: 'How long an idle keep-alive connection stays open (longer than a typical load balancer\'s 60 s).',
    parse: integer(1000, 600_000),
  },
  {
    env: 'CORS_ORIGINS', key: 'corsOrigins', default: '',
    description: 'Comma-separated origins allowed to call the API from a browser (e.g. `https://console.example.com`), or `*`. Unset: CORS off.',
    parse: (raw, name) => {
      const list = raw.split(',').map((x) => x.trim()).filter((x) => x !== '');
      for (const o of list) {
        if (o !== '*' && !/^https?:\/\/[a-z0-9.-]+(:\d+)?$/i.test(o)) throw bad(name, raw, `"${o}" is not an origin like https://console.example.com`);
      }
      return list;
    },
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
  const config = out as unknown as Config;
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError('invalid HEADERS_TIMEOUT_MS: must not exceed REQUEST_TIMEOUT_MS');
  }
  // Cross-setting check: a rule can only ask for scopes some token could hold.
  for (const [i, rule] of config.authCheckRules.entries()) {
    const unknown = rule.scopes.find((sc) => !config.scopeResources.includes(sc.split(':')[0]!));
    if (unknown !== undefined) {
      throw new ConfigError(`invalid AUTH_CHECK_RULES: rule ${i} needs ${unknown}, whose resource is not in SCOPE_RESOURCES`);
    }
  }
  return Object.freeze(config);
}
