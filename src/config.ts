// The only reader of process.env. Every setting is declared once, in SettingsSchema: its
// variable, default, description and constraints as JSON Schema (TypeBox), and, where
// reading it takes more than JSON Schema can say (a database URL, a list of CIDRs, the
// rule table), the transform beside it. `Config` is the schema's decoded type; the values
// are checked and the defaults filled from the same schema; docs/settings.md's table and
// `serve --help` are checked against it. A bad value stops the start with one clear line.
//
// TypeBox's own checker reads the schema directly: Ajv would first generate code for it,
// 70-110 ms of every start (measured on a busy 2-core machine), against 3-5 ms here.
import { Type, type StaticDecode, type TSchema } from 'typebox';
import { Check, Default, Errors } from 'typebox/value';
import { ConfigError } from './config-error.js';
import { GATEWAYS } from './gateway/forwarded.js';
import { compileRules, DEFAULT_RULES_JSON } from './gateway/rules.js';
import { parseTrustProxy } from './http/trust-proxy.js';
import { DEFAULT_SQLITE_PATH, parseDatabaseUrl, shownDatabaseUrl } from './storage/database-url.js';
import { PREFIX_PATTERN } from './tokens/format.js';
import { ACCOUNT_RATE_LIMIT_MAX } from './accounts/schemas.js';
import { STORED_PER_LIVE } from './tokens/limits.js';
import { DEFAULT_RESOURCES, READ_ONLY_RESOURCES, RESOURCE_PATTERN, ScopeRegistry } from './tokens/scopes.js';
import { parseEncryptionKey } from './webhooks/secrets.js';

/**
 * What a setting adds to its JSON Schema. The variable's text is read by the schema's type:
 * `integer` digits, `boolean` a yes/no word, `array` a comma-separated list, else trimmed text.
 */
interface Annotations {
  /** The environment variable (and, lowercased with dashes, the `serve` flag if it has one). */
  env: string;
  /** What a refusal says was expected; derived for integers, booleans and enums. */
  expected?: string;
  /** Read case-insensitively (the value is lowercased before it is checked). */
  lowercase?: true;
  /** How a message shows the value, for a setting that may hold a secret. */
  shown?: (raw: string) => string;
}

