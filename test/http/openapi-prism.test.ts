// Prism (Stoplight's validation proxy, run as `prism proxy --errors`) stands between a
// client and a real listening server and checks every answer against the served
// document: status, headers, media type and body. A tour drives every operation through
// it in every status the document gives it, each provoked for real: the successes and
// the client errors by what the client sends; 500 by a storage fault (the tables renamed
// away under the running server, by another connection to its SQLite file); 503 by
// storage gone (the store closed under it) and by a stop (the app closing while it still
// listens); 429 by the rate limits (a token's budget, the address's anonymous budget and
// its failed authentications, each spent first through inject()). Any violation fails, and
// so does a documented (operation, status) the tour did not reach: the tour lists what it
// covered. Every header an answer carried (but the transport's) must be documented on its
// operation and status.
// Prism's own request validation is off (--validate-request=false): the tour sends wrong
// requests on purpose, to reach the error answers, and they must reach the server. Two
// kinds never do, whatever the flag: a request without the token an operation requires
// (Prism answers 401 itself) and a body that is not JSON under a JSON Content-Type (Prism
// parses it first, and answers 400): those statuses are reached by other requests (an
// unknown token; a credential in the query string), and test/http/errors.test.ts checks
// the bodies of the others against the same Problem schema. Prism's CORS answers are off
// (--cors=false): the server's own CORS headers reach the client as it sent them.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BODY_LIMIT_BYTES } from '../../src/app.js';
import { LEAKS_PATH } from '../../src/secret-scanning/routes.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import { generateSecret } from '../../src/tokens/format.js';
import { build, mintToken } from '../helpers/app.js';
import { signedHeaders, signingKey, writeKeyFile } from '../helpers/secret-scanning.js';
import { tempDir } from '../helpers/sqlite.js';
import { sleep, until } from '../helpers/until.js';
import { TEST_ENCRYPTION_KEY } from '../helpers/webhooks.js';

type Operation = { responses: Record<string, { headers?: Record<string, unknown> }>; requestBody?: unknown };
type Doc = { paths: Record<string, Record<string, Operation>> };

/** One request of the tour, as sent (to send again). */
interface Sent {
  method: string;
  url: string;
  auth?: string;
  headers?: Record<string, string>;
  body?: unknown;
  raw?: string;
  type?: string;
}

