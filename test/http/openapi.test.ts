// The served OpenAPI document: valid 3.1 (checked by a real validator), complete, and
// describing security and problem responses; the offline /docs page.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ERRORS, type ErrorCode } from '../../src/errors.js';
import { build, mintToken, type Built } from '../helpers/app.js';
import { signingKey, writeKeyFile } from '../helpers/secret-scanning.js';
import { tempDir } from '../helpers/sqlite.js';

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<
      string,
      {
        operationId?: string;
        security?: unknown[];
        responses: Record<string, { content?: Record<string, { schema: unknown }>; headers?: Record<string, unknown> }>;
      }
    >
  >;
  components: {
    securitySchemes: Record<string, { type: string; scheme: string }>;
    schemas: Record<string, unknown>;
    headers: Record<string, { description?: string; required?: boolean; schema: Record<string, unknown> }>;
  };
};

/** A response's header `name`, its reference to components.headers followed. */
function headerOf(doc: Doc, response: { headers?: Record<string, unknown> }, name: string) {
  const ref = (response.headers?.[name] as { $ref?: string } | undefined)?.$ref;
  return ref === undefined ? undefined : doc.components.headers[ref.replace('#/components/headers/', '')];
}

const EXPECTED: [string, string][] = [
  ['post', '/api/v1/api-tokens'],
  ['get', '/api/v1/api-tokens'],
  ['get', '/api/v1/api-tokens/current'],
  ['get', '/api/v1/api-tokens/{id}'],
  ['delete', '/api/v1/api-tokens/{id}'],
  ['patch', '/api/v1/api-tokens/{id}'],
  ['post', '/api/v1/api-tokens/{id}/rotate'],
  ['post', '/api/v1/api-tokens/introspect'],
  ['get', '/api/v1/scopes'],
  ['get', '/api/v1/auth/check'],
  ['get', '/api/v1/images'],
  ['get', '/api/v1/images/{slug}'],
  ['get', '/api/v1/plans'],
  ['get', '/api/v1/plans/{slug}'],
  ['get', '/api/v1/regions'],
  ['get', '/api/v1/regions/{slug}'],
  ['get', '/healthz'],
  ['get', '/readyz'],
];

