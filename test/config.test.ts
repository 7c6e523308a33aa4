import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { validateHeaderValue } from 'node:http';
import path from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ConfigError } from '../src/config-error.js';
import { jwtIssuer, loadConfig, SETTINGS } from '../src/config.js';
import { maxStoredTokens } from '../src/tokens/limits.js';
import { DEFAULT_SQLITE_PATH, describeDatabase } from '../src/storage/database-url.js';

function expectError(env: Record<string, string>, pattern: RegExp): void {
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.ok(!err.message.includes('\n'), 'one line');
      assert.match(err.message, pattern);
      return true;
    },
  );
}

describe('configuration', () => {
  it('defaults: port 8080, loopback, info, SQLite at ./data/infracat.sqlite', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.logLevel, 'info');
    assert.deepEqual(c.database, { kind: 'sqlite', path: path.resolve(DEFAULT_SQLITE_PATH) });
    assert.equal(c.databasePoolMax, 10);
    assert.equal(c.databaseTimeoutMs, 5000);
    assert.equal(c.shutdownTimeoutMs, 10000);
    assert.ok(Object.isFrozen(c));
  });

  it('empty values count as unset', () => {
    assert.equal(loadConfig({ PORT: '', DATABASE_URL: '' }).port, 8080);
  });

  it('DATABASE_URL selects the backend', () => {
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:/var/lib/ic.db' }).database, {
      kind: 'sqlite',
      path: '/var/lib/ic.db',
    });
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:rel/x.sqlite' }).database, {
      kind: 'sqlite',
      path: path.resolve('rel/x.sqlite'),
    });
    assert.deepEqual(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/ic' }).database, {
      kind: 'postgres',
      url: 'postgres://u:p@db:5432/ic',
    });
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://db/ic' }).database.kind, 'postgres');
  });

  it('a bare path in DATABASE_URL is refused with the sqlite: form to write instead', () => {
    for (const p of ['/var/lib/infracat/ic.sqlite', './data/infracat.sqlite', '../x.db', 'infracat.sqlite3']) {
      const escaped = p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      expectError(
        { DATABASE_URL: p },
        new RegExp(`a bare path is not a database URL; for a SQLite file write sqlite:${escaped}$`),
      );
    }
    expectError({ DATABASE_URL: 'mysql://db/ic' }, /expected unset, sqlite:PATH, postgres/);
  });

  it('flags override environment variables', () => {
    const c = loadConfig({ PORT: '1000', LOG_LEVEL: 'warn' }, { PORT: '2000' });
    assert.equal(c.port, 2000);
    assert.equal(c.logLevel, 'warn');
  });

  it('bad values fail with one clear line naming the setting', () => {
    expectError({ PORT: 'eighty' }, /^invalid PORT "eighty": expected an integer from 0 to 65535$/);
    expectError({ PORT: '70000' }, /PORT/);
    expectError({ PORT: '-1' }, /PORT/);
    expectError({ LOG_LEVEL: 'loud' }, /LOG_LEVEL.*expected one of fatal, error/);
    expectError({ DATABASE_URL: 'mysql://x' }, /DATABASE_URL.*sqlite:PATH, postgres/);
    expectError({ DATABASE_URL: 'sqlite:' }, /DATABASE_URL.*file path/);
    expectError({ DATABASE_URL: 'sqlite::memory:' }, /DATABASE_URL.*in-memory/);
    expectError({ DATABASE_POOL_MAX: '0' }, /DATABASE_POOL_MAX/);
    expectError({ HOST: 'two words' }, /HOST/);
  });

  // Every setting, one bad value each: the exact one line a start stops with. Pins how each
  // value is read (trimming, case, ranges) whatever mechanism parses the environment.
  const BAD: readonly [string, string, string][] = [
    ['PORT', '1e3', 'expected an integer from 0 to 65535'],
    ['HOST', ' a b ', 'expected a host name or IP address'],
    ['LOG_LEVEL', 'LOUD', 'expected one of fatal, error, warn, info, debug, trace, silent'],
    ['ACCESS_LOG', 'ALL', 'expected one of all, errors'],
    ['DATABASE_URL', 'sqlite://', 'sqlite: needs a file path, e.g. sqlite:./data/infracat.sqlite'],
    ['DATABASE_NOTIFY_URL', 'sqlite:x.db', 'expected unset or a postgres:// or postgresql:// URL'],
    ['DATABASE_POOL_MAX', '1001', 'expected an integer from 1 to 1000'],
    ['DATABASE_TIMEOUT_MS', '99', 'expected an integer from 100 to 600000'],
    ['SHUTDOWN_TIMEOUT_MS', '600001', 'expected an integer from 0 to 600000'],
    ['SHUTDOWN_DRAIN_MS', '600001', 'expected an integer from 0 to 600000'],
    [
      'TRUST_PROXY',
      'yes',
      'expected true, false or a comma-separated list of IP addresses or CIDRs (prefix 1-32 for IPv4, 1-128 for IPv6)',
    ],
    ['TOKEN_PREFIX', 'ICAT', 'expected 2-16 lowercase letters or digits, starting with a letter'],
    ['TOKEN_MAX_LIVE', '0', 'expected an integer from 1 to 1000000'],
    ['TOKEN_MAX_STORED', '10000001', 'expected unset or an integer from 1 to 10000000'],
    ['TOKEN_MAX_LIFETIME_DAYS', '36501', 'expected an integer from 1 to 36500'],
    ['TOKEN_EXPIRED_RETENTION_DAYS', '3651', 'expected an integer from 0 to 3650'],
    ['AUDIT_RETENTION_DAYS', '-1', 'expected an integer from 0 to 36500'],
    ['TOKEN_USAGE_RETENTION_DAYS', '0', 'expected an integer from 1 to 3650'],
    ['TOKEN_CACHE_TTL_MS', '0x10', 'expected an integer from 0 to 600000'],
    ['TOKEN_CACHE_MAX', '200001', 'expected an integer from 1 to 200000'],
    ['LAST_USED_FLUSH_MS', '9', 'expected an integer from 10 to 600000'],
    ['AUTH_FAILURE_LIMIT', '99999999999999999999', 'expected an integer from 1 to 1000000'],
    ['AUTH_FAILURE_WINDOW_S', '86401', 'expected an integer from 1 to 86400'],
    ['SCOPE_RESOURCES', 'apps,Apps', 'expected a comma-separated list of lowercase resource names'],
    ['BOOTSTRAP_ADMIN_TOKEN', 'maybe', 'expected true or false'],
    ['CATALOG_ACCESS', 'private', 'expected one of public, token'],
    ['CATALOG_REFRESH_MS', '49', 'expected an integer from 50 to 3600000'],
    ['CATALOG_CACHE_CONTROL', 'a\nb', 'expected a Cache-Control header value'],
    ['CATALOG_BODY_LIMIT_BYTES', '67108865', 'expected an integer from 16384 to 67108864'],
    ['AUTH_CHECK_RULES', '{}', 'must be a JSON array of rules'],
    ['AUTH_CHECK_GATEWAY', 'NGINX', 'expected one of auto, nginx, traefik, envoy'],
    ['AUTH_CHECK_JWT', 'maybe', 'expected true or false'],
    [
      'JWT_SIGNING_KEY_FILES',
      'a.pem,b\u0001.pem',
      'expected a comma-separated list of at most 10 file paths (no control characters)',
    ],
    ['JWT_ISSUER', 'https://tokens.example.com/', 'the issuer URL must not end with a slash'],
    ['JWT_TTL_S', '3601', 'expected an integer from 10 to 3600'],
    ['SECRET_SCANNING_KEYS_FILE', 'keys\n.json', 'expected a file path (no control characters)'],
    ['RATE_LIMIT', '10000001', 'expected an integer from 0 to 10000000'],
    ['RATE_LIMIT_ANONYMOUS', '-1', 'expected an integer from 0 to 10000000'],
    ['RATE_LIMIT_ACCOUNT', '-1', 'expected unset or an integer from 0 to 10000000'],
    ['RATE_LIMIT_WINDOW_S', '0', 'expected an integer from 1 to 86400'],
    ['INSTANCE_HEARTBEAT_MS', '99', 'expected an integer from 100 to 60000'],
    ['METRICS_ACCESS', 'none', 'expected one of public, loopback, off'],
    ['CONSOLE', '2', 'expected true or false'],
    ['REQUEST_TIMEOUT_MS', '999', 'expected an integer from 1000 to 600000'],
    ['HEADERS_TIMEOUT_MS', '600001', 'expected an integer from 1000 to 600000'],
    ['KEEP_ALIVE_TIMEOUT_MS', '999', 'expected an integer from 1000 to 600000'],
    ['WEBHOOK_ENCRYPTION_KEYS', 'c2hvcnQ=', 'key 1: expected 32 bytes in base64 (openssl rand -base64 32)'],
    ['WEBHOOK_ALLOW_PRIVATE_TARGETS', 'sometimes', 'expected true or false'],
    ['WEBHOOK_TIMEOUT_MS', '99', 'expected an integer from 100 to 60000'],
    [
      'WEBHOOK_RETRY_DELAYS_S',
      '5,0',
      'expected a comma-separated list of 1 to 30 whole numbers of seconds from 1 to 86400',
    ],
    ['WEBHOOK_CONCURRENCY', '0', 'expected an integer from 1 to 1000'],
    ['WEBHOOK_CONCURRENCY_PER_HOST', '1001', 'expected an integer from 1 to 1000'],
    ['WEBHOOK_POLL_MS', '49', 'expected an integer from 50 to 60000'],
    ['WEBHOOK_MAX_PER_ACCOUNT', '0', 'expected an integer from 1 to 1000'],
    ['WEBHOOK_DELIVERY_RETENTION_DAYS', '0', 'expected an integer from 1 to 3650'],
    ['CORS_ORIGINS', 'https://a.example, ftp://b', '"ftp://b" is not an origin like https://console.example.com'],
  ];

  const HIDDEN = new Set(['WEBHOOK_ENCRYPTION_KEYS']);

  it('every setting refuses a bad value with one line: the variable, the value, what was expected', () => {
    const names = SETTINGS.map((s) => s.env);
    assert.deepEqual(
      BAD.map(([name]) => name),
      names,
      'one bad value per setting, in the order of docs/settings.md',
    );
    for (const [name, value, expected] of BAD) {
      // A secret setting's value is never shown, not even a bad one.
      const shown = HIDDEN.has(name) ? '(hidden)' : value;
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.equal(err.message, `invalid ${name} ${JSON.stringify(shown)}: ${expected}`);
          return true;
        },
        name,
      );
      // A flag is read exactly as the variable it overrides.
      const message = `invalid ${name} ${JSON.stringify(shown)}: ${expected}`;
      assert.throws(() => loadConfig({}, { [name]: value }), { message }, name);
    }
  });

  it(
    'JWT_ISSUER: an http(s) URL as written, else ' + 'http://localhost:PORT; AUTH_CHECK_JWT on PostgreSQL needs keys',
    () => {
      assert.equal(jwtIssuer(loadConfig({})), 'http://localhost:8080');
      assert.equal(jwtIssuer(loadConfig({ PORT: '9000' })), 'http://localhost:9000');
      assert.equal(
        jwtIssuer(loadConfig({ JWT_ISSUER: ' https://tokens.example.com/infracat ' })),
        'https://tokens.example.com/infracat',
      );
      for (const [bad, why] of [
        ['tokens.example.com', /expected an http\(s\) URL/],
        ['ftp://tokens.example.com', /expected an https:\/\/ \(or http:\/\/\) URL/],
        ['https://a:b@tokens.example.com', /credentials/],
        ['https://tokens.example.com?x=1', /no query or fragment/],
        ['https://tokens.example.com#x', /no query or fragment/],
        ['https://tokens.example.com/', /must not end with a slash/],
        ['https://tökens.example.com', /visible ASCII/],
      ] as const)
        expectError({ JWT_ISSUER: bad }, why);
      const pg = { DATABASE_URL: 'postgres://u@db/ic' };
      expectError(
        { ...pg, AUTH_CHECK_JWT: 'true' },
        /^invalid AUTH_CHECK_JWT: on PostgreSQL, signed access tokens need JWT_SIGNING_KEY_FILES/,
      );
      assert.equal(loadConfig({ ...pg, AUTH_CHECK_JWT: 'true', JWT_SIGNING_KEY_FILES: '/k/a.pem' }).authCheckJwt, true);
      assert.equal(loadConfig({ AUTH_CHECK_JWT: 'true' }).authCheckJwt, true, 'SQLite makes its own key');
      assert.deepEqual(loadConfig({ JWT_SIGNING_KEY_FILES: ' /k/new.pem , /k/old.pem ' }).jwtSigningKeyFiles, [
        '/k/new.pem',
        '/k/old.pem',
      ]);
      expectError(
        { JWT_SIGNING_KEY_FILES: Array.from({ length: 11 }, (_, i) => `/k/${i}.pem`).join(',') },
        /at most 10/,
      );
    },
  );

  it('TOKEN_MAX_STORED: unset is 10 x TOKEN_MAX_LIVE; set, at least TOKEN_MAX_LIVE (expired tokens make room)', () => {
    assert.equal(maxStoredTokens(loadConfig({})), 10_000);
    assert.equal(maxStoredTokens(loadConfig({ TOKEN_MAX_LIVE: '1000000' })), 10_000_000);
    assert.equal(maxStoredTokens(loadConfig({ TOKEN_MAX_STORED: ' 1500 ' })), 1500);
    assert.equal(maxStoredTokens(loadConfig({ TOKEN_MAX_LIVE: '7', TOKEN_MAX_STORED: '7' })), 7);
    expectError(
      { TOKEN_MAX_LIVE: '8', TOKEN_MAX_STORED: '7' },
      /^invalid TOKEN_MAX_STORED: must be at least TOKEN_MAX_LIVE/,
    );
    for (const bad of ['0', '-1', '1e3', '0x10', '12.5', 'many'])
      expectError(
        { TOKEN_MAX_STORED: bad },
        /^invalid TOKEN_MAX_STORED ".*": expected unset or an integer from 1 to 10000000$/,
      );
  });

  it('TOKEN_CACHE_MAX: up to 200000, what a 256 MiB memory budget holds; past it the start fails', () => {
    assert.equal(loadConfig({ TOKEN_CACHE_MAX: '200000' }).tokenCacheMax, 200_000);
    for (const over of ['200001', '1000000'])
      expectError(
        { TOKEN_CACHE_MAX: over },
        new RegExp(`^invalid TOKEN_CACHE_MAX "${over}": expected an integer from 1 to 200000$`),
      );
  });

  it('a long bad value is cut short in the message; with several bad values the first in table order is named', () => {
    expectError(
      { CATALOG_CACHE_CONTROL: 'x'.repeat(201) },
      /^invalid CATALOG_CACHE_CONTROL "x{57}\.\.\.": expected a Cache-Control header value$/,
    );
    expectError({ CORS_ORIGINS: 'ftp://b', HOST: ' ', PORT: 'x' }, /^invalid PORT "x"/);
    expectError({ CORS_ORIGINS: 'ftp://b', TOKEN_PREFIX: 'A' }, /^invalid TOKEN_PREFIX "A"/);
    expectError({ DATABASE_POOL_MAX: '0', DATABASE_URL: 'mysql://x' }, /^invalid DATABASE_URL "mysql:\/\/x"/);
    expectError({ PORT: '-1', DATABASE_URL: 'mysql://x' }, /^invalid PORT "-1"/);
  });

  it('DATABASE_NOTIFY_URL: a PostgreSQL URL, only with PostgreSQL storage, its password never shown', () => {
    const pgUrl = 'postgres://infracat:hunter2@db.internal:5432/infracat';
    assert.equal(loadConfig({ DATABASE_URL: pgUrl }).databaseNotifyUrl, '');
    const direct = 'postgresql://infracat:hunter2@db-direct.internal:5432/infracat';
    assert.equal(loadConfig({ DATABASE_URL: pgUrl, DATABASE_NOTIFY_URL: direct }).databaseNotifyUrl, direct);
    expectError({ DATABASE_NOTIFY_URL: direct }, /^invalid DATABASE_NOTIFY_URL: it is for PostgreSQL/);
    assert.throws(
      () => loadConfig({ DATABASE_URL: pgUrl, DATABASE_NOTIFY_URL: 'postgres://u:hunter2@' }),
      (err: Error) => /^invalid DATABASE_NOTIFY_URL/.test(err.message) && !err.message.includes('hunter2'),
    );
  });

  it('cross-setting checks: headers within the request timeout, drain within shutdown timeout, rule scopes', () => {
    expectError(
      { HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' },
      /^invalid HEADERS_TIMEOUT_MS: must not exceed REQUEST_TIMEOUT_MS$/,
    );
    assert.equal(loadConfig({ HEADERS_TIMEOUT_MS: '10000', REQUEST_TIMEOUT_MS: '10000' }).headersTimeoutMs, 10000);
    // SHUTDOWN_TIMEOUT_MS bounds the whole stop: the drain's two steps, then what is in flight.
    for (const [drain, timeout] of [
      ['15000', undefined],
      ['5000', undefined],
      ['5000', '10000'],
      ['20000', '15000'],
    ] as const) {
      expectError(
        { SHUTDOWN_DRAIN_MS: drain, ...(timeout !== undefined ? { SHUTDOWN_TIMEOUT_MS: timeout } : {}) },
        /^invalid SHUTDOWN_DRAIN_MS: must be under half of SHUTDOWN_TIMEOUT_MS, which bounds the whole stop/,
      );
    }
    const fleet = loadConfig({ SHUTDOWN_DRAIN_MS: '3000', SHUTDOWN_TIMEOUT_MS: '13000' });
    assert.deepEqual([fleet.shutdownDrainMs, fleet.shutdownTimeoutMs], [3000, 13000]);
    assert.equal(loadConfig({ SHUTDOWN_DRAIN_MS: '4999' }).shutdownDrainMs, 4999);
    assert.equal(loadConfig({ SHUTDOWN_TIMEOUT_MS: '0' }).shutdownDrainMs, 0, 'no drain: no constraint');
    const rules = '[{"path":"/billing/**","scopes":["billing:read"]}]';
    expectError(
      { AUTH_CHECK_RULES: rules },
      /^invalid AUTH_CHECK_RULES: rule 0 needs billing:read, whose resource is not in SCOPE_RESOURCES$/,
    );
    const allowed = loadConfig({ AUTH_CHECK_RULES: rules, SCOPE_RESOURCES: 'apps,billing' });
    assert.deepEqual(allowed.authCheckRules[0]!.scopes, ['billing:read']);
    // A read-only resource has no :write scope: a rule needing it could never be met.
    expectError(
      { AUTH_CHECK_RULES: '[{"path":"/audit/**","scopes":["audit-events:write"]}]' },
      new RegExp(
        '^invalid AUTH_CHECK_RULES: rule 0 needs audit-events:write, ' +
          'which is not a scope \\(audit-events has :read only\\)$',
      ),
    );
    const audit = loadConfig({ AUTH_CHECK_RULES: '[{"path":"/audit/**","scopes":["audit-events:read"]}]' });
    assert.deepEqual(audit.authCheckRules[0]!.scopes, ['audit-events:read']);
  });

  it('values are read as written: trimmed, any-case log level, boolean words, lists without blanks or repeats', () => {
    const c = loadConfig({
      PORT: ' 80 ',
      LOG_LEVEL: ' WARN ',
      TOKEN_PREFIX: ' acme ',
      BOOTSTRAP_ADMIN_TOKEN: ' OFF ',
      CONSOLE: 'yes',
      TRUST_PROXY: ' 10.0.0.1 , ::1 ',
      SCOPE_RESOURCES: ' apps , apps,billing ',
      CATALOG_CACHE_CONTROL: ' no-store ',
      CORS_ORIGINS: ' HTTPS://A.example:8443 , * ,',
      AUTH_CHECK_GATEWAY: ' nginx ',
      CATALOG_ACCESS: 'token',
    });
    assert.equal(c.port, 80);
    assert.equal(c.logLevel, 'warn');
    assert.equal(c.tokenPrefix, 'acme');
    assert.equal(c.bootstrapAdminToken, false);
    assert.equal(c.console, true);
    assert.deepEqual(c.trustProxy, ['10.0.0.1', '::1']);
    assert.deepEqual(c.scopeResources, ['apps', 'billing']);
    assert.equal(c.catalogCacheControl, 'no-store');
    assert.deepEqual(c.corsOrigins, ['HTTPS://A.example:8443', '*']);
    assert.equal(c.authCheckGateway, 'nginx');
    assert.equal(c.catalogAccess, 'token');
    assert.equal(loadConfig({ TRUST_PROXY: ' true ' }).trustProxy, true);
    const words = [
      ['1', true],
      ['on', true],
      ['TRUE', true],
      ['no', false],
      ['0', false],
      ['False', false],
    ] as const;
    for (const [word, value] of words) {
      assert.equal(loadConfig({ CONSOLE: word }).console, value, word);
    }
  });

  it('every default, as docs/settings.md states it', () => {
    const c = loadConfig({});
    const rules = c.authCheckRules.map((r) => [r.methods, r.path, r.scopes]);
    assert.deepEqual(
      { ...c, database: undefined, authCheckRules: rules },
      {
        port: 8080,
        host: '127.0.0.1',
        logLevel: 'info',
        accessLog: 'all',
        database: undefined,
        databaseNotifyUrl: '',
        databasePoolMax: 10,
        databaseTimeoutMs: 5000,
        shutdownTimeoutMs: 10000,
        shutdownDrainMs: 0,
        trustProxy: false,
        tokenPrefix: 'icat',
        tokenMaxLive: 1000,
        tokenMaxStored: null,
        tokenMaxLifetimeDays: 366,
        tokenExpiredRetentionDays: 30,
        auditRetentionDays: 365,
        tokenUsageRetentionDays: 90,
        tokenCacheTtlMs: 5000,
        tokenCacheMax: 10000,
        lastUsedFlushMs: 1000,
        authFailureLimit: 20,
        authFailureWindowS: 60,
        scopeResources: [
          'api-tokens',
          'apps',
          'images',
          'plans',
          'regions',
          'catalog',
          'audit-events',
          'accounts',
          'webhooks',
        ],
        bootstrapAdminToken: true,
        catalogAccess: 'public',
        catalogRefreshMs: 5000,
        catalogCacheControl: '',
        catalogBodyLimitBytes: 16 * 1024 * 1024,
        authCheckRules: [
          [['GET', 'HEAD'], '/apps/**', ['apps:read']],
          [null, '/apps/**', ['apps:write']],
        ],
        authCheckGateway: 'auto',
        authCheckJwt: false,
        jwtSigningKeyFiles: [],
        jwtIssuer: '',
        jwtTtlS: 300,
        secretScanningKeysFile: '',
        rateLimit: 600,
        rateLimitAccount: null,
        rateLimitAnonymous: 300,
        rateLimitWindowS: 60,
        instanceHeartbeatMs: 2000,
        metricsAccess: 'loopback',
        console: true,
        requestTimeoutMs: 30000,
        headersTimeoutMs: 10000,
        keepAliveTimeoutMs: 65000,
        webhookEncryptionKeys: [],
        webhookAllowPrivateTargets: false,
        webhookTimeoutMs: 10000,
        webhookRetryDelaysS: [5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800],
        webhookConcurrency: 16,
        webhookConcurrencyPerHost: 4,
        webhookPollMs: 1000,
        webhookMaxPerAccount: 20,
        webhookDeliveryRetentionDays: 30,
        corsOrigins: [],
      },
    );
  });

  it('CATALOG_CACHE_CONTROL takes only what can be sent as a header (else every catalog read would be a 500)', () => {
    const refused = /^invalid CATALOG_CACHE_CONTROL ".*": expected a Cache-Control header value$/;
    for (const v of ['max-age=60, \u0001', 'max-age=60, \u2603', 'max-age=60,\u007f', 'max-age=60, \u00e9', 'a\rb']) {
      expectError({ CATALOG_CACHE_CONTROL: v }, refused);
    }
    const fine = 'private,\tmax-age=60, stale-while-revalidate=30, community="x"';
    assert.equal(loadConfig({ CATALOG_CACHE_CONTROL: fine }).catalogCacheControl, fine);
    // Whatever the value: refused at start, or sendable.
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (v) => {
        let value: string;
        try {
          value = loadConfig({ CATALOG_CACHE_CONTROL: v }).catalogCacheControl;
        } catch (err) {
          assert.ok(err instanceof ConfigError);
          return;
        }
        validateHeaderValue('cache-control', value);
      }),
      { numRuns: 500 },
    );
  });

  it('passwords never appear in messages or descriptions', () => {
    assert.equal(
      describeDatabase(loadConfig({ DATABASE_URL: 'postgres://app:hunter2@db/ic' }).database),
      'postgres://app:***@db/ic',
    );
    expectError({ DATABASE_URL: 'postgres://app:hunter2@' }, /^(?!.*hunter2)/);
  });

  it('WEBHOOK_ENCRYPTION_KEYS: 32-byte keys in base64 or base64url, comma-separated; a bad one is never shown', () => {
    const a = Buffer.alloc(32, 1);
    const b = Buffer.alloc(32, 0xfb);
    const keys = loadConfig({
      WEBHOOK_ENCRYPTION_KEYS: ` ${a.toString('base64')} , ${b.toString('base64url')}`,
    }).webhookEncryptionKeys;
    assert.deepEqual(keys, [a, b]);
    assert.deepEqual(loadConfig({}).webhookEncryptionKeys, []);
    const almost = `${a.toString('base64')},${Buffer.alloc(31, 9).toString('base64')}`;
    expectError(
      { WEBHOOK_ENCRYPTION_KEYS: almost },
      /^invalid WEBHOOK_ENCRYPTION_KEYS "\(hidden\)": key 2: expected 32 bytes/,
    );
    assert.throws(
      () => loadConfig({ WEBHOOK_ENCRYPTION_KEYS: almost }),
      (err: unknown) => !(err as Error).message.includes(a.toString('base64').slice(0, 10)),
    );
  });

  it("docs/settings.md's table is the schema's: every setting, in order, with its default and description", () => {
    const doc = readFileSync(new URL('../docs/settings.md', import.meta.url), 'utf8');
    const rows = doc.split('\n').filter((l) => /^\| `[A-Z][A-Z0-9_]*` \|/.test(l));
    const shown = (d: string): string => (d === '' ? '(unset)' : `\`${d}\``);
    assert.deepEqual(
      rows,
      SETTINGS.map((s) => `| \`${s.env}\` | ${shown(s.default)} | ${s.description} |`),
    );
  });
});

describe('error catalog documentation', () => {
  it('docs/errors.md lists every code with its status', async () => {
    const { ERRORS } = await import('../src/errors.js');
    const doc = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
    for (const [code, { status }] of Object.entries(ERRORS)) {
      assert.ok(doc.includes(`| \`${code}\` | ${status} |`), `docs/errors.md documents ${code}`);
    }
  });
});
