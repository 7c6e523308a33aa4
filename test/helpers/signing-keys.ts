// Signing keys for the signed-token tests: P-256 private keys in PEM files, as an operator
// gives them in JWT_SIGNING_KEY_FILES, and the exchange's form as a client sends it.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTVerifyResult } from 'jose';
import type { TestContext } from 'node:test';
import type { App } from '../../src/http/types.js';
import { build, mintToken } from './app.js';
import type { Backend } from './backends.js';
import { tempDir } from './sqlite.js';

/** A new EC P-256 private key written to DIR/NAME (mode 0600); its path and the key. */
export function writeSigningKey(dir: string, name: string): { file: string; key: KeyObject; pem: string } {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const file = path.join(dir, name);
  writeFileSync(file, pem, { mode: 0o600 });
  return { file, key: privateKey, pem };
}

/**
 * The app on a fresh database of `backend`, able to sign: on PostgreSQL with a key file of the
 * test's own (it signs only with the operator's keys), on SQLite with the key it makes itself
 * (tested in test/oauth/keys.test.ts); and an operator token that manages tokens and accounts.
 */
export async function buildSigning(
  t: TestContext,
  backend: Backend,
  env: Record<string, string> = {},
  now?: () => number,
) {
  const db = await backend.fresh(t);
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const keys: Record<string, string> =
    backend.name === 'postgres' ? { JWT_SIGNING_KEY_FILES: writeSigningKey(tmp.dir, 'k.pem').file } : {};
  const built = await build(t, {
    store: db.open(),
    env: { DATABASE_URL: db.url, LAST_USED_FLUSH_MS: '600000', ...keys, ...env },
    ...(now !== undefined ? { now } : {}),
  });
  return {
    ...built,
    startAdmin: () => mintToken(built.app, ['api-tokens:write', 'accounts:write', 'apps:write'], 'admin'),
  };
}

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** POST /api/v1/oauth/token with a form of `params` (a list value: the name repeated). */
export function exchange(app: App, params: Record<string, string | string[]>, headers: Record<string, string> = {}) {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    for (const v of Array.isArray(value) ? value : [value]) form.append(name, v);
  return app.inject({
    method: 'POST',
    url: '/api/v1/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: form.toString(),
  });
}

/** The form of a valid exchange of `secret`, with `extra` parameters. */
export function exchangeOf(secret: string, extra: Record<string, string | string[]> = {}) {
  return { grant_type: TOKEN_EXCHANGE, subject_token: secret, subject_token_type: ACCESS_TOKEN_TYPE, ...extra };
}

/** The app's JWKS as it serves it. */
export async function servedJwks(app: App): Promise<JSONWebKeySet> {
  const res = await app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
  if (res.statusCode !== 200) throw new Error(`JWKS: ${res.statusCode} ${res.body}`);
  return res.json<JSONWebKeySet>();
}

/** Verifies `jwt` as a verifier would: against the served JWKS, its issuer and audience, typ at+jwt, ES256 only. */
export async function verifyJwt(
  app: App,
  jwt: string,
  options: { issuer?: string; audience?: string; now?: number } = {},
): Promise<JWTVerifyResult> {
  const issuer = options.issuer ?? 'http://localhost:8080';
  return jwtVerify(jwt, createLocalJWKSet(await servedJwks(app)), {
    issuer,
    audience: options.audience ?? issuer,
    typ: 'at+jwt',
    algorithms: ['ES256'],
    ...(options.now !== undefined ? { currentDate: new Date(options.now) } : {}),
  });
}
