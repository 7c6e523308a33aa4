// What makes a create request valid, beyond what the JSON schema can say.
// Pure functions: no HTTP, no storage.
import type { FieldError } from '../errors.js';
import type { ScopeRegistry } from './scopes.js';

export const NAME_MAX = 100;

export interface CreateTokenInput {
  name: string;
  scopes: string[];
  /** RFC 3339 timestamp, or null/undefined for a token that never expires. */
  expires_at?: string | null | undefined;
}

export interface ValidCreate {
  name: string;
  scopes: string[];
  expiresAt: number | null;
}

export interface RuleContext {
  registry: ScopeRegistry;
  now: number;
  maxLifetimeMs: number;
}

// C0/C1 controls and DEL; also bidi overrides and zero-width characters that make one
// name look like another in a console.
const FORBIDDEN_CHARS = /[\p{Cc}\u200B-\u200F\u202A-\u202E\u2066-\u2069\uFEFF]/u;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function validateName(raw: string, pointer = '/name'): { name: string } | { error: FieldError } {
  const name = raw.trim();
  if (!name.isWellFormed()) return { error: { pointer, detail: 'must be valid Unicode text' } };
  if (FORBIDDEN_CHARS.test(name)) return { error: { pointer, detail: 'must not contain control or invisible formatting characters' } };
  const length = [...name].length;
  if (length < 1) return { error: { pointer, detail: 'must not be empty or only whitespace' } };
  if (length > NAME_MAX) return { error: { pointer, detail: `must be at most ${NAME_MAX} characters (got ${length})` } };
  return { name };
}

export function validateCreate(input: CreateTokenInput, ctx: RuleContext): { value: ValidCreate } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const name = validateName(input.name);
  if ('error' in name) errors.push(name.error);
  if (input.scopes.length === 0) errors.push({ pointer: '/scopes', detail: 'must hold at least one scope' });
  errors.push(...ctx.registry.validate(input.scopes));
  let expiresAt: number | null = null;
  if (input.expires_at !== undefined && input.expires_at !== null) {
    const at = RFC3339.test(input.expires_at) ? Date.parse(input.expires_at) : Number.NaN;
    if (Number.isNaN(at)) errors.push({ pointer: '/expires_at', detail: 'must be an RFC 3339 timestamp, e.g. 2027-01-31T00:00:00Z' });
    else if (at <= ctx.now) errors.push({ pointer: '/expires_at', detail: 'must be in the future' });
    else if (at - ctx.now > ctx.maxLifetimeMs) {
      errors.push({ pointer: '/expires_at', detail: `must be within ${Math.floor(ctx.maxLifetimeMs / 86_400_000)} days from now` });
    } else expiresAt = at;
  }
  if (errors.length > 0 || 'error' in name) return { errors };
  return { value: { name: name.name, scopes: input.scopes, expiresAt } };
}