/** A setting: its variable, then its schema (default, description, constraints, transform). */
function setting<const Env extends string, T extends TSchema>(
  env: Env,
  schema: T,
  annotations: Omit<Annotations, 'env'> = {},
): T & { readonly env: Env } {
  return Object.assign(schema, { env, ...annotations });
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const MAX_STORED_MAX = 10_000_000;
/** RATE_LIMIT_ACCOUNT's default, in token limits: an account of one busy token is never held back by it. */
const ACCOUNT_PER_TOKEN = 10;

/** Most files of JWT_SIGNING_KEY_FILES: the signing key and the ones kept published during rotations. */
const MAX_SIGNING_KEYS = 10;

const CATALOG_BODY_LIMIT_MIN = 16 * 1024;
const CATALOG_BODY_LIMIT_MAX = 64 * 1024 * 1024;
const CATALOG_BODY_LIMIT_DEFAULT = 16 * 1024 * 1024;

/** Each origin `*` or http(s)://host[:port] in any case, which a JSON Schema pattern (no flags) cannot say. */
function checkOrigins(list: string[]): string[] {
  for (const o of list) {
    if (o !== '*' && !/^https?:\/\/[a-z0-9.-]+(:\d+)?$/i.test(o)) {
      throw new Error(`"${o}" is not an origin like https://console.example.com`);
    }
  }
  return list;
}

// In the order of docs/settings.md.
export const SettingsSchema = Type.Object({
  port: setting(
    'PORT',
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: 8080,
      description: 'TCP port to listen on (0 picks a free one).',
    }),
  ),
  host: setting(
    'HOST',
    Type.String({
      pattern: '^\\S+$',
      default: '127.0.0.1',
      description:
        'Address to bind. Loopback by default; use 0.0.0.0 (or ::) in a container or behind a load balancer.',
    }),
    { expected: 'expected a host name or IP address' },
  ),
  logLevel: setting(
    'LOG_LEVEL',
    Type.Enum(LOG_LEVELS, {
      default: 'info',
      description: `Log level: ${LOG_LEVELS.join(', ')}.`,
    }),
    { lowercase: true },
  ),
  accessLog: setting(
    'ACCESS_LOG',
    Type.Enum(['all', 'errors'], {
      default: 'all',
      description:
        'Access-log lines at info: `all` (one line per request) or `errors` (only answers of 400 and above; ' +
        "a line costs about a fifth of a catalog read's CPU, see BENCHMARKS.md).",
    }),
  ),
  database: setting(
    'DATABASE_URL',
    Type.Decode(
      Type.String({
        default: '',
        description:
          `Storage. Unset: SQLite file ${DEFAULT_SQLITE_PATH} (created on first start, readable by the ` +
          'service user only); sqlite:PATH: that SQLite file; postgres://... or postgresql://...: PostgreSQL.',
      }),
      parseDatabaseUrl,
    ),
    { shown: shownDatabaseUrl },
  ),
  databaseNotifyUrl: setting(
    'DATABASE_NOTIFY_URL',
    Type.Decode(
      Type.String({
        default: '',
        description:
          'PostgreSQL: where each instance LISTENs for the changes other instances announce (deleted, ' +
          'rotated or edited tokens, account status, catalog applies), on one connection of its own. ' +
          'Unset: DATABASE_URL. Set it to a direct or session-mode connection to the same database when ' +
          'DATABASE_URL goes through a pooler in transaction mode (PgBouncer), which drops LISTEN.',
      }),
      parseNotifyUrl,
    ),
    { shown: shownDatabaseUrl },
  ),
  databasePoolMax: setting(
    'DATABASE_POOL_MAX',
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 10,
      description: 'PostgreSQL: most connections in the pool of each instance.',
    }),
  ),
  databaseTimeoutMs: setting(
    'DATABASE_TIMEOUT_MS',
    Type.Integer({
      minimum: 100,
      maximum: 600_000,
      default: 5000,
      description:
        'PostgreSQL: connect and statement timeout; SQLite: busy timeout. ' +
        'Past it a request fails with 503 instead of hanging.',
    }),
  ),
  shutdownTimeoutMs: setting(
    'SHUTDOWN_TIMEOUT_MS',
    Type.Integer({
      minimum: 0,
      maximum: 600_000,
      default: 10000,
      description:
        'On SIGTERM/SIGINT: how long the whole stop may take (the drain, then in-flight requests finishing) ' +
        'before the process exits anyway.',
    }),
  ),
  shutdownDrainMs: setting(
    'SHUTDOWN_DRAIN_MS',
    Type.Integer({
      minimum: 0,
      maximum: 600_000,
      default: 0,
      description:
        'On SIGTERM/SIGINT, a drain in two steps of this length: the instance keeps serving but `/readyz` ' +
        'answers 503; then it stops listening, every answer closes its connection, and it waits (at most ' +
        'as long again) for its clients to close theirs. 0: stop at once (one instance). Behind a balancer: ' +
        "longer than the balancer's idle keep-alive timeout and its health checks' reaction time (see " +
        'docs/deployment.md). Less than half of SHUTDOWN_TIMEOUT_MS.',
    }),
  ),
  trustProxy: setting(
    'TRUST_PROXY',
    Type.Decode(
      Type.String({
        default: 'false',
        description:
          'Whether to take the client address from X-Forwarded-For, and the request id from the X-Request-Id ' +
          "a proxy sends: false; a comma-separated list of your proxies' addresses/CIDRs (recommended); or true " +
          '(any peer: then any client can choose its address and request id, and a warning is logged at start).',
      }),
      parseTrustProxy,
    ),
  ),
  tokenPrefix: setting(
    'TOKEN_PREFIX',
    Type.String({
      pattern: PREFIX_PATTERN.source,
      default: 'icat',
      description:
        'Prefix of token secrets (`icat_...`), so secret scanners can recognise them. ' +
        '2-16 lowercase letters/digits.',
    }),
    { expected: 'expected 2-16 lowercase letters or digits, starting with a letter' },
  ),
  tokenMaxLive: setting(
    'TOKEN_MAX_LIVE',
    Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: 1000,
      description: 'Most live (unexpired) tokens per account; creating one more in that account answers 409.',
    }),
  ),
  tokenMaxStored: setting(
    'TOKEN_MAX_STORED',
    Type.Decode(
      Type.String({
        default: '',
        description:
          `Most tokens one account keeps stored, live and expired (kept for TOKEN_EXPIRED_RETENTION_DAYS) ` +
          'together; at least TOKEN_MAX_LIVE. Creating a token that would pass it first purges the ' +
          "account's earliest-expired tokens (audited as `api_token.expired_purged`), so creation keeps " +
          `working and storage stays bounded. Unset: ${STORED_PER_LIVE} × TOKEN_MAX_LIVE.`,
      }),
      parseMaxStored,
    ),
  ),
  tokenMaxLifetimeDays: setting(
    'TOKEN_MAX_LIFETIME_DAYS',
    Type.Integer({
      minimum: 1,
      maximum: 36_500,
      default: 366,
      description: 'Furthest `expires_at` a new token may have, in days from now.',
    }),
  ),
  tokenExpiredRetentionDays: setting(
    'TOKEN_EXPIRED_RETENTION_DAYS',
    Type.Integer({
      minimum: 0,
      maximum: 3650,
      default: 30,
      description:
        'How long an expired token stays listed (so its owner can see that it expired) before it is ' +
        'purged, in days; 0 purges at expiry. Purged in the background, once the instance listens (a ' +
        'start never waits for it) and hourly.',
    }),
  ),
  auditRetentionDays: setting(
    'AUDIT_RETENTION_DAYS',
    Type.Integer({
      minimum: 0,
      maximum: 36_500,
      default: 365,
      description:
        'How long audit events are kept, in days; older ones are deleted in the background, once the ' +
        'instance listens (a start never waits for it) and hourly. 0 keeps them forever.',
    }),
  ),
  tokenUsageRetentionDays: setting(
    'TOKEN_USAGE_RETENTION_DAYS',
    Type.Integer({
      minimum: 1,
      maximum: 3650,
      default: 90,
      description:
        "How long each token's hourly usage counts are kept, in days; older hours are deleted in the " +
        'background, once the instance listens (a start never waits for it) and hourly.',
    }),
  ),
  tokenCacheTtlMs: setting(
    'TOKEN_CACHE_TTL_MS',
    Type.Integer({
      minimum: 0,
      maximum: 600_000,
      default: 5000,
      description:
        'How long a verified token is trusted from memory before storage is asked again. Changes made on ' +
        'other instances reach this one within about a second through the change feed; this is the bound ' +
        'while the feed is down. 0 disables the cache.',
    }),
  ),
  tokenCacheMax: setting(
    'TOKEN_CACHE_MAX',
    Type.Integer({
      minimum: 1,
      // One entry per token in active use suffices. The bound keeps a full cache within a
      // 256 MiB heap budget: an entry takes about 810 bytes (a token of two scopes and a short
      // name) up to 1,340 bytes (a 100-character name, 12 scopes, a second secret), measured by
      // scripts/cache-memory.ts; 200,000 of the largest are 255 MiB.
      maximum: 200_000,
      default: 10000,
      description:
        'Most tokens held in the verification cache (least recently used go first). An entry takes about ' +
        '810 bytes of memory (up to 1.34 KB for a token of many scopes and a long name), so the maximum, ' +
        '200000, stays within 256 MiB.',
    }),
  ),
  lastUsedFlushMs: setting(
    'LAST_USED_FLUSH_MS',
    Type.Integer({
      minimum: 10,
      maximum: 600_000,
      default: 1000,
      description:
        'Interval of the batched `last_used_at` and token usage writes (at most one write per token per interval; ' +
        'one statement per 100 tokens used in it on SQLite, per 1,000 on PostgreSQL). A use is stored, and ' +
        "shows in `last_used_at` and the token's usage, within one interval plus the time its batch takes " +
        '(10,000 tokens: under a second).',
    }),
  ),
  authFailureLimit: setting(
    'AUTH_FAILURE_LIMIT',
    Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: 20,
      description:
        'Failed authentications allowed per client address (IPv6: per /64) per window; past it, failures ' +
        "answer 429 and the address's token lookups run one at a time (valid tokens are still accepted).",
    }),
  ),
  authFailureWindowS: setting(
    'AUTH_FAILURE_WINDOW_S',
    Type.Integer({
      minimum: 1,
      maximum: 86_400,
      default: 60,
      description: 'Length of the failed-authentication window, in seconds.',
    }),
  ),
  scopeResources: setting(
    'SCOPE_RESOURCES',
    Type.Decode(
      Type.Array(Type.String({ pattern: RESOURCE_PATTERN.source }), {
        minItems: 1,
        default: [...DEFAULT_RESOURCES],
        description:
          'Comma-separated resources of the scope registry; each gets `:read` and `:write` ' +
          `(${READ_ONLY_RESOURCES.map((r) => `\`${r}\``).join(', ')}: \`:read\` only).`,
      }),
      (list) => [...new Set(list)],
    ),
    { expected: 'expected a comma-separated list of lowercase resource names' },
  ),
  bootstrapAdminToken: setting(
    'BOOTSTRAP_ADMIN_TOKEN',
    Type.Boolean({
      default: true,
      description:
        'On the first start of a database holding no tokens, mint one admin token (every scope) and print ' +
        'it once to stderr. Decided once per database, ever: a later start never mints one, even with every token ' +
        'deleted (it logs a warning instead); recover with `infracat tokens create --name NAME --all-scopes`.',
    }),
  ),
  catalogAccess: setting(
    'CATALOG_ACCESS',
    Type.Enum(['public', 'token'], {
      default: 'public',
      description:
        '`public`: catalogs are readable without a token; `token`: they need `images:read` / ' +
        '`plans:read` / `regions:read`. A bad token is refused either way.',
    }),
  ),
  catalogRefreshMs: setting(
    'CATALOG_REFRESH_MS',
    Type.Integer({
      minimum: 50,
      maximum: 3_600_000,
      default: 5000,
      description:
        'How often each instance checks storage for a newly applied catalog. Applies reach every instance ' +
        'within about a second through the change feed; this is the bound while the feed is down.',
    }),
  ),
  // '' = chosen by access mode. Only what can be sent as a header value (visible ASCII,
  // space, tab): Node refuses anything else, and every catalog read would answer 500.
  catalogCacheControl: setting(
    'CATALOG_CACHE_CONTROL',
    Type.String({
      pattern: '^[\\t\\x20-\\x7e]{0,200}$',
      default: '',
      description:
        'Cache-Control of catalog responses. Unset: `public, max-age=60` when CATALOG_ACCESS=public, ' +
        '`private, max-age=60` when token. Visible ASCII, at most 200 characters.',
    }),
    { expected: 'expected a Cache-Control header value' },
  ),
  // The catalog document routes only (PUT /api/v1/catalog and its dry run), which only the
  // operator account's catalog:write tokens reach: authentication comes before the body is read.
  catalogBodyLimitBytes: setting(
    'CATALOG_BODY_LIMIT_BYTES',
    Type.Integer({
      minimum: CATALOG_BODY_LIMIT_MIN,
      maximum: CATALOG_BODY_LIMIT_MAX,
      default: CATALOG_BODY_LIMIT_DEFAULT,
      description:
        'Largest body of `PUT /api/v1/catalog` and `POST /api/v1/catalog/diff`, in bytes (over it: 413); ' +
        `every other route takes 16 KiB. From ${CATALOG_BODY_LIMIT_MIN} (16 KiB) to ${CATALOG_BODY_LIMIT_MAX} ` +
        '(64 MiB); the default, 16 MiB, holds a catalog of 20,000 plans, 1,000 images and 50 regions ' +
        "(about 5 MiB) with room to spare. Only the operator account's `catalog:write` tokens get to send " +
        'a body there.',
    }),
  ),
  authCheckRules: setting(
    'AUTH_CHECK_RULES',
    Type.Decode(
      Type.String({
        default: DEFAULT_RULES_JSON,
        description:
          'Forward-auth rule table (JSON): which scopes a forwarded method and path need, first match wins, ' +
          'no match is denied. See docs/forward-auth.md.',
      }),
      compileRules,
    ),
  ),
  authCheckGateway: setting(
    'AUTH_CHECK_GATEWAY',
    Type.Enum(GATEWAYS, {
      default: 'auto',
      description:
        'Whose forwarded request `/api/v1/auth/check` reads: `nginx` (X-Original-Method/-URI), `traefik` ' +
        '(X-Forwarded-Method/-Uri), `envoy` (the `/api/v1/auth/check/<path>` form) or `auto` (any one of them). ' +
        'Set it to your gateway so only its headers count. See docs/forward-auth.md.',
    }),
  ),
  authCheckJwt: setting(
    'AUTH_CHECK_JWT',
    Type.Boolean({
      default: false,
      description:
        'Forward auth also hands the gateway a signed access token (RFC 9068 JWT, ES256) for the upstream: ' +
        '`X-Token-Jwt` on every 200 of `/api/v1/auth/check`, one per token reused until shortly before it ' +
        'expires. On PostgreSQL it needs JWT_SIGNING_KEY_FILES. See docs/signed-tokens.md.',
    }),
  ),
  // Only the paths: the files are read (and refused when one is not an EC P-256 private
  // key) when the app is built (src/oauth/keys.ts).
  jwtSigningKeyFiles: setting(
    'JWT_SIGNING_KEY_FILES',
    Type.Array(Type.String({ pattern: '^[^\\x00-\\x1f\\x7f]+$' }), {
      maxItems: MAX_SIGNING_KEYS,
      default: [],
      description:
        'Comma-separated PEM files, each one EC P-256 private key (ES256), that sign access tokens: the first ' +
        'signs, all are published at `/.well-known/jwks.json` (rotate: add the new key first, remove the old ' +
        `one once JWT_TTL_S has passed). At most ${MAX_SIGNING_KEYS}. Unset on SQLite: infracat makes one key ` +
        "at the first start, beside the database file (`<database>.jwt-key.pem`, the service user's only). " +
        'Unset on PostgreSQL: signed access tokens are off. See docs/signed-tokens.md.',
    }),
    { expected: `expected a comma-separated list of at most ${MAX_SIGNING_KEYS} file paths (no control characters)` },
  ),
  jwtIssuer: setting(
    'JWT_ISSUER',
    Type.Decode(
      Type.String({
        default: '',
        description:
          'The `iss` of signed access tokens and the `issuer` of `/.well-known/oauth-authorization-server`, ' +
          'whose endpoint URLs start with it: the URL clients reach infracat at (https://..., no query, ' +
          'fragment or trailing slash). Unset: http://localhost:PORT, right for a local run only.',
      }),
      parseIssuer,
    ),
  ),
  jwtTtlS: setting(
    'JWT_TTL_S',
    Type.Integer({
      minimum: 10,
      maximum: 3600,
      default: 300,
      description:
        'Lifetime of a signed access token, in seconds (never past the expiry of the token it stands for). ' +
        'A signed token stays valid until it expires, even once its token is deleted: keep it short.',
    }),
  ),
  // Only the path: the file is read (and refused when it is not a valid key list) when
  // the app is built, and re-read when it changes (src/secret-scanning/keys.ts).
  secretScanningKeysFile: setting(
    'SECRET_SCANNING_KEYS_FILE',
    Type.String({
      pattern: '^[^\\x00-\\x1f\\x7f]*$',
      default: '',
      description:
        "GitHub secret scanning: a JSON file of the public keys GitHub signs leak reports with, in GitHub's " +
        'published format (`{"public_keys": [...]}`), re-read when it changes. Set, `POST ' +
        '/api/v1/secret-scanning/leaks` revokes the leaked tokens GitHub reports; unset, that path is a 404. ' +
        'See docs/secret-scanning.md.',
    }),
    { expected: 'expected a file path (no control characters)' },
  ),
  rateLimit: setting(
    'RATE_LIMIT',
    Type.Integer({
      minimum: 0,
      maximum: 10_000_000,
      default: 600,
      description:
        'Requests per window per token, across all instances on the database (each enforces its share); ' +
        '0 turns rate limiting off. Answers carry RateLimit / RateLimit-Policy headers; over it, 429.',
    }),
  ),
  rateLimitAnonymous: setting(
    'RATE_LIMIT_ANONYMOUS',
    Type.Integer({
      minimum: 0,
      maximum: 10_000_000,
      default: 300,
      description:
        'Requests per window per client address (IPv6: per /64) for requests without a token, across all ' +
        'instances; 0: no limit for them.',
    }),
  ),
  rateLimitAccount: setting(
    'RATE_LIMIT_ACCOUNT',
    Type.Decode(
      Type.String({
        default: '',
        description:
          "Requests per window for all of an account's tokens together, across all instances (an account's " +
          '`rate_limit` field, set by PATCH /api/v1/accounts/{id}, replaces it for that account); over it, ' +
          `429 ACCOUNT_RATE_LIMITED. 0: no account limit. Unset: ${ACCOUNT_PER_TOKEN} × RATE_LIMIT.`,
      }),
      parseAccountRateLimit,
    ),
  ),
  rateLimitWindowS: setting(
    'RATE_LIMIT_WINDOW_S',
    Type.Integer({
      minimum: 1,
      maximum: 86_400,
      default: 60,
      description: 'Length of the rate-limit window, in seconds.',
    }),
  ),
  instanceHeartbeatMs: setting(
    'INSTANCE_HEARTBEAT_MS',
    Type.Integer({
      minimum: 100,
      maximum: 60_000,
      default: 2000,
      description:
        'How often each instance records in storage that it runs (table `instances`); it counts as live for 3 ' +
        'intervals after its last one. The rate limits are split among the live instances.',
    }),
  ),
  metricsAccess: setting(
    'METRICS_ACCESS',
    Type.Enum(['public', 'loopback', 'off'], {
      default: 'loopback',
      description:
        'Who may read Prometheus metrics at /metrics: `loopback` (connections from this machine: ' +
        '127.0.0.0/8 or ::1), `public`, or `off` (404).',
    }),
  ),
  console: setting(
    'CONSOLE',
    Type.Boolean({
      default: true,
      description:
        'Serve the web console at `/` (token management and catalog browsing in a browser, using only ' +
        'the public API). `false`: `/` answers 404.',
    }),
  ),
  requestTimeoutMs: setting(
    'REQUEST_TIMEOUT_MS',
    Type.Integer({
      minimum: 1000,
      maximum: 600_000,
      default: 30000,
      description: 'Longest time to receive a whole request; past it the connection is closed (408).',
    }),
  ),
  headersTimeoutMs: setting(
    'HEADERS_TIMEOUT_MS',
    Type.Integer({
      minimum: 1000,
      maximum: 600_000,
      default: 10000,
      description: 'Longest time to receive the request headers (slow-loris guard).',
    }),
  ),
  keepAliveTimeoutMs: setting(
    'KEEP_ALIVE_TIMEOUT_MS',
    Type.Integer({
      minimum: 1000,
      maximum: 600_000,
      default: 65000,
      description: "How long an idle keep-alive connection stays open (longer than a typical load balancer's 60 s).",
    }),
  ),
  webhookEncryptionKeys: setting(
    'WEBHOOK_ENCRYPTION_KEYS',
    Type.Decode(
      Type.String({
        default: '',
        description:
          'Comma-separated keys that seal webhook signing secrets in storage (AES-256-GCM), each 32 bytes in ' +
          'base64 (`openssl rand -base64 32`): the first seals new secrets, every one opens them (add a new key ' +
          'first to rotate; drop the old one once every secret was rotated). The same on every instance. Unset, on ' +
          "SQLite: infracat's own key, made at the first start beside the database (`<database>.webhook-key`); " +
          'on PostgreSQL: webhooks cannot be created nor their secrets rotated (503 WEBHOOKS_NOT_CONFIGURED), and ' +
          'existing ones cannot be signed for (their deliveries fail). See docs/webhooks.md.',
      }),
      parseEncryptionKeys,
    ),
    { shown: () => '(hidden)' },
  ),
  webhookAllowPrivateTargets: setting(
    'WEBHOOK_ALLOW_PRIVATE_TARGETS',
    Type.Boolean({
      default: false,
      description:
        'Allow webhook URLs with http and private, loopback or other non-public targets, for development and ' +
        'tests on one machine. Never in production: any token with `webhooks:write` could then make infracat ' +
        'send requests into its own network (SSRF).',
    }),
  ),
  webhookTimeoutMs: setting(
    'WEBHOOK_TIMEOUT_MS',
    Type.Integer({
      minimum: 100,
      maximum: 60_000,
      default: 10_000,
      description:
        'Longest time of one delivery attempt, from connecting to reading the answer; past it the attempt ' +
        'failed and is retried.',
    }),
  ),
  webhookRetryDelaysS: setting(
    'WEBHOOK_RETRY_DELAYS_S',
    Type.Decode(
      Type.String({
        default: '5,30,120,600,1800,3600,7200,14400,28800',
        description:
          'Comma-separated seconds to wait before each retry of a failed delivery (the last one repeats), for ' +
          'up to 24 hours from the event; a webhook whose deliveries failed for 24 hours is disabled.',
      }),
      parseRetryDelays,
    ),
  ),
  webhookConcurrency: setting(
    'WEBHOOK_CONCURRENCY',
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 16,
      description: 'Most delivery attempts in flight at once, per instance.',
    }),
  ),
  webhookConcurrencyPerHost: setting(
    'WEBHOOK_CONCURRENCY_PER_HOST',
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 4,
      description:
        'Most delivery attempts in flight to one host at once, per instance: a slow receiver holds only this ' +
        "many of WEBHOOK_CONCURRENCY's slots.",
    }),
  ),
  webhookPollMs: setting(
    'WEBHOOK_POLL_MS',
    Type.Integer({
      minimum: 50,
      maximum: 60_000,
      default: 1000,
      description:
        'How often each instance looks for deliveries that fell due (new events, retries, the claims of ' +
        'instances that died).',
    }),
  ),
  webhookMaxPerAccount: setting(
    'WEBHOOK_MAX_PER_ACCOUNT',
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 20,
      description: 'Most webhooks per account; creating one more answers 409 WEBHOOK_LIMIT_REACHED.',
    }),
  ),
  webhookDeliveryRetentionDays: setting(
    'WEBHOOK_DELIVERY_RETENTION_DAYS',
    Type.Integer({
      minimum: 1,
      maximum: 3650,
      default: 30,
      description:
        "How long each webhook's delivery log (one row per attempt) is kept, in days; older attempts are " +
        'deleted in the background, once the instance listens (a start never waits for it) and hourly.',
    }),
  ),
  corsOrigins: setting(
    'CORS_ORIGINS',
    Type.Decode(
      Type.Array(Type.String(), {
        default: [],
        description:
          'Comma-separated origins allowed to call the API from a browser (e.g. ' +
          '`https://console.example.com`), or `*`. Unset: CORS off.',
      }),
      checkOrigins,
    ),
  ),
});

