// POST /api/v1/oauth/token, RFC 8693 token exchange, on both backends (PostgreSQL with
// JWT_SIGNING_KEY_FILES): every signed token verified with jose against the served JWKS,
// its claims (RFC 9068), the scopes and audience asked for, every refusal in RFC 6749's
// form, the subject token judged by the one verification (deleted, expired, disabled, not
// yet valid, suspended account, allowed_cidrs) and counted as a use, the rate limit.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { errors as joseErrors } from 'jose';
import type { App } from '../../src/http/types.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { buildSigning, exchange, exchangeOf, verifyJwt } from '../helpers/signing-keys.js';

const JSON_TYPE = 'application/json; charset=utf-8';

interface Issued {
  access_token: string;
  issued_token_type: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

/** Asserts an RFC 6749 section 5.2 error and returns its description. */
function refused(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  error: string,
) {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.headers['content-type'], JSON_TYPE, 'JSON, not a problem');
  assert.equal(res.headers['cache-control'], 'no-store');
  const body = JSON.parse(res.body) as { error: string; error_description: string };
  assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description']);
  assert.equal(body.error, error, body.error_description);
  // RFC 6749 section 5.2: printable ASCII but `"` and `\`.
  assert.match(body.error_description, /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/);
  return body.error_description;
}