describe('OpenAPI document', () => {
  it('is served at /api/v1/openapi.json and is a valid OpenAPI 3.1 document', async (t) => {
    const { app } = await build(t);
    const res = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json<Doc>();
    assert.equal(doc.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    assert.equal(validator.version, '3.1');
  });

  it('documents every route, each with a unique operationId', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    for (const [method, path] of EXPECTED) assert.ok(documented.includes(`${method} ${path}`), `${method} ${path}`);
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.every((id) => typeof id === 'string' && id.length > 0));
    assert.ok(!documented.some((d) => d.includes('/docs') || d.includes('openapi.json') || d.includes('/metrics')));
  });

  it('declares the bearer scheme and which operations need it', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    assert.deepEqual(
      { type: doc.components.securitySchemes.bearer!.type, scheme: doc.components.securitySchemes.bearer!.scheme },
      { type: 'http', scheme: 'bearer' },
    );
    assert.deepEqual(doc.paths['/api/v1/api-tokens']!.post!.security, [{ bearer: [] }]);
    assert.deepEqual(doc.paths['/api/v1/plans']!.get!.security, [{}, { bearer: [] }], 'catalogs: anonymous or bearer');
    assert.deepEqual(doc.paths['/api/v1/scopes']!.get!.security, []);
    const tokenMode = await build(t, { env: { CATALOG_ACCESS: 'token' } });
    const doc2 = (await tokenMode.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    assert.deepEqual(doc2.paths['/api/v1/plans']!.get!.security, [{ bearer: [] }]);
  });

  it('describes success and problem+json error responses, with headers', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    const create = doc.paths['/api/v1/api-tokens']!.post!.responses;
    for (const status of ['201', '400', '401', '403', '409', '413', '415', '422', '429', '500', '503'])
      assert.ok(create[status], `POST /api-tokens ${status}`);
    assert.deepEqual(create['422']!.content!['application/problem+json']!.schema, {
      $ref: '#/components/schemas/Problem',
    });
    assert.ok(headerOf(doc, create['401']!, 'WWW-Authenticate'));
    assert.ok(headerOf(doc, create['429']!, 'Retry-After') && headerOf(doc, create['429']!, 'RateLimit'));
    assert.ok(doc.components.schemas.Problem);
    const del = doc.paths['/api/v1/api-tokens/{id}']!.delete!.responses;
    assert.ok(del['204'] && del['404']);
    const plans = doc.paths['/api/v1/plans']!.get!.responses;
    assert.ok(plans['200'] && plans['304'] && plans['400']);
    assert.ok(!plans['403'], 'public catalogs never answer 403');
  });

  it('refers every response header to a named component with a plain schema', async (t) => {
    const { app } = await build(t, { env: { CORS_ORIGINS: 'https://console.example' } });
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    const used = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses)) {
          for (const [name, header] of Object.entries(response.headers ?? {})) {
            const ref = (header as { $ref?: string }).$ref;
            assert.match(String(ref), /^#\/components\/headers\/\w+$/, `${method} ${path} ${status} ${name}`);
            used.add(ref!.split('/').pop()!);
          }
          // Every answer names its request and carries the security headers.
          for (const name of ['X-Request-Id', 'X-Content-Type-Options', 'Content-Security-Policy'])
            assert.ok(headerOf(doc, response, name), `${method} ${path} ${status} ${name}`);
        }
      }
    }
    assert.deepEqual(new Set(Object.keys(doc.components.headers)), used, 'every component is used');
    for (const [name, header] of Object.entries(doc.components.headers)) {
      assert.ok(header.description, name);
      assert.ok(['string', 'integer'].includes(String(header.schema.type)), name);
      assert.deepEqual(Object.keys(header.schema), ['type'], `${name}: a plain schema, no internal marker`);
    }
    // Required where every answer given it carries it, not where only some do.
    assert.equal(doc.components.headers.RequestId!.required, true);
    assert.equal(doc.components.headers.ContentSecurityPolicy!.required, true);
    assert.equal(doc.components.headers.NextPage!.required, undefined);
    assert.equal(doc.components.headers.NoStore!.required, undefined);
    assert.ok(headerOf(doc, doc.paths['/api/v1/plans']!.get!.responses['200']!, 'Vary'), 'CORS: Vary: Origin');
    assert.ok(!headerOf(doc, doc.paths['/api/v1/auth/check']!.get!.responses['200']!, 'Vary'), 'no CORS on the check');
  });

  it('refers every JSON success body to a named component (or a list of one), never an inline shape', async (t) => {
    // Every optional endpoint on, so that each of their answers is checked too.
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const { app } = await build(t, {
      env: { SECRET_SCANNING_KEYS_FILE: writeKeyFile(join(tmp.dir, 'keys.json'), [signingKey()]) },
    });
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    const named = (schema: unknown): boolean => {
      const ref = (schema as { $ref?: unknown }).$ref;
      return typeof ref === 'string' && ref.replace('#/components/schemas/', '') in doc.components.schemas;
    };
    const seen = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses)) {
          const schema = response.content?.['application/json']?.schema as { type?: string; items?: unknown };
          if (!status.startsWith('2') || schema === undefined) continue;
          const list = schema.type === 'array' && schema.items !== undefined && named(schema.items);
          assert.ok(named(schema) || list, `${method} ${path} ${status}: ${JSON.stringify(schema).slice(0, 120)}`);
          seen.add(`${method} ${path}`);
        }
      }
    }
    assert.ok(seen.has('post /api/v1/api-tokens/{id}/rotate') && seen.has('get /api/v1/api-tokens'));
    // Both rotations answer the one declared shape.
    for (const path of ['/api/v1/api-tokens/{id}/rotate', '/api/v1/accounts/{id}/api-tokens/{token_id}/rotate'])
      assert.deepEqual(doc.paths[path]!.post!.responses['200']!.content!['application/json']!.schema, {
        $ref: '#/components/schemas/ApiTokenRotated',
      });
  });

  it('gives every error response an example of its own status: its problem, or an OAuth error it names', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    // Each literal of the union, as @fastify/swagger writes it (a one-value enum).
    const oauthErrors = (
      doc.components.schemas.OAuthError as { properties: { error: { anyOf: { enum: string[] }[] } } }
    ).properties.error.anyOf.flatMap((e) => e.enum);
    assert.ok(oauthErrors.includes('invalid_client') && oauthErrors.includes('temporarily_unavailable'));
    const examplesOf = (media: { example?: unknown; examples?: Record<string, { value: unknown }> }): unknown[] =>
      media.example !== undefined ? [media.example] : Object.values(media.examples ?? {}).map((e) => e.value);
    const checked = { problem: 0, oauth: 0 };
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const where = `${method} ${path} ${status}`;
          const content = Object.entries(response.content ?? {});
          assert.equal(content.length, 1, `${where}: one media type`);
          const [type, media] = content[0]!;
          const examples = examplesOf(media as Parameters<typeof examplesOf>[0]);
          assert.ok(examples.length > 0, `${where}: an example`);
          if (type === 'application/problem+json') {
            for (const example of examples) {
              const { status: said, code } = example as { status: number; code: ErrorCode };
              assert.equal(said, Number(status), where);
              assert.equal(ERRORS[code]?.status, Number(status), `${where}: ${code}`);
            }
            checked.problem += 1;
            continue;
          }
          // The token exchange's own errors (RFC 6749 section 5.2): one example of each error
          // the description names for this status, and none of another.
          assert.equal(path, '/api/v1/oauth/token', `${where}: ${type}`);
          const description = String((response as { description?: string }).description);
          const named = [...description.matchAll(/`(\w+)`/g)].map((m) => m[1]!).filter((e) => oauthErrors.includes(e));
          const errors = examples.map((example) => {
            const { error, error_description, ...rest } = example as { error: string; error_description: string };
            assert.deepEqual(rest, {}, `${where}: only error and error_description`);
            assert.ok(error_description.length > 0, `${where}: ${error} has a description`);
            return error;
          });
          assert.deepEqual(errors.sort(), [...new Set(named)].sort(), where);
          checked.oauth += 1;
        }
      }
    }
    assert.ok(checked.problem > 100, 'the problem responses were checked');
    assert.equal(checked.oauth, 7, 'the token exchange: 400, 401, 413, 415, 429, 500, 503');
  });

  it("the token exchange's error examples are the bodies it sends", async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    const { secret } = await mintToken(app, ['apps:read']);
    const form = (params: Record<string, string>) =>
      new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        ...params,
      }).toString();
    const formType = { 'content-type': 'application/x-www-form-urlencoded' };
    // A request that draws each example (429, 500 and 503 need a spent budget or a failing store:
    // the Prism tour reaches them).
    const draws: Record<string, { headers?: Record<string, string>; payload: string }> = {
      '400 invalid_request': { payload: form({}) },
      '400 invalid_scope': { payload: form({ subject_token: secret, scope: 'apps:write' }) },
      '400 invalid_target': { payload: form({ subject_token: secret, resource: 'https://apps.example.com' }) },
      '400 unsupported_grant_type': { payload: form({ grant_type: 'password' }) },
      '401 invalid_client': { headers: { authorization: 'Basic eDp5' }, payload: form({ subject_token: secret }) },
      '413 invalid_request': { payload: form({ pad: 'x'.repeat(20 * 1024) }) },
      '415 invalid_request': { headers: { 'content-type': 'text/plain' }, payload: 'x' },
    };
    const responses = doc.paths['/api/v1/oauth/token']!.post!.responses;
    for (const [key, { headers = {}, payload }] of Object.entries(draws)) {
      const [status, error] = key.split(' ') as [string, string];
      const media = responses[status]!.content!['application/json'] as {
        example?: { error: string };
        examples?: Record<string, { value: { error: string } }>;
      };
      const example = media.example ?? media.examples?.[error]?.value;
      assert.equal(example?.error, error, key);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/oauth/token',
        headers: { ...formType, ...headers },
        payload,
      });
      assert.equal(res.statusCode, Number(status), key);
      assert.deepEqual(res.json(), example, key);
    }
  });

  it('labels every response (never Swagger UI\'s "Default Response") and states the real limits', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses)) {
          const description = (response as { description?: string }).description;
          assert.ok(
            description !== undefined && description !== '' && description !== 'Default Response',
            `${method} ${path} ${status}`,
          );
        }
      }
    }
    assert.match(
      (doc.paths['/api/v1/api-tokens']!.post!.responses['201'] as { description: string }).description,
      /^Created/,
    );
    const body = (
      doc.paths['/api/v1/api-tokens']!.post! as unknown as {
        requestBody: { content: Record<string, { schema: { $ref: string } }> };
      }
    ).requestBody;
    assert.equal(body.content['application/json']!.schema.$ref, '#/components/schemas/ApiTokenCreate');
    const create = doc.components.schemas.ApiTokenCreate as { properties: Record<string, { maxLength?: number }> };
    assert.equal(create.properties.name!.maxLength, 100, 'the documented limit is the enforced one');
  });

  it('the example request bodies are real: sent as they are, they succeed', async (t) => {
    const { app } = await build(t);
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
    const admin = await mintToken(app, ['api-tokens:write', 'apps:write']);
    // @fastify/swagger turns the body schema's `examples` into the media type's `example`.
    const create = (
      doc.paths['/api/v1/api-tokens']!.post! as unknown as {
        requestBody: { content: Record<string, { example?: unknown }> };
      }
    ).requestBody;
    const example = create.content['application/json']!.example;
    assert.ok(example !== undefined, 'POST /api-tokens has a whole-body example');
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: admin.auth,
      payload: example as object,
    });
    assert.equal(res.statusCode, 201, res.body);
    // Every operation with a body has one.
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const rb = (op as { requestBody?: { content: Record<string, { example?: unknown }> } }).requestBody;
        if (rb !== undefined)
          assert.ok(
            Object.values(rb.content).every((c) => c.example !== undefined),
            `${method} ${path} has an example body`,
          );
      }
    }
  });

  it('carries examples', async (t) => {
    const { app } = await build(t);
    const text = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).body;
    for (const example of [
      'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H',
      's-1vcpu-1gb',
      'ubuntu-24-04',
      'nyc3',
      'urn:problem-type:infracat:validation-failed',
    ]) {
      assert.ok(text.includes(example), example);
    }
  });
});

