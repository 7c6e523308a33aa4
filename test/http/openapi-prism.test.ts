// Prism (Stoplight's validation proxy, run as `prism proxy --errors`) stands between a
// client and a real listening server and checks every answer against the served
// document: status, headers, media type and body. A tour drives every operation through
// it, and every documented status it can provoke from outside; any violation fails.
// Prism's own request validation is off (--validate-request=false): the tour sends wrong
// requests on purpose, to reach the error answers, and they must reach the server. Two
// kinds never do, whatever the flag: a request without the token an operation requires
// (Prism answers 401 itself) and a body that is not JSON under a JSON Content-Type (Prism
// parses it first, and answers 400): those statuses are reached by other requests (an
// unknown token; a credential in the query string), and test/http/errors.test.ts checks
// the bodies of the others against the same Problem schema.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { build, mintToken } from '../helpers/app.js';
import { tempDir } from '../helpers/sqlite.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { until } from '../helpers/until.js';

type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };

// Documented, not provoked by this tour, and why.
const NOT_PROVOKED: Record<string, string> = {
  500: 'an unexpected server fault: nothing a client sends provokes it (the Problem schema is checked by the others)',
  503: 'storage down or shutting down: test/reliability/outage.test.ts provokes it; the same Problem schema',
  429: 'over the rate limit: test/http/rate-limit.test.ts; the same Problem schema and headers as the 2xx',
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
  it('finds no violation in any answer of the tour, which reaches every documented status', async (t) => {
    // A clock the tour moves, to let a token expire; failed authentications unlimited (the
    // tour fails many on purpose); few live tokens, to reach the cap.
    let offset = 0;
    const { app } = await build(t, {
      env: {
        AUTH_CHECK_GATEWAY: 'envoy',
        LOG_LEVEL: 'silent',
        AUTH_FAILURE_LIMIT: '1000000',
        TOKEN_MAX_LIVE: '6',
        CATALOG_BODY_LIMIT_BYTES: String(1024 * 1024),
      },
      now: () => Date.now() + offset,
    });
    const upstream = await app.listen({ port: 0, host: '127.0.0.1' });
    const doc = (await app.inject({ url: '/api/v1/openapi.json' })).json<Doc>();
    const tmp = tempDir();
    t.after(() => tmp.remove());
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
    await until(() => log.includes('Prism is listening'), `prism to listen:\n${log}`, 60_000);
    const base = `http://127.0.0.1:${port}`;

    // Each documented path as a pattern; literal paths first (`/api-tokens/current` before `/{id}`).
    const templates = Object.keys(doc.paths)
      .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))
      .map((p) => ({ p, re: new RegExp(`^${p.replace(/\{path\}/, '.+').replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
    const reached = new Set<string>();
    const violations: string[] = [];

    async function send(
      method: string,
      url: string,
      options: { auth?: string; headers?: Record<string, string>; body?: unknown; raw?: string; type?: string } = {},
    ): Promise<Response> {
      const headers: Record<string, string> = { ...options.headers };
      if (options.auth !== undefined) headers.authorization = `Bearer ${options.auth}`;
      let body: string | undefined;
      if (options.raw !== undefined) body = options.raw;
      else if (options.body !== undefined) body = JSON.stringify(options.body);
      if (body !== undefined) headers['content-type'] = options.type ?? 'application/json';
      const res = await fetch(`${base}${url}`, { method, headers, body });
      const path = url.split('?')[0]!;
      const template = templates.find(({ re }) => re.test(path))?.p;
      assert.ok(template !== undefined, `${method} ${url} is no documented path`);
      const found = res.headers.get('sl-violations');
      if (found !== null) violations.push(`${method} ${url} ${res.status}: ${found}`);
      // Every answer of the server names its request; Prism's own errors (an answer it could not read) do not.
      else if (res.headers.get('x-request-id') === null)
        violations.push(`${method} ${url} ${res.status}, from Prism: ${await res.clone().text()}`);
      reached.add(`${method.toLowerCase()} ${template} ${res.status}`);
      return res;
    }

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

    // Forward auth: each method, the scope form and the rule table's (Envoy's path form).
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      await send(method, '/api/v1/auth/check?scope=apps:read', { auth: A });
      await send(method, '/api/v1/auth/check?scope=apps:read', { auth: narrow.secret });
      await send(method, '/api/v1/auth/check?scope=audit-events:read', { auth: narrow.secret });
      await send(method, '/api/v1/auth/check/apps', { auth: A });
      await send(method, '/api/v1/auth/check/elsewhere', { auth: A });
    }

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
    await send('POST', '/api/v1/oauth/token', { raw: exchangeForm({ pad: 'x'.repeat(20_000) }), type: FORM });

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

    // The errors every operation documents, provoked the same way for each.
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'head') continue;
        const M = method.toUpperCase();
        const statuses = Object.keys(operation.responses);
        const url = path.replace('{path}', 'apps').replace(/\{[^}]+\}/g, 'nope');
        const hasBody = (operation as { requestBody?: unknown }).requestBody !== undefined;
        const body = hasBody ? {} : undefined;
        await send(M, `${url}?access_token=x`, { auth: A, body });
        // The check reads its scopes from `scope` (without, the gateway's headers, which are missing: 400).
        const checked = path === '/api/v1/auth/check' ? `${url}?scope=apps:read` : url;
        if (statuses.includes('401')) await send(M, checked, { auth: 'icat_not_a_token', body });
        if (statuses.includes('403')) await send(M, url, { auth: narrow.secret, body });
        if (statuses.includes('404')) await send(M, url, { auth: A, body });
        if (hasBody) {
          await send(M, url, { auth: A, raw: 'x', type: 'text/plain' });
          await send(M, url, { auth: A, raw: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }) });
          await send(M, url, { auth: A, body: { unknown: 1 } });
        }
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

    assert.deepEqual(violations, [], 'Prism found answers the document does not describe');
    const unreached: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'head') continue;
        for (const status of Object.keys(operation.responses)) {
          if (!(status in NOT_PROVOKED) && !reached.has(`${method} ${path} ${status}`))
            unreached.push(`${method} ${path} ${status}`);
        }
      }
    }
    assert.deepEqual(unreached, [], 'documented statuses the tour did not reach');
  });
});