for (const backend of backends()) {
  describe(`token exchange on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}, now?: () => number) {
      const { startAdmin, ...built } = await buildSigning(t, backend, env, now);
      return { ...built, admin: await startAdmin() };
    }

    async function create(app: App, auth: Record<string, string>, payload: object, url = '/api/v1/api-tokens') {
      const res = await app.inject({ method: 'POST', url, headers: auth, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: string; token: string }>();
    }

    it(
      'answers a signed access token (RFC 9068) that ' + 'verifies against the JWKS, with the RFC 8693 fields',
      async (t) => {
        const { app } = await setup(t, { JWT_TTL_S: '600' });
        const tok = await mintToken(app, ['apps:read', 'apps:write', 'plans:read'], 'ci');
        const before = Math.floor(Date.now() / 1000);
        const res = await exchange(app, exchangeOf(tok.secret));
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers['content-type'], JSON_TYPE);
        assert.equal(res.headers['cache-control'], 'no-store');
        const body = res.json<Issued>();
        assert.deepEqual(Object.keys(body).sort(), [
          'access_token',
          'expires_in',
          'issued_token_type',
          'scope',
          'token_type',
        ]);
        assert.equal(body.issued_token_type, 'urn:ietf:params:oauth:token-type:jwt');
        assert.equal(body.token_type, 'Bearer');
        assert.equal(body.expires_in, 600);
        assert.equal(body.scope, 'apps:read apps:write plans:read', "absent scope: all of the token's");

        const { payload, protectedHeader } = await verifyJwt(app, body.access_token);
        assert.deepEqual(Object.keys(protectedHeader).sort(), ['alg', 'kid', 'typ']);
        assert.equal(protectedHeader.typ, 'at+jwt');
        assert.equal(protectedHeader.alg, 'ES256');
        assert.equal(payload.iss, 'http://localhost:8080');
        assert.equal(payload.aud, 'http://localhost:8080', 'the issuer when no audience is asked for');
        assert.equal(payload.sub, tok.id);
        assert.equal(payload.client_id, tok.id);
        assert.equal(payload.account_id, OPERATOR_ACCOUNT_ID);
        assert.equal(payload.scope, 'apps:read apps:write plans:read');
        assert.ok(payload.iat! >= before && payload.iat! <= before + 5);
        assert.equal(payload.exp! - payload.iat!, 600);
        assert.match(payload.jti!, /^[A-Za-z0-9_-]{22}$/);
        const again = (await exchange(app, exchangeOf(tok.secret))).json<Issued>();
        assert.notEqual((await verifyJwt(app, again.access_token)).payload.jti, payload.jti, 'a new jti each time');

        // Verified with another issuer or audience, or read as another type, it fails.
        await assert.rejects(
          verifyJwt(app, body.access_token, { issuer: 'https://elsewhere' }),
          joseErrors.JWTClaimValidationFailed,
        );
        await assert.rejects(
          verifyJwt(app, body.access_token, { issuer: 'http://localhost:8080', audience: 'billing' }),
          joseErrors.JWTClaimValidationFailed,
        );
      },
    );

    it(
      "scope: a subset of the subject token's (write " + 'implies read); audience: one or several; JWT_ISSUER',
      async (t) => {
        const { app } = await setup(t, { JWT_ISSUER: 'https://tokens.example.com' });
        const tok = await mintToken(app, ['apps:write', 'plans:read'], 'ci');
        const asked = await exchange(
          app,
          exchangeOf(tok.secret, { scope: 'plans:read apps:read plans:read', audience: 'https://apps.example.com' }),
        );
        assert.equal(asked.statusCode, 200, asked.body);
        const body = asked.json<Issued>();
        assert.equal(body.scope, 'plans:read apps:read', 'as asked, once each; apps:write implies apps:read');
        const { payload } = await verifyJwt(app, body.access_token, {
          issuer: 'https://tokens.example.com',
          audience: 'https://apps.example.com',
        });
        assert.equal(payload.scope, 'plans:read apps:read');
        assert.equal(payload.aud, 'https://apps.example.com');

        const two = await exchange(app, exchangeOf(tok.secret, { audience: ['apps', 'billing', 'apps'] }));
        assert.equal(two.statusCode, 200, two.body);
        const both = await verifyJwt(app, two.json<Issued>().access_token, {
          issuer: 'https://tokens.example.com',
          audience: 'billing',
        });
        assert.deepEqual(both.payload.aud, ['apps', 'billing']);
        // The requested type may be named: a JWT (an access token) either way.
        for (const type of ['urn:ietf:params:oauth:token-type:jwt', 'urn:ietf:params:oauth:token-type:access_token'])
          assert.equal((await exchange(app, exchangeOf(tok.secret, { requested_token_type: type }))).statusCode, 200);
        // Unknown parameters are ignored (RFC 6749 section 3.2).
        assert.equal((await exchange(app, exchangeOf(tok.secret, { client_id: 'whatever' }))).statusCode, 200);
      },
    );

    it('invalid_scope for a scope not held, unknown or empty; the refusal counts against the token', async (t) => {
      const { app } = await setup(t);
      const tok = await mintToken(app, ['apps:read'], 'ci');
      assert.match(
        refused(await exchange(app, exchangeOf(tok.secret, { scope: 'apps:read apps:write' })), 400, 'invalid_scope'),
        /does not hold apps:write/,
      );
      assert.match(
        refused(await exchange(app, exchangeOf(tok.secret, { scope: 'accounts:read' })), 400, 'invalid_scope'),
        /accounts:read/,
      );
      assert.match(
        refused(await exchange(app, exchangeOf(tok.secret, { scope: 'apps:delete' })), 400, 'invalid_scope'),
        /unknown scope apps:delete/,
      );
      assert.match(
        refused(await exchange(app, exchangeOf(tok.secret, { scope: '  ' })), 400, 'invalid_scope'),
        /names no scope/,
      );
      assert.equal(
        app.infracat.tokens.service.verifications.scope,
        2,
        'the two requests of a verified token refused for scope',
      );
    });

    it(
      'refuses a wrong grant, missing, repeated or wrong ' + 'parameters, delegation, resource, client authentication',
      async (t) => {
        const { app } = await setup(t);
        const tok = await mintToken(app, ['apps:read'], 'ci');
        assert.match(
          refused(
            await exchange(app, exchangeOf(tok.secret, { grant_type: 'client_credentials' })),
            400,
            'unsupported_grant_type',
          ),
          /token-exchange/,
        );
        // The grant is judged first: a client of another grant is told that, not what else it lacks.
        refused(await exchange(app, { grant_type: 'authorization_code', code: 'x' }), 400, 'unsupported_grant_type');
        assert.match(
          refused(await exchange(app, { grant_type: exchangeOf('').grant_type }), 400, 'invalid_request'),
          /subject_token is required/,
        );
        const missing = { ...exchangeOf(tok.secret) } as Record<string, string>;
        delete missing.subject_token_type;
        assert.match(refused(await exchange(app, missing), 400, 'invalid_request'), /subject_token_type is required/);
        assert.match(
          refused(await exchange(app, { ...missing, grant_type: '' }), 400, 'unsupported_grant_type'),
          /grant_type/,
        );
        assert.match(
          refused(
            await exchange(
              app,
              exchangeOf(tok.secret, { subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' }),
            ),
            400,
            'invalid_request',
          ),
          /subject_token_type must be/,
        );
        assert.match(
          refused(
            await exchange(
              app,
              exchangeOf(tok.secret, { requested_token_type: 'urn:ietf:params:oauth:token-type:saml2' }),
            ),
            400,
            'invalid_request',
          ),
          /requested_token_type/,
        );
        // Each parameter once (but audience): never silently the last one.
        const twice = { ...exchangeOf(tok.secret), subject_token: [tok.secret, tok.secret] };
        assert.match(refused(await exchange(app, twice), 400, 'invalid_request'), /subject_token must be string/);
        refused(
          await exchange(app, { ...exchangeOf(tok.secret), scope: ['apps:read', 'apps:read'] }),
          400,
          'invalid_request',
        );
        assert.match(
          refused(
            await exchange(
              app,
              exchangeOf(tok.secret, { actor_token: tok.secret, actor_token_type: exchangeOf('').subject_token_type }),
            ),
            400,
            'invalid_request',
          ),
          /delegation/,
        );
        assert.match(
          refused(
            await exchange(app, exchangeOf(tok.secret, { resource: 'https://apps.example.com' })),
            400,
            'invalid_target',
          ),
          /audience/,
        );
        refused(await exchange(app, exchangeOf(tok.secret, { audience: 'with space' })), 400, 'invalid_request');
        refused(
          await exchange(app, exchangeOf(tok.secret, { audience: ['a', 'b', 'c', 'd', 'e', 'f'] })),
          400,
          'invalid_request',
        );
        // The subject token is the credential: a client that authenticates is told so, by its scheme.
        const basic = await exchange(app, exchangeOf(tok.secret), { authorization: 'Basic Y2xpZW50OnNlY3JldA==' });
        assert.match(refused(basic, 401, 'invalid_client'), /no client authentication/);
        assert.equal(basic.headers['www-authenticate'], 'Basic realm="infracat"');
        const bearer = await exchange(app, exchangeOf(tok.secret), tok.auth);
        refused(bearer, 401, 'invalid_client');
        assert.equal(bearer.headers['www-authenticate'], 'Bearer realm="infracat"');
        // Form-encoded UTF-8 only; a query is refused like any unknown parameter of a GET.
        const json = await app.inject({ method: 'POST', url: '/api/v1/oauth/token', payload: exchangeOf(tok.secret) });
        assert.match(refused(json, 415, 'invalid_request'), /x-www-form-urlencoded/);
        const latin1 = await app.inject({
          method: 'POST',
          url: '/api/v1/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded; charset=iso-8859-1' },
          payload: 'grant_type=x',
        });
        refused(latin1, 415, 'invalid_request');
        const big = await exchange(app, exchangeOf(tok.secret, { pad: 'x'.repeat(20_000) }));
        refused(big, 413, 'invalid_request');
        const query = await app.inject({
          method: 'POST',
          url: '/api/v1/oauth/token?access_token=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams(exchangeOf(tok.secret)).toString(),
        });
        refused(query, 400, 'invalid_request');
        assert.equal(
          query.headers['www-authenticate'],
          undefined,
          'no Bearer challenge where Authorization is refused',
        );
        // Never the secret in a description.
        const wrongType = await exchange(app, exchangeOf(`${tok.secret}x`));
        assert.ok(!wrongType.body.includes(tok.secret.slice(5)));
        assert.equal(app.infracat.signed!.signer.signed.exchange, 0, 'nothing signed for any of them');
      },
    );

    it(
      'refuses (invalid_request) an unknown, deleted, expired, ' +
        'disabled, not-yet-valid, suspended or out-of-network subject token',
      async (t) => {
        let offset = 0;
        const { app, admin } = await setup(t, { AUTH_FAILURE_LIMIT: '1000' }, () => Date.now() + offset);
        const describeOf = async (secret: string) =>
          refused(await exchange(app, exchangeOf(secret)), 400, 'invalid_request');

        assert.match(
          await describeOf('icat_4lTzT0rbd6mWl2Ka7dM1yQ5o8kRxJc3H0000aB'),
          /subject_token: the token is malformed/,
        );
        const unknown = await mintToken(app, ['apps:read']);
        await app.inject({ method: 'DELETE', url: `/api/v1/api-tokens/${unknown.id}`, headers: admin.auth });
        assert.match(await describeOf(unknown.secret), /subject_token: the token is not valid \(unknown or deleted\)/);

        const soon = await create(app, admin.auth, {
          name: 'soon',
          scopes: ['apps:read'],
          expires_at: new Date(Date.now() + 60_000).toISOString(),
        });
        assert.equal((await exchange(app, exchangeOf(soon.token))).statusCode, 200);
        offset = 120_000;
        assert.match(await describeOf(soon.token), /expired/);
        offset = 0;

        const off = await create(app, admin.auth, { name: 'off', scopes: ['apps:read'], enabled: false });
        assert.match(await describeOf(off.token), /disabled/);
        const later = await create(app, admin.auth, {
          name: 'later',
          scopes: ['apps:read'],
          not_before: new Date(Date.now() + 3_600_000).toISOString(),
        });
        assert.match(await describeOf(later.token), /not valid yet/);
        const elsewhere = await create(app, admin.auth, {
          name: 'far',
          scopes: ['apps:read'],
          allowed_cidrs: ['192.0.2.0/24'],
        });
        assert.match(await describeOf(elsewhere.token), /may not be used from 127\.0\.0\.1/);
        const local = await create(app, admin.auth, {
          name: 'near',
          scopes: ['apps:read'],
          allowed_cidrs: ['127.0.0.0/8'],
        });
        assert.equal((await exchange(app, exchangeOf(local.token))).statusCode, 200);

        const account = await app.inject({
          method: 'POST',
          url: '/api/v1/accounts',
          headers: admin.auth,
          payload: { name: 'Acme' },
        });
        const accountId = account.json<{ id: string }>().id;
        const customer = await create(
          app,
          admin.auth,
          { name: 'acme', scopes: ['apps:read'] },
          `/api/v1/accounts/${accountId}/api-tokens`,
        );
        const ok = await exchange(app, exchangeOf(customer.token));
        assert.equal(ok.statusCode, 200);
        assert.equal((await verifyJwt(app, ok.json<Issued>().access_token)).payload.account_id, accountId);
        const suspend = await app.inject({
          method: 'PATCH',
          url: `/api/v1/accounts/${accountId}`,
          headers: admin.auth,
          payload: { status: 'suspended' },
        });
        assert.equal(suspend.statusCode, 200, suspend.body);
        assert.match(await describeOf(customer.token), /suspended/);
        assert.equal(app.infracat.signed!.signer.signed.exchange, 3, 'signed only for the valid ones');
      },
    );

    it(
      'counts as a use of the subject token; never ' + "outlives it (its expiry, a previous secret's grace period)",
      async (t) => {
        const { app, admin } = await setup(t, { JWT_TTL_S: '3600' });
        const soon = await create(app, admin.auth, {
          name: 'soon',
          scopes: ['apps:read'],
          expires_at: new Date(Date.now() + 600_000).toISOString(),
        });
        const res = await exchange(app, exchangeOf(soon.token));
        assert.equal(res.statusCode, 200);
        const { payload } = await verifyJwt(app, res.json<Issued>().access_token);
        assert.ok(payload.exp! <= Math.floor((Date.now() + 600_000) / 1000), "capped at the token's expiry");
        assert.ok(res.json<Issued>().expires_in <= 600 && res.json<Issued>().expires_in > 590);
        assert.equal(app.infracat.tokens.lastUsed.pending(soon.id)?.ip, '127.0.0.1', 'a use, from its address');
        await app.infracat.tokens.usage.flush();
        const usage = await app.inject({ url: `/api/v1/api-tokens/${soon.id}/usage`, headers: admin.auth });
        assert.equal(usage.json<{ valid: number }[]>()[0]?.valid, 1);

        // Rotated with a grace period: the previous secret still exchanges, for no longer than the grace.
        const rotate = await app.inject({
          method: 'POST',
          url: `/api/v1/api-tokens/${soon.id}/rotate`,
          headers: admin.auth,
          payload: { grace_period_s: 120 },
        });
        assert.equal(rotate.statusCode, 200, rotate.body);
        const previous = await exchange(app, exchangeOf(soon.token));
        assert.equal(previous.statusCode, 200);
        assert.ok(previous.json<Issued>().expires_in <= 120);
      },
    );

    it(
      'rate limited like every request of the token: 429 ' + 'temporarily_unavailable with Retry-After and RateLimit',
      async (t) => {
        const { app } = await setup(t, { RATE_LIMIT: '2', RATE_LIMIT_ACCOUNT: '0' });
        const tok = await mintToken(app, ['apps:read']);
        for (let i = 0; i < 2; i++) {
          const ok = await exchange(app, exchangeOf(tok.secret));
          assert.equal(ok.statusCode, 200);
          assert.match(String(ok.headers.ratelimit), /^"token";r=\d+;t=\d+$/);
        }
        const over = await exchange(app, exchangeOf(tok.secret));
        assert.match(refused(over, 429, 'temporarily_unavailable'), /rate limit of 2 requests/);
        assert.ok(Number(over.headers['retry-after']) > 0);
        assert.equal(over.headers['ratelimit-policy'], '"token";q=2;w=60');
        assert.equal(app.infracat.tokens.service.verifications.rate_limited, 1);
        // Per token: another token is not held back.
        const other = await mintToken(app, ['apps:read']);
        assert.equal((await exchange(app, exchangeOf(other.secret))).statusCode, 200);
      },
    );

    it(
      'guessing secrets here meets the ' + 'failed-authentication limiter (429), valid tokens still exchange',
      async (t) => {
        const { app } = await setup(t, { AUTH_FAILURE_LIMIT: '3' });
        const tok = await mintToken(app, ['apps:read']);
        const fakes = Array.from({ length: 5 }, (_, i) => `icat_4lTzT0rbd6mWl2Ka7dM1yQ5o8kRxJc3H000${i}aB`);
        const statuses = [];
        for (const fake of fakes) statuses.push((await exchange(app, exchangeOf(fake))).statusCode);
        assert.deepEqual(statuses, [400, 400, 400, 429, 429]);
        assert.equal((await exchange(app, exchangeOf(tok.secret))).statusCode, 200);
      },
    );
  });
}