describe('OpenAPI prose states what the server does', () => {
  const get = async (app: Built['app']) =>
    (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<Doc>();
  const described = (doc: Doc, name: string) =>
    headerOf(doc, doc.paths['/api/v1/api-tokens']!.post!.responses['429']!, name)?.description ?? '';

  it('the RateLimit policies documented are those the server sends, with their quotas and window', async (t) => {
    const { app } = await build(t, { env: { RATE_LIMIT: '7', RATE_LIMIT_ANONYMOUS: '5', RATE_LIMIT_WINDOW_S: '30' } });
    const tok = await mintToken(app, ['api-tokens:read']);
    const sent = new Set<string>();
    for (const res of [
      await app.inject({ url: '/api/v1/plans' }),
      await app.inject({ url: '/api/v1/api-tokens', headers: tok.auth }),
    ]) {
      for (const entry of String(res.headers['ratelimit-policy']).split(', ')) sent.add(entry);
    }
    const doc = await get(app);
    const documented = new Set(
      [...described(doc, 'RateLimit-Policy').matchAll(/"[^"]+";q=\d+;w=\d+/g)].map((m) => m[0]),
    );
    assert.deepEqual(documented, sent);
    assert.deepEqual(sent, new Set(['"anonymous";q=5;w=30', '"token";q=7;w=30', '"account";q=70;w=30']));
    const names = new Set([...described(doc, 'RateLimit').matchAll(/"([^"]+)";r=\d+;t=\d+/g)].map((m) => m[1]));
    assert.deepEqual(names, new Set(['anonymous', 'token', 'account']));
    // A policy that is off is not documented.
    const tokenOnly = await build(t, { env: { RATE_LIMIT_ANONYMOUS: '0' } });
    assert.equal((await tokenOnly.app.inject({ url: '/api/v1/plans' })).headers['ratelimit-policy'], undefined);
    const doc2 = await get(tokenOnly.app);
    assert.doesNotMatch(described(doc2, 'RateLimit-Policy'), /anonymous/);
    assert.match(described(doc2, 'RateLimit-Policy'), /"token";q=600;w=60/);
  });

  it('the token format documented carries the configured TOKEN_PREFIX and the real length', async (t) => {
    const { app } = await build(t, { env: { TOKEN_PREFIX: 'acme' } });
    const format = (await get(app)).components.securitySchemes.bearer as unknown as { bearerFormat: string };
    const m = /^acme_<(\d+) base62 characters><(\d+)-character base62 CRC32>$/.exec(format.bearerFormat);
    assert.ok(m, format.bearerFormat);
    const { secret } = await mintToken(app, ['apps:read']);
    assert.equal(secret.length, 'acme_'.length + Number(m[1]) + Number(m[2]), secret.replace(/_.*/, '_...'));
    assert.ok(secret.startsWith('acme_'));
  });

  it('the body limit documented is the one enforced', async (t) => {
    const { app } = await build(t);
    const tok = await mintToken(app, ['api-tokens:write']);
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: { ...tok.auth, 'content-type': 'application/json' },
      payload: `"${'x'.repeat(64 * 1024)}"`,
    });
    assert.equal(res.statusCode, 413);
    const enforced = Number(/limited to (\d+) bytes/.exec(res.json<{ detail: string }>().detail)?.[1]);
    const doc = await get(app);
    const text = String(
      (doc.paths['/api/v1/api-tokens']!.post!.responses['413'] as { description?: string }).description,
    );
    const m = /over (\d+) (KiB|bytes)/.exec(text);
    assert.ok(m, text);
    assert.equal(Number(m[1]) * (m[2] === 'KiB' ? 1024 : 1), enforced);
  });

  it('the WWW-Authenticate challenge documented is the one sent', async (t) => {
    const { app } = await build(t);
    const sent = String((await app.inject({ url: '/api/v1/api-tokens' })).headers['www-authenticate']);
    const doc = await get(app);
    const text = String(
      headerOf(doc, doc.paths['/api/v1/api-tokens']!.get!.responses['401']!, 'WWW-Authenticate')?.description,
    );
    assert.ok(text.startsWith(`\`${sent}\``), `${text} / ${sent}`);
  });

  it('a request body is documented as required exactly where a request without one is refused', async (t) => {
    const { app } = await build(t);
    const doc = await get(app);
    const all = await mintToken(app, app.infracat.tokens.service.registry.names());
    const optional: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const body = (op as { requestBody?: { required?: boolean } }).requestBody;
        if (body === undefined) continue;
        assert.ok(!JSON.stringify(op).includes('x-infracat'), 'no internal marker left in the document');
        // Unknown ids: past validation, the handler answers 404; without it, the missing body is 422.
        const url = path.replace(/\{[^}]+\}/g, 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H');
        // The token exchange takes no Authorization and refuses in RFC 6749's form: 400 invalid_request.
        const oauth = path === '/api/v1/oauth/token';
        const res = await app.inject({ method: method.toUpperCase() as 'POST', url, headers: oauth ? {} : all.auth });
        const refusal = oauth ? 400 : 422;
        assert.equal(res.statusCode === refusal, body.required === true, `${method} ${path}: ${res.statusCode}`);
        if (oauth) assert.equal(res.json<{ error: string }>().error, 'invalid_request');
        if (body.required !== true) optional.push(`${method} ${path}`);
      }
    }
    assert.deepEqual(optional.sort(), [
      'post /api/v1/accounts/{id}/api-tokens/{token_id}/rotate',
      'post /api/v1/api-tokens/{id}/rotate',
    ]);
  });
});