const ORIGIN = 'https://console.example';
// Set by whoever carries the bytes, not by the API (and Prism's own marker of a violation).
const TRANSPORT = new Set([
  'connection',
  'content-length',
  'content-type',
  'date',
  'keep-alive',
  'transfer-encoding',
  'sl-violations',
]);
// A body just past the limit of every route (the catalog routes' is set to the same): small
// enough to be read whole before the answer closes the connection.
const TOO_LARGE = BODY_LIMIT_BYTES + 1;
// Budgets above what the tour spends (the tour's own token makes some 320 requests, some 80
// go without a token, some 60 authentications fail) before it spends the rest on purpose;
// windows longer than the tour.
const LIMITS = {
  RATE_LIMIT: '500',
  RATE_LIMIT_ANONYMOUS: '200',
  RATE_LIMIT_WINDOW_S: '86400',
  AUTH_FAILURE_LIMIT: '300',
  AUTH_FAILURE_WINDOW_S: '86400',
};

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('Prism validation proxy', () => {
  it('tours every operation in every status it documents', async (t) => {
    // Holds the app's stop open (its preClose) while the tour walks it; let go at the end in any case.
    let closing = false;
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    t.after(() => letGo());
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const key = signingKey();
    // A clock the tour moves, to let a token expire; few live tokens, to reach the cap; the
    // catalog routes' body limit as low as it goes (the app's), so that one body is past every limit.
    let offset = 0;
    const { app, store, config } = await build(t, {
      env: {
        AUTH_CHECK_GATEWAY: 'envoy',
        LOG_LEVEL: 'silent',
        TOKEN_MAX_LIVE: '6',
        // Tokens stay verified in memory: the limits phase reaches the limiter after storage is gone.
        TOKEN_CACHE_TTL_MS: '600000',
        CATALOG_BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES),
        SECRET_SCANNING_KEYS_FILE: writeKeyFile(join(tmp.dir, 'keys.json'), [key]),
        CORS_ORIGINS: ORIGIN,
        ...LIMITS,
        // Webhooks to a local port nothing listens on (their deliveries fail, harmlessly), few of them.
        WEBHOOK_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEY,
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        WEBHOOK_MAX_PER_ACCOUNT: '2',
      },
      now: () => Date.now() + offset,
      extend: (routes) =>
        routes.addHook('preClose', async () => {
          closing = true;
          await held;
        }),
    });
    const upstream = await app.listen({ port: 0, host: '127.0.0.1' });
    const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<Doc>();
    const file = join(tmp.dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const port = await freePort();
    const prism = spawn(
      process.execPath,
      [
        'node_modules/@stoplight/prism-cli/dist/index.js',
        'proxy',
        '--errors',
        '--validate-request=false',
        '--cors=false',
        '--verboseLevel=warn',
        '-p',
        String(port),
        '-h',
        '127.0.0.1',
        file,
        upstream,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    prism.stdout.on('data', (c: Buffer) => (log += c.toString()));
    prism.stderr.on('data', (c: Buffer) => (log += c.toString()));
    t.after(() => prism.kill());
    const base = `http://127.0.0.1:${port}`;
    // Quiet (warnings and errors only): it says nothing when it listens, so it is asked.
    const listening = async (): Promise<boolean> =>
      (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true;
    for (const end = Date.now() + 60_000; !(await listening()); await sleep(100))
      assert.ok(Date.now() < end && prism.exitCode === null, `prism to listen:\n${log}`);

    // Each documented path as a pattern; literal paths first (`/api-tokens/current` before `/{id}`).
    const templates = Object.keys(doc.paths)
      .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))
      .map((p) => ({ p, re: new RegExp(`^${p.replace(/\{path\}/, '.+').replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
    /** Every documented operation, `method path`, and its statuses. */
    const operations = new Map(
      Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.entries(item)
          .filter(([method]) => method !== 'head')
          .map(([method, op]): [string, Operation] => [`${method} ${path}`, op]),
      ),
    );
    const reached = new Set<string>();
    const violations: string[] = [];
    /** The headers each `operation status` answered with. */
    const headersSent = new Map<string, Set<string>>();
    /** The first request each operation answered with a success, to send again where only the state differs. */
    const succeeded = new Map<string, Sent>();

    async function sendRequest(request: Sent): Promise<Response> {
      const { method, url } = request;
      const headers: Record<string, string> = { origin: ORIGIN, ...request.headers };
      if (request.auth !== undefined) headers.authorization = `Bearer ${request.auth}`;
      let body: string | undefined;
      if (request.raw !== undefined) body = request.raw;
      else if (request.body !== undefined) body = JSON.stringify(request.body);
      if (body !== undefined) headers['content-type'] = request.type ?? 'application/json';
      const res = await fetch(`${base}${url}`, { method, headers, body });
      const path = url.split('?')[0]!;
      const template = templates.find(({ re }) => re.test(path))?.p;
      assert.ok(template !== undefined, `${method} ${url} is no documented path`);
      const found = res.headers.get('sl-violations');
      if (found !== null) violations.push(`${method} ${url} ${res.status}: ${found}`);
      // Every answer of the server names its request; Prism's own errors (an answer it could not read) do not.
      else if (res.headers.get('x-request-id') === null)
        violations.push(`${method} ${url} ${res.status}, from Prism: ${await res.clone().text()}`);
      const operation = `${method.toLowerCase()} ${template}`;
      const key = `${operation} ${res.status}`;
      reached.add(key);
      const names = headersSent.get(key) ?? new Set<string>();
      res.headers.forEach((_value, name) => {
        if (!TRANSPORT.has(name)) names.add(name);
      });
      headersSent.set(key, names);
      if (res.ok && !succeeded.has(operation)) succeeded.set(operation, request);
      return res;
    }
    const send = (method: string, url: string, options: Omit<Sent, 'method' | 'url'> = {}): Promise<Response> =>
      sendRequest({ method, url, ...options });

    /**
     * For each operation that documents `status` (and, unless `all`, whose tour has not
     * reached it yet): the requests `variants` makes of its first success, in turn, until one
     * is answered so.
     */
    async function reach(
      status: number,
      variants: (success: Sent | undefined) => (Sent | undefined)[],
      all = false,
    ): Promise<void> {
      for (const [operation, op] of operations) {
        if (!(String(status) in op.responses) || (!all && reached.has(`${operation} ${status}`))) continue;
        for (const request of variants(succeeded.get(operation))) {
          if (request === undefined) continue;
          const res = await sendRequest(request);
          await res.arrayBuffer();
          if (res.status === status) break;
        }
      }
    }
    /** `request` with another credential (null: none). */
    const as = (request: Sent | undefined, auth: string | null): Sent | undefined => {
      if (request === undefined) return undefined;
      const { auth: _auth, ...rest } = request;
      return auth === null ? rest : { ...rest, auth };
    };
    /** A well-formed secret no token has: its check costs a lookup in storage. */
    const unknownSecret = () => generateSecret(config.tokenPrefix);

    const all = await mintToken(app, app.infracat.tokens.service.registry.names(), 'tour');
    const narrow = await mintToken(app, ['apps:read'], 'narrow');
    const A = all.secret;

    // Operations: health, scopes.
    await send('GET', '/healthz');
    await send('GET', '/readyz');
    await send('GET', '/api/v1/scopes');

    // Tokens.
    const created = (await (
      await send('POST', '/api/v1/api-tokens', { auth: A, body: { name: 'ci', scopes: ['apps:read'] } })
    ).json()) as { id: string; token: string };
    await send('GET', '/api/v1/api-tokens?per_page=1', { auth: A });
    await send('GET', '/api/v1/api-tokens/current', { auth: A });
    await send('GET', `/api/v1/api-tokens/${created.id}`, { auth: A });
    await send('GET', `/api/v1/api-tokens/${created.id}/usage`, { auth: A });
    await send('PATCH', `/api/v1/api-tokens/${created.id}`, { auth: A, body: { name: 'ci 2' } });
    await send('PATCH', `/api/v1/api-tokens/${created.id}`, {
      auth: A,
      body: { name: 'ci 3' },
      type: 'application/merge-patch+json',
    });
    await send('POST', `/api/v1/api-tokens/${created.id}/rotate`, { auth: A, body: { grace_period_s: 0 } });
    await send('POST', '/api/v1/api-tokens/introspect', { auth: A, body: { token: narrow.secret } });
    await send('POST', '/api/v1/api-tokens/introspect', {
      auth: A,
      raw: `token=${encodeURIComponent(narrow.secret)}`,
      type: 'application/x-www-form-urlencoded',
    });
    await send('POST', '/api/v1/api-tokens/introspect', { auth: A, body: { token: 'nope' } });
    // An expired token cannot be rotated.
    const soon = new Date(Date.now() + 60_000).toISOString();
    const expiring = (await (
      await send('POST', '/api/v1/api-tokens', {
        auth: A,
        body: { name: 'soon', scopes: ['apps:read'], expires_at: soon },
      })
    ).json()) as { id: string };
    offset = 120_000;
    await send('POST', `/api/v1/api-tokens/${expiring.id}/rotate`, { auth: A });
    offset = 0;
    await send('DELETE', `/api/v1/api-tokens/${expiring.id}`, { auth: A });
    await send('DELETE', `/api/v1/api-tokens/${created.id}`, { auth: A });
    // The cap on live tokens.
    const extra: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await send('POST', '/api/v1/api-tokens', { auth: A, body: { name: `n${i}`, scopes: ['apps:read'] } });
      if (res.status !== 201) break;
      extra.push(((await res.json()) as { id: string }).id);
    }
    for (const id of extra) await send('DELETE', `/api/v1/api-tokens/${id}`, { auth: A });

    // Accounts and their tokens.
    const account = (await (
      await send('POST', '/api/v1/accounts', { auth: A, body: { name: 'Acme', external_id: 'cus_1' } })
    ).json()) as { id: string };
    await send('POST', '/api/v1/accounts', { auth: A, body: { name: 'Acme again', external_id: 'cus_1' } });
    await send('GET', '/api/v1/accounts?status=active&per_page=10', { auth: A });
    await send('GET', `/api/v1/accounts/${account.id}`, { auth: A });
    await send('PATCH', `/api/v1/accounts/${account.id}`, { auth: A, body: { name: 'Acme Corp' } });
    const accountToken = (await (
      await send('POST', `/api/v1/accounts/${account.id}/api-tokens`, {
        auth: A,
        body: { name: 'deploy', scopes: ['apps:read'] },
      })
    ).json()) as { id: string };
    const tokenPath = `/api/v1/accounts/${account.id}/api-tokens/${accountToken.id}`;
    await send('GET', `/api/v1/accounts/${account.id}/api-tokens`, { auth: A });
    await send('GET', tokenPath, { auth: A });
    await send('GET', `${tokenPath}/usage`, { auth: A });
    await send('PATCH', tokenPath, { auth: A, body: { name: 'deploy 2' } });
    await send('POST', `${tokenPath}/rotate`, { auth: A });
    const soonInAccount = (await (
      await send('POST', `/api/v1/accounts/${account.id}/api-tokens`, {
        auth: A,
        body: { name: 'soon', scopes: ['apps:read'], expires_at: new Date(Date.now() + 60_000).toISOString() },
      })
    ).json()) as { id: string };
    offset = 120_000;
    await send('POST', `/api/v1/accounts/${account.id}/api-tokens/${soonInAccount.id}/rotate`, { auth: A });
    offset = 0;
    for (let i = 0; i < 10; i++) {
      const res = await send('POST', `/api/v1/accounts/${account.id}/api-tokens`, {
        auth: A,
        body: { name: `n${i}`, scopes: ['apps:read'] },
      });
      if (res.status !== 201) break;
    }
    await send('POST', '/api/v1/accounts/acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H/api-tokens', {
      auth: A,
      body: { name: 'x', scopes: ['apps:read'] },
    });
    await send('PATCH', `/api/v1/accounts/${OPERATOR_ACCOUNT_ID}`, { auth: A, body: { status: 'suspended' } });
    await send('DELETE', tokenPath, { auth: A });
    await send('DELETE', `/api/v1/accounts/${account.id}`, { auth: A });
    await send('DELETE', '/api/v1/accounts/acc_00000000000000000000000000', { auth: A });

    // The audit trail.
    await send('GET', '/api/v1/audit-events?per_page=2', { auth: A });

    // Webhooks: their life, the cap, a test of a disabled one, the delivery log.
    const webhook = (await (
      await send('POST', '/api/v1/webhooks', {
        auth: A,
        body: { url: 'http://127.0.0.1:9/hook', events: ['api_token.created'], description: 'tour' },
      })
    ).json()) as { id: string };
    const webhookPath = `/api/v1/webhooks/${webhook.id}`;
    await send('POST', '/api/v1/webhooks', {
      auth: A,
      body: { url: 'http://127.0.0.1:9/b', events: ['account.updated'] },
    });
    await send('POST', '/api/v1/webhooks', {
      auth: A,
      body: { url: 'http://127.0.0.1:9/c', events: ['account.updated'] },
    });
    await send('GET', '/api/v1/webhooks?per_page=1', { auth: A });
    await send('GET', webhookPath, { auth: A });
    await send('PATCH', webhookPath, { auth: A, body: { description: 'tour 2', events: ['api_token.deleted'] } });
    await send('PATCH', webhookPath, { auth: A, body: { description: null }, type: 'application/merge-patch+json' });
    await send('POST', `${webhookPath}/rotate-secret`, { auth: A });
    await send('POST', `${webhookPath}/test`, { auth: A });
    await send('GET', `${webhookPath}/deliveries?per_page=1`, { auth: A });
    await send('PATCH', webhookPath, { auth: A, body: { enabled: false } });
    await send('POST', `${webhookPath}/test`, { auth: A });
    await send('DELETE', webhookPath, { auth: A });

    // Forward auth: each method, the scope form and the rule table's (Envoy's path form).
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      await send(method, '/api/v1/auth/check?scope=apps:read', { auth: A });
      await send(method, '/api/v1/auth/check?scope=apps:read', { auth: narrow.secret });
      await send(method, '/api/v1/auth/check?scope=audit-events:read', { auth: narrow.secret });
      await send(method, '/api/v1/auth/check/apps', { auth: A });
      await send(method, '/api/v1/auth/check/elsewhere', { auth: A });
    }

    // Secret scanning: GitHub's signed reports (the signature is over the exact bytes, which
    // Prism passes on as they are: compact JSON, parsed and written again the same).
    const signed = (raw: string, type = 'application/json') => {
      const { 'content-type': _type, ...signature } = signedHeaders(key, raw);
      return send('POST', LEAKS_PATH, { raw, type, headers: signature });
    };
    const leaked = await mintToken(app, ['apps:read'], 'leaked');
    await signed(JSON.stringify([{ token: leaked.secret, type: 'infracat_api_token', source: 'content' }]));
    await signed(JSON.stringify([{ type: 'infracat_api_token' }]));
    await signed('x', 'text/plain');
    await signed(JSON.stringify([{ token: 'x'.repeat(TOO_LARGE), type: 'infracat_api_token' }]));
    // Signed access tokens: the keys and the metadata (and their revalidation), the token exchange.
    for (const url of ['/.well-known/jwks.json', '/.well-known/oauth-authorization-server']) {
      const res = await send('GET', url);
      await send('GET', url, { headers: { 'if-none-match': res.headers.get('etag')! } });
    }
    const FORM = 'application/x-www-form-urlencoded';
    const exchangeForm = (params: Record<string, string>) =>
      new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        ...params,
      }).toString();
    await send('POST', '/api/v1/oauth/token', {
      raw: exchangeForm({ subject_token: A, scope: 'apps:read', audience: 'https://apps.example.com' }),
      type: FORM,
    });
    await send('POST', '/api/v1/oauth/token', {
      raw: exchangeForm({ subject_token: narrow.secret, scope: 'apps:write' }),
      type: FORM,
    });
    await send('POST', '/api/v1/oauth/token', { raw: exchangeForm({ grant_type: 'password' }), type: FORM });
    await send('POST', '/api/v1/oauth/token', { raw: 'x', type: 'text/plain' });
    await send('POST', '/api/v1/oauth/token', { raw: exchangeForm({ pad: 'x'.repeat(TOO_LARGE) }), type: FORM });

    // Catalogs: lists with filters, items, revalidation.
    for (const [kind, slug] of [
      ['images', 'ubuntu-24-04'],
      ['plans', 's-1vcpu-1gb'],
      ['regions', 'nyc3'],
    ] as const) {
      const list = await send('GET', `/api/v1/${kind}`);
      const etag = list.headers.get('etag')!;
      await send('GET', `/api/v1/${kind}`, { headers: { 'if-none-match': etag } });
      await send('GET', `/api/v1/${kind}/${slug}`, { auth: A });
      await send('GET', `/api/v1/${kind}/${slug}`, { headers: { 'if-none-match': etag } });
    }
    await send('GET', '/api/v1/plans?min_vcpus=1&min_memory_mb=1024&max_price_monthly=24.50&type=general');
    await send('GET', '/api/v1/regions?available=true&feature=ipv6');
    await send('GET', '/api/v1/images?distribution=ubuntu&region=nyc3');

    // Catalog management: read, apply, diff, history; preconditions.
    const current = await send('GET', '/api/v1/catalog', { auth: A });
    const etag = current.headers.get('etag')!;
    const document = (await current.json()) as { plans: { price_monthly: number }[]; regions: unknown[] };
    await send('GET', '/api/v1/catalog', { auth: A, headers: { 'if-none-match': etag } });
    const changed = {
      ...document,
      plans: document.plans.map((p, i) => (i === 0 ? { ...p, price_monthly: 19.99 } : p)),
    };
    await send('POST', '/api/v1/catalog/diff', { auth: A, body: changed });
    await send('PUT', '/api/v1/catalog', { auth: A, body: changed });
    await send('PUT', '/api/v1/catalog', { auth: A, body: changed, headers: { 'if-match': '"999"' } });
    await send('PUT', '/api/v1/catalog', {
      auth: A,
      body: { ...changed, regions: changed.regions.slice(0, -1) },
      headers: { 'if-match': etag },
    });
    await send('PUT', '/api/v1/catalog', { auth: A, body: changed, headers: { 'if-match': etag } });
    await send('GET', '/api/v1/catalog/revisions?per_page=1', { auth: A });

    // The client errors every operation documents, provoked the same way for each.
    for (const [operation, op] of operations) {
      const [method, path] = operation.split(' ') as [string, string];
      const M = method.toUpperCase();
      const statuses = Object.keys(op.responses);
      const url = path.replace('{path}', 'apps').replace(/\{[^}]+\}/g, 'nope');
      const hasBody = op.requestBody !== undefined;
      const body = hasBody ? {} : undefined;
      await send(M, `${url}?access_token=x`, { auth: A, body });
      // The check reads its scopes from `scope` (without, the gateway's headers, which are missing: 400).
      const checked = path === '/api/v1/auth/check' ? `${url}?scope=apps:read` : url;
      if (statuses.includes('401')) await send(M, checked, { auth: 'icat_not_a_token', body });
      if (statuses.includes('403')) await send(M, url, { auth: narrow.secret, body });
      if (statuses.includes('404')) await send(M, url, { auth: A, body });
      // A body of another type, a compressed one (415, naming the coding it takes), one too large, one unknown.
      if (hasBody) {
        await send(M, url, { auth: A, raw: 'x', type: 'text/plain' });
        await send(M, url, { auth: A, body: {}, headers: { 'content-encoding': 'gzip' } });
        await send(M, url, { auth: A, raw: JSON.stringify({ name: 'x'.repeat(TOO_LARGE) }) });
        await send(M, url, { auth: A, body: { unknown: 1 } });
      }
    }
    // Gone: a plan past its sunset, through the catalog's own document.
    const sunset = <T>(entries: T[]): T[] =>
      entries.map((e, i) =>
        i === 0 ? { ...e, deprecated_at: '1999-01-01T00:00:00Z', sunset_at: '2000-01-01T00:00:00Z' } : e,
      );
    const whole = document as unknown as Record<'images' | 'plans' | 'regions', { slug: string }[]>;
    const past = {
      ...document,
      images: sunset(whole.images),
      plans: sunset(whole.plans),
      regions: sunset(whole.regions),
    };
    const live = (await send('GET', '/api/v1/catalog', { auth: A })).headers.get('etag')!;
    await send('PUT', '/api/v1/catalog', { auth: A, body: past, headers: { 'if-match': live } });
    for (const kind of ['images', 'plans', 'regions'] as const)
      await send('GET', `/api/v1/${kind}/${whole[kind][0]!.slug}`);

    // 500: a storage fault. The tables are renamed away by another connection to the file (one
    // transaction): every statement on them fails (SQLITE_ERROR, no such table), which the
    // service answers 500; a token's verification meets it too, once its lookup goes to storage.
    /** Renames every table of the database by `to` in one transaction. */
    const renameTables = (to: (name: string) => string) => {
      const db = openDatabase((config.database as { path: string }).path);
      try {
        const tables = db
          .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
          .all() as { name: string }[];
        db.exec(
          `BEGIN; ${tables.map(({ name }) => `ALTER TABLE "${name}" RENAME TO "${to(name)}";`).join(' ')} COMMIT;`,
        );
      } finally {
        db.close();
      }
    };
    renameTables((name) => `${name}_away`);
    await reach(500, (success) => [success, as(success, unknownSecret())]);
    const resyncs = app.changeFeed.heard.resync;
    renameTables((name) => name.replace(/_away$/, ''));
    // The rename back is heard (a resync drops the verification cache) before the tokens are cached again.
    await until(() => app.changeFeed.heard.resync > resyncs, 'the change to be heard');

    // 429, first part: a token's budget spent while storage still answers (verified once, it
    // stays verified in memory: the last part finds it over its limit with storage gone).
    const limited = await mintToken(app, app.infracat.tokens.service.registry.names(), 'limited');
    await spend(() => app.inject({ url: '/api/v1/api-tokens/current', headers: limited.auth }));
    await app.inject({ url: '/api/v1/api-tokens/current', headers: all.auth });

    // 503: storage gone (the store closed under the app), then the app stopping.
    await store.close();
    await reach(503, (success) => [success, as(success, unknownSecret())]);

    // 429, the rest: the address's anonymous budget and its failed authentications spent too.
    await spend(() => app.inject({ url: '/api/v1/scopes' }));
    await spend(() =>
      app.inject({ url: '/api/v1/api-tokens/current', headers: { authorization: 'Bearer icat_not_a_token' } }),
    );
    await reach(429, (success) => [
      success?.auth === undefined ? success : as(success, limited.secret),
      as(success, 'icat_not_a_token'),
    ]);
    // The token exchange carries its token in the body: the limited token, over its budget.
    await send('POST', '/api/v1/oauth/token', { raw: exchangeForm({ subject_token: limited.secret }), type: FORM });

    // The stop: from its start on, every request the app still receives is refused (as one is
    // that comes on a kept-alive connection whose previous request was in flight when the stop
    // began). The tour's preClose hook holds the stop at its start, the server still listening.
    const stopped = app.close();
    await until(() => closing, 'the stop to begin');
    await reach(503, (success) => [success], true);
    letGo();
    await stopped;

    /**
     * Spends a budget: sends until refused with 429. A window that ends within the tour (the
     * address's windows end at a fixed time of day) is waited out, and the next one spent.
     */
    async function spend(request: () => Promise<{ statusCode: number; headers: Record<string, unknown> }>) {
      for (let i = 0; i < 2500; i++) {
        const res = await request();
        if (res.statusCode !== 429) continue;
        const wait = Number(res.headers['retry-after']);
        if (wait > 120) return;
        await sleep((wait + 1) * 1000);
      }
      assert.fail('the budget was not spent');
    }

    // The covered pairs, for the record.
    const covered = [...operations].map(([operation, op]) => {
      const statuses = Object.keys(op.responses).filter((s) => reached.has(`${operation} ${s}`));
      return `${operation}: ${statuses.join(' ')}`;
    });
    t.diagnostic(`covered (operation: statuses):\n${covered.join('\n')}`);

    await t.test('Prism finds every answer as the document describes it', () =>
      assert.deepEqual(violations, [], 'Prism found answers the document does not describe'),
    );
    await t.test('the tour reaches every documented status of every operation', () => {
      const unreached = [...operations].flatMap(([operation, op]) =>
        Object.keys(op.responses)
          .map((status) => `${operation} ${status}`)
          .filter((pair) => !reached.has(pair)),
      );
      assert.deepEqual(unreached, [], 'documented statuses the tour did not reach');
    });
    await t.test('every header an answer carried is documented for its operation and status', () => {
      const undocumented = [...headersSent].flatMap(([pair, names]) => {
        const [method, path, status] = pair.split(' ') as [string, string, string];
        const documented = new Set(
          Object.keys(doc.paths[path]![method]!.responses[status]?.headers ?? {}).map((h) => h.toLowerCase()),
        );
        return [...names].filter((name) => !documented.has(name)).map((name) => `${pair}: ${name}`);
      });
      assert.deepEqual(undocumented, [], 'headers sent that the document does not give that operation and status');
    });
  });
});
