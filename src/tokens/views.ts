// Token records -> the JSON the API (and `infracat tokens --json`) shows.
import type { TokenRecord } from '../storage/types.js';
import type { IssuedToken } from './service.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export interface TokenViewJson {
  id: string;
  name: string;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
}

export interface CreatedTokenJson {
  id: string;
  name: string;
  token: string;
  scopes: string[];
  created_at: string;
  expires_at: string | null;
}

export function tokenView(t: TokenRecord): TokenViewJson {
  return {
    id: t.id,
    name: t.name,
    scopes: t.scopes,
    created_at: new Date(t.createdAt).toISOString(),
    last_used_at: iso(t.lastUsedAt),
    expires_at: iso(t.expiresAt),
  };
}

/** The create response: the only place a secret is ever shown. No last_used_at. */
export function createdView({ token, secret }: IssuedToken): CreatedTokenJson {
  return {
    id: token.id,
    name: token.name,
    token: secret,
    scopes: token.scopes,
    created_at: new Date(token.createdAt).toISOString(),
    expires_at: iso(token.expiresAt),
  };
}