describe('/docs', () => {
  it('serves an interactive reference from local assets only, under a strict CSP', async (t) => {
    const { app } = await build(t);
    const page = await app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.ok(!/https?:/.test(csp), 'no remote origins in the policy');
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(assets.length >= 3);
    for (const asset of assets) {
      assert.ok(!/^(https?:)?\/\//.test(asset), `remote asset ${asset}`);
      const res = await app.inject({ method: 'GET', url: new URL(asset, 'http://x/docs/').pathname });
      assert.equal(res.statusCode, 200, asset);
    }
    const init = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    assert.equal(init.statusCode, 200);
    const code = init.body.replace(/^\s*\/\/.*$/gm, ''); // comments may cite URLs
    assert.ok(!/https?:\/\//.test(code), 'the initializer fetches nothing remote');
    assert.match(code, /url: "\/api\/v1\/openapi\.json"/, 'the page loads the document clients are told about');
    const json = await app.inject({ method: 'GET', url: '/docs/json' });
    assert.equal(json.json<{ openapi: string }>().openapi, '3.1.0');
  });

  it('/docs loads lazily and still answers unknown files and methods with problems', async (t) => {
    const { app } = await build(t);
    const missing = await app.inject({ method: 'GET', url: '/docs/static/no-such-file.js' });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(missing.json<{ code: string }>().code, 'NOT_FOUND');
    const post = await app.inject({ method: 'POST', url: '/docs/static/index.css', payload: {} });
    assert.equal(post.statusCode, 405);
    assert.equal(post.json<{ code: string }>().code, 'METHOD_NOT_ALLOWED');
    // Still served after those.
    assert.equal((await app.inject({ method: 'GET', url: '/docs/static/index.css' })).statusCode, 200);
  });
});