type Settings = typeof SettingsSchema.properties;
export type Config = Readonly<StaticDecode<typeof SettingsSchema>>;
export type SettingName = Settings[keyof Settings]['env'];

type SettingSchema = TSchema &
  Annotations & {
    type?: string;
    enum?: readonly string[];
    minimum?: number;
    maximum?: number;
    default: unknown;
    description: string;
  };
const PROPERTIES = Object.entries(SettingsSchema.properties as object) as [keyof Config, SettingSchema][];

/** A default as it is written in the environment (and shown by docs/settings.md and `serve --help`). */
function asText(value: unknown): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}

/** Every setting as documented: docs/settings.md's table and `serve --help` list these. */
export const SETTINGS = PROPERTIES.map(([key, s]) => ({
  env: s.env as SettingName,
  key,
  /** '' means unset. */
  default: asText(s.default),
  description: s.description,
}));

/** A variable's text as the JSON value its schema checks; left as text when it cannot be one. */
function fromText(schema: SettingSchema, raw: string): unknown {
  const text = raw.trim();
  switch (schema.type) {
    case 'integer':
      return /^\d+$/.test(text) ? Number(text) : raw;
    case 'boolean':
      if (['true', '1', 'yes', 'on'].includes(text.toLowerCase())) return true;
      if (['false', '0', 'no', 'off'].includes(text.toLowerCase())) return false;
      return raw;
    case 'array':
      return raw
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
    default:
      return schema.lowercase === true ? text.toLowerCase() : text;
  }
}

