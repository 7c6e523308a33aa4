// The rules of the token exchange (RFC 8693) beyond the shape of its parameters: which
// grant and token types it takes, what it refuses, and which scopes the signed token may
// carry. Refusals are RFC 6749 section 5.2 errors (OAuthRefusal); no HTTP here.
import { missingScopes, parseScope, type ScopeRegistry } from '../tokens/scopes.js';
import {
  GRANT_TOKEN_EXCHANGE,
  TOKEN_TYPE_ACCESS_TOKEN,
  TOKEN_TYPE_JWT,
  type ExchangeRequestBody,
  type OAuthErrorCode,
} from './schemas.js';

/** An error of the token endpoint, in RFC 6749 section 5.2's terms. */
export class OAuthRefusal extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(error: OAuthErrorCode, description: string, status = 400, headers: Record<string, string> = {}) {
    super(description);
    this.name = 'OAuthRefusal';
    this.error = error;
    this.status = status;
    this.headers = headers;
  }
}

/** The grant, checked before the rest (a client of another grant is told that, not what else it lacks). */
export function checkGrantType(grantType: unknown): void {
  // Absent or repeated: the schema's invalid_request says so.
  if (typeof grantType !== 'string' || grantType === GRANT_TOKEN_EXCHANGE) return;
  throw new OAuthRefusal('unsupported_grant_type', `the only grant_type is ${GRANT_TOKEN_EXCHANGE}`);
}

/** What an exchange asks for: its scopes (null: all of the subject token's) and audience. */
export interface ExchangeAsk {
  scopes: string[] | null;
  audience: string | string[] | undefined;
}

/**
 * The exchange's parameters as rules read them, or an OAuthRefusal: the token types it
 * takes, no delegation (`actor_token`) and no resource indicators (`resource`: refused,
 * never ignored, so a token is never less bound than its client asked), scopes of the
 * registry.
 */
export function readExchange(
  body: ExchangeRequestBody & Record<string, unknown>,
  registry: ScopeRegistry,
): ExchangeAsk {
  if (body.subject_token_type !== TOKEN_TYPE_ACCESS_TOKEN) {
    throw new OAuthRefusal(
      'invalid_request',
      `subject_token_type must be ${TOKEN_TYPE_ACCESS_TOKEN} (the subject token is an infracat token)`,
    );
  }
  const requested = body.requested_token_type;
  if (requested !== undefined && requested !== TOKEN_TYPE_JWT && requested !== TOKEN_TYPE_ACCESS_TOKEN) {
    throw new OAuthRefusal(
      'invalid_request',
      `requested_token_type must be absent, ${TOKEN_TYPE_JWT} or ${TOKEN_TYPE_ACCESS_TOKEN}`,
    );
  }
  if (body.actor_token !== undefined || body.actor_token_type !== undefined)
    throw new OAuthRefusal('invalid_request', 'delegation (actor_token) is not supported');
  if (body.resource !== undefined)
    throw new OAuthRefusal('invalid_target', 'resource indicators are not supported: name the service in audience');
  const audience = Array.isArray(body.audience) ? [...new Set(body.audience)] : body.audience;
  return { scopes: body.scope === undefined ? null : readScopes(body.scope, registry), audience };
}

/** A `scope` parameter's scopes, once each, in order; invalid_scope for an empty or unknown one. */
function readScopes(scope: string, registry: ScopeRegistry): string[] {
  const scopes = [...new Set(scope.split(' ').filter((s) => s !== ''))];
  // Empty must not mean "all of them": that is a client's mistake.
  if (scopes.length === 0) throw new OAuthRefusal('invalid_scope', 'scope names no scope; leave it out for all');
  const unknown = scopes.filter((s) => parseScope(s) === null || !registry.has(s));
  if (unknown.length > 0)
    throw new OAuthRefusal('invalid_scope', `unknown scope ${unknown.slice(0, 5).join(', ').slice(0, 200)}`);
  return scopes;
}

/** The signed token's scopes: those asked for, each held by the subject token (`write` implies `read`). */
export function grantedScopes(held: readonly string[], asked: string[] | null): string[] {
  if (asked === null) return [...held];
  const missing = missingScopes(held, asked);
  if (missing.length > 0)
    throw new OAuthRefusal('invalid_scope', `the subject token does not hold ${missing.join(', ')}`);
  return asked;
}
