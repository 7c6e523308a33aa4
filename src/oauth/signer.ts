// Signs access tokens: RFC 9068 JWTs (header `typ: at+jwt`, `alg: ES256`, `kid`) with the
// first signing key, for a token that has just been verified. The claims:
//   iss        JWT_ISSUER
//   sub        the token's id (the subject: whom the access is for)
//   client_id  the token's id too: the token is its own client (no OAuth client exists apart from it)
//   aud        the audience asked for, else the issuer
//   iat, exp   now, and now + JWT_TTL_S, never past the end of what it stands for
//   jti        128 random bits
//   scope      space-separated
//   account_id the token's account
// Counted by the path that asked (exchange, forward_auth) for /metrics.
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import type { SecretKind } from '../tokens/service.js';
import type { SigningKey } from './keys.js';

export type SignedVia = 'exchange' | 'forward_auth';

export interface AccessTokenInput {
  tokenId: string;
  accountId: string;
  scopes: readonly string[];
  /** The `aud`: one or several; undefined: the issuer. */
  audience?: string | readonly string[];
  /** The latest the token may live to (ms since the epoch): the token's expiry, a grace period's end; null: none. */
  notAfter: number | null;
}

export interface SignedAccessToken {
  jwt: string;
  /** iat and exp, in ms since the epoch (whole seconds). */
  issuedAt: number;
  expiresAt: number;
}

export interface SignerOptions {
  issuer: string;
  ttlS: number;
  now?: () => number;
}

export class AccessTokenSigner {
  readonly signed: Record<SignedVia, number> = { exchange: 0, forward_auth: 0 };
  readonly issuer: string;
  readonly ttlS: number;
  private readonly now: () => number;

  constructor(
    private readonly key: SigningKey,
    options: SignerOptions,
  ) {
    this.issuer = options.issuer;
    this.ttlS = options.ttlS;
    this.now = options.now ?? Date.now;
  }

  /** When a token signed now for `notAfter` would expire (ms, whole seconds). */
  expiryFrom(now: number, notAfter: number | null): number {
    const end = Math.min(now + this.ttlS * 1000, notAfter ?? Number.POSITIVE_INFINITY);
    return Math.floor(end / 1000) * 1000;
  }

  async sign(input: AccessTokenInput, via: SignedVia): Promise<SignedAccessToken> {
    const now = this.now();
    const iat = Math.floor(now / 1000);
    const exp = this.expiryFrom(now, input.notAfter) / 1000;
    const audience = input.audience ?? this.issuer;
    const jwt = await new SignJWT({
      client_id: input.tokenId,
      scope: input.scopes.join(' '),
      account_id: input.accountId,
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: this.key.kid })
      .setIssuer(this.issuer)
      .setSubject(input.tokenId)
      .setAudience(typeof audience === 'string' ? audience : [...audience])
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(randomBytes(16).toString('base64url'))
      .sign(this.key.privateKey);
    this.signed[via] += 1;
    return { jwt, issuedAt: iat * 1000, expiresAt: exp * 1000 };
  }
}

/** The latest a signed token may live to: the token's expiry, and a previous secret's grace period. */
export function signedTokenEnd(
  token: { expiresAt: number | null; previousExpiresAt: number | null },
  secret: SecretKind,
): number | null {
  const grace = secret === 'previous' ? token.previousExpiresAt : null;
  if (token.expiresAt === null) return grace;
  return grace === null ? token.expiresAt : Math.min(token.expiresAt, grace);
}