function expectation(schema: SettingSchema): string {
  if (schema.expected !== undefined) return schema.expected;
  if (schema.type === 'integer') return `expected an integer from ${schema.minimum} to ${schema.maximum}`;
  if (schema.type === 'boolean') return 'expected true or false';
  if (schema.enum !== undefined) return `expected one of ${schema.enum.join(', ')}`;
  return 'not a valid value';
}

function refusal(schema: SettingSchema, raw: string, expected: string): ConfigError {
  const text = schema.shown?.(raw) ?? raw;
  const shown = text.length > 60 ? `${text.slice(0, 57)}...` : text;
  return new ConfigError(`invalid ${schema.env} ${JSON.stringify(shown)}: ${expected}`);
}

/** TOKEN_MAX_STORED: '' (STORED_PER_LIVE times TOKEN_MAX_LIVE: maxStoredTokens()) or a count. */
function parseMaxStored(raw: string): number | null {
  if (raw === '') return null;
  if (!/^[1-9][0-9]{0,7}$/.test(raw) || Number(raw) > MAX_STORED_MAX)
    throw new Error(`expected unset or an integer from 1 to ${MAX_STORED_MAX}`);
  return Number(raw);
}

/** RATE_LIMIT_ACCOUNT: '' (ACCOUNT_PER_TOKEN times RATE_LIMIT: accountRateLimit()) or a count. */
function parseAccountRateLimit(raw: string): number | null {
  if (raw === '') return null;
  if (!/^(0|[1-9][0-9]{0,7})$/.test(raw) || Number(raw) > ACCOUNT_RATE_LIMIT_MAX)
    throw new Error(`expected unset or an integer from 0 to ${ACCOUNT_RATE_LIMIT_MAX}`);
  return Number(raw);
}

