// Signed access tokens, wired from the keys and plain settings: the signer, the phantom
// tokens of forward auth (forgotten with their tokens' verifications), and the documents
// published about them (the JWKS and the RFC 8414 metadata).
import type { VerificationCache } from '../tokens/cache.js';
import type { SigningKeys } from './keys.js';
import { PhantomTokens } from './phantom.js';
import { GRANT_TOKEN_EXCHANGE, type JwksBody, type ServerMetadataBody } from './schemas.js';
import { AccessTokenSigner } from './signer.js';

export const JWKS_PATH = '/.well-known/jwks.json';
export const METADATA_PATH = '/.well-known/oauth-authorization-server';
export const TOKEN_PATH = '/api/v1/oauth/token';

export interface SignedTokens {
  keys: SigningKeys;
  signer: AccessTokenSigner;
  /** Forward auth's signed tokens (AUTH_CHECK_JWT). */
  phantom: PhantomTokens;
  jwks: JwksBody;
  metadata: ServerMetadataBody;
}

export interface SignedTokenSettings {
  issuer: string;
  ttlS: number;
  /** Most tokens whose signed token forward auth keeps (TOKEN_CACHE_MAX, as the verification cache). */
  cacheMax: number;
  /** The scope registry's names, for the metadata. */
  scopes: readonly string[];
  now?: () => number;
}

/** The public keys as the JWKS publishes them: the signing one first. */
export function jwksOf(keys: SigningKeys): JwksBody {
  return { keys: keys.keys.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: 'ES256' as const, use: 'sig' as const })) };
}

/** RFC 8414 metadata: every URL under the issuer. */
export function metadataOf(issuer: string, scopes: readonly string[]): ServerMetadataBody {
  return {
    issuer,
    token_endpoint: `${issuer}${TOKEN_PATH}`,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    grant_types_supported: [GRANT_TOKEN_EXCHANGE],
    token_endpoint_auth_methods_supported: ['none'],
    response_types_supported: [],
    scopes_supported: [...scopes],
    service_documentation: `${issuer}/docs`,
  };
}

export function createSignedTokens(
  keys: SigningKeys,
  settings: SignedTokenSettings,
  cache: VerificationCache,
): SignedTokens {
  const now = settings.now;
  const signer = new AccessTokenSigner(keys.keys[0]!, {
    issuer: settings.issuer,
    ttlS: settings.ttlS,
    ...(now !== undefined ? { now } : {}),
  });
  const phantom = new PhantomTokens(signer, { max: settings.cacheMax, ...(now !== undefined ? { now } : {}) });
  cache.onEvict({ token: (id) => phantom.forget(id), account: (accountId) => phantom.forgetAccount(accountId) });
  return { keys, signer, phantom, jwks: jwksOf(keys), metadata: metadataOf(settings.issuer, settings.scopes) };
}