/** The default limit of an account's tokens together: RATE_LIMIT_ACCOUNT, or ACCOUNT_PER_TOKEN times RATE_LIMIT. */
export function accountRateLimit(config: Pick<Config, 'rateLimit' | 'rateLimitAccount'>): number {
  return config.rateLimitAccount ?? Math.min(ACCOUNT_RATE_LIMIT_MAX, ACCOUNT_PER_TOKEN * config.rateLimit);
}

/** WEBHOOK_ENCRYPTION_KEYS: '' (none) or comma-separated 32-byte keys in base64; never shown. */
function parseEncryptionKeys(raw: string): Buffer[] {
  const texts = raw
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  return texts.map((text, i) => {
    try {
      return parseEncryptionKey(text);
    } catch (err) {
      throw new Error(`key ${i + 1}: ${(err as Error).message}`);
    }
  });
}

/** WEBHOOK_RETRY_DELAYS_S: 1 to 30 whole numbers of seconds, each from 1 to 86400. */
function parseRetryDelays(raw: string): number[] {
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > 30 || parts.some((p) => !/^[1-9][0-9]{0,4}$/.test(p) || Number(p) > 86_400))
    throw new Error('expected a comma-separated list of 1 to 30 whole numbers of seconds from 1 to 86400');
  return parts.map(Number);
}

/**
 * JWT_ISSUER: '' (jwtIssuer(): http://localhost:PORT) or an http(s) URL without query, fragment,
 * credentials or trailing slash, kept exactly as written: verifiers compare `iss` as a string.
 */
function parseIssuer(raw: string): string {
  const text = raw.trim();
  if (text === '') return '';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('expected an http(s) URL, e.g. https://tokens.example.com');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('expected an https:// (or http://) URL');
  if (url.username !== '' || url.password !== '') throw new Error('the issuer URL must not carry credentials');
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(text))
    throw new Error('the issuer URL must have no query or fragment');
  if (text.endsWith('/')) throw new Error('the issuer URL must not end with a slash');
  if (!/^[\x21-\x7e]+$/.test(text)) throw new Error('the issuer URL must be visible ASCII');
  return text;
}

/** The issuer of signed access tokens: JWT_ISSUER, or http://localhost:PORT. */
export function jwtIssuer(config: Pick<Config, 'jwtIssuer' | 'port'>): string {
  return config.jwtIssuer !== '' ? config.jwtIssuer : `http://localhost:${config.port}`;
}

/** DATABASE_NOTIFY_URL: '' (use DATABASE_URL) or a postgres:// URL. */
function parseNotifyUrl(raw: string): string {
  if (raw.trim() === '') return '';
  const db = parseDatabaseUrl(raw);
  if (db.kind !== 'postgres') throw new Error('expected unset or a postgres:// or postgresql:// URL');
  return db.url;
}

/**
 * Builds the validated, frozen config. `overrides` (from `serve` flags) win over `env`.
 * Empty environment values count as unset.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Record<SettingName, string>> = {},
): Config {
  const input: Record<string, unknown> = {};
  const raws = new Map<keyof Config, string>();
  for (const [key, schema] of PROPERTIES) {
    const fromEnv = env[schema.env];
    const raw = overrides[schema.env as SettingName] ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined);
    if (raw === undefined) continue;
    raws.set(key, raw);
    input[key] = fromText(schema, raw);
  }
  Default(SettingsSchema, input);
  // Errors() only when Check() fails: building its error list was most of a valid config's load.
  const refused = Check(SettingsSchema, input)
    ? new Set<string | undefined>()
    : new Set(Errors(SettingsSchema, input).map((e) => e.instancePath.split('/')[1]));
  // In the order of docs/settings.md, so the first bad setting is the one named, whichever step refuses it.
  for (const [key, schema] of PROPERTIES) {
    const raw = raws.get(key) ?? asText(schema.default);
    if (refused.has(key)) throw refusal(schema, raw, expectation(schema));
    if (!Type.IsCodec(schema)) continue;
    try {
      input[key] = schema['~codec'].decode(input[key]);
    } catch (err) {
      throw refusal(schema, raw, (err as Error).message);
    }
  }
  const config = input as Config;
  if (config.databaseNotifyUrl !== '' && config.database.kind !== 'postgres') {
    throw new ConfigError('invalid DATABASE_NOTIFY_URL: it is for PostgreSQL; DATABASE_URL is a SQLite file');
  }
  // Only expired tokens are purged to keep the bound: the live ones alone must fit under it.
  if (config.tokenMaxStored !== null && config.tokenMaxStored < config.tokenMaxLive) {
    throw new ConfigError(
      'invalid TOKEN_MAX_STORED: must be at least TOKEN_MAX_LIVE (only expired tokens make room under it)',
    );
  }
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError('invalid HEADERS_TIMEOUT_MS: must not exceed REQUEST_TIMEOUT_MS');
  }
  // SHUTDOWN_TIMEOUT_MS bounds the whole stop: the drain's two steps, then whatever is still
  // in flight; without time left for that the process would exit with requests unanswered.
  if (config.shutdownDrainMs > 0 && 2 * config.shutdownDrainMs >= config.shutdownTimeoutMs) {
    throw new ConfigError(
      'invalid SHUTDOWN_DRAIN_MS: must be under half of SHUTDOWN_TIMEOUT_MS, which bounds the whole stop ' +
        "(the drain's two steps, then the requests still in flight)",
    );
  }
  // Asked for signed tokens where none can be signed: refused at start, not on every check.
  if (config.authCheckJwt && config.jwtSigningKeyFiles.length === 0 && config.database.kind === 'postgres') {
    throw new ConfigError(
      'invalid AUTH_CHECK_JWT: on PostgreSQL, signed access tokens need JWT_SIGNING_KEY_FILES ' +
        '(every instance signs with the same keys; see docs/signed-tokens.md)',
    );
  }
  // Cross-setting check: a rule can only ask for scopes some token could hold.
  const registry = new ScopeRegistry(config.scopeResources);
  for (const [i, rule] of config.authCheckRules.entries()) {
    const unknown = rule.scopes.find((sc) => !registry.has(sc));
    if (unknown !== undefined) {
      const resource = unknown.split(':')[0]!;
      throw new ConfigError(
        `invalid AUTH_CHECK_RULES: rule ${i} needs ${unknown}, ` +
          (config.scopeResources.includes(resource)
            ? `which is not a scope (${resource} has :read only)`
            : 'whose resource is not in SCOPE_RESOURCES'),
      );
    }
  }
  return Object.freeze(config);
}
