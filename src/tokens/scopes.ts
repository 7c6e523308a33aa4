// Scopes are `<resource>:<action>`; actions are `read` and `write`, and `write`
// implies `read` on the same resource. The resources are a configurable registry;
// anything outside it is rejected, never stored. Every scope of the registry grants
// something reachable, so a resource nothing can write (the audit trail: its events are
// written by the changes they record) has `read` alone.
import { redactSecrets } from '../redact.js';
import type { FieldError } from '../errors.js';
import type { ScopeView } from './schemas.js';

export const ACTIONS = ['read', 'write'] as const;
export type Action = (typeof ACTIONS)[number];

export const DEFAULT_RESOURCES = [
  'api-tokens',
  'apps',
  'images',
  'plans',
  'regions',
  'catalog',
  'audit-events',
  'accounts',
  'webhooks',
] as const;
/**
 * Resources that grant `read` only: `<resource>:write` is not a scope (422 like any
 * unknown one). The catalog kinds are changed through `catalog:write`, as one document.
 */
export const READ_ONLY_RESOURCES: readonly string[] = ['images', 'plans', 'regions', 'audit-events'];
/**
 * Scopes only tokens of the operator account may hold: running the other accounts, and
 * changing the catalog every account sees.
 */
export const OPERATOR_ONLY_SCOPES: readonly string[] = ['accounts:read', 'accounts:write', 'catalog:write'];
export const RESOURCE_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;
const SCOPE_PATTERN = /^([a-z][a-z0-9-]{0,39}):(read|write)$/;

const DESCRIPTIONS: Record<string, Partial<Record<Action, string>>> = {
  'api-tokens': {
    read: 'List API tokens and see their metadata (never their secrets).',
    write:
      'Create, rotate, rename, re-scope and delete API tokens, and change their conditions: enable or disable ' +
      'them, and set the networks they may be used from (allowed_cidrs) and their not_before. Only tokens whose ' +
      'scopes the caller holds, given only scopes it holds and conditions no wider than its own.',
  },
  apps: {
    read: "Read apps on the platform's apps service.",
    write: "Create, change and delete apps on the platform's apps service.",
  },
  images: { read: 'Read the OS image catalog.' },
  plans: { read: 'Read the instance plan catalog.' },
  regions: { read: 'Read the region catalog.' },
  catalog: {
    read: 'Read the whole catalog document (availability and deprecations included) and its revisions.',
    write:
      'Replace the catalog (images, plans, regions) for every account, and preview the diff of a replacement ' +
      "(operator account's tokens only).",
  },
  'audit-events': {
    read: "Read the audit trail of the token's account (the operator account's tokens: every account's).",
  },
  webhooks: {
    read: "List the account's webhooks (never their secrets) and read their delivery logs.",
    write:
      "Create, change, test and delete the account's webhooks and rotate their signing secrets " +
      "(the operator account's: also webhooks of every account's events).",
  },
  accounts: {
    read: "List accounts and their tokens (operator account's tokens only).",
    write: "Create, suspend, resume and delete accounts and manage their tokens (operator account's tokens only).",
  },
};

export function parseScope(scope: string): { resource: string; action: Action } | null {
  const m = SCOPE_PATTERN.exec(scope);
  return m === null ? null : { resource: m[1]!, action: m[2] as Action };
}

export class ScopeRegistry {
  private readonly infos: ScopeView[];
  private readonly known: Set<string>;

  constructor(resources: readonly string[] = DEFAULT_RESOURCES) {
    for (const r of resources)
      if (!RESOURCE_PATTERN.test(r)) throw new Error(`invalid scope resource ${JSON.stringify(r)}`);
    this.infos = [...new Set(resources)].flatMap((resource) =>
      actionsOf(resource).map((action) => ({
        scope: `${resource}:${action}`,
        resource,
        action,
        description:
          DESCRIPTIONS[resource]?.[action] ??
          `${action === 'read' ? 'Read' : 'Create, change and delete'} ${resource}.`,
        operator_only: OPERATOR_ONLY_SCOPES.includes(`${resource}:${action}`),
      })),
    );
    this.known = new Set(this.infos.map((i) => i.scope));
  }

  all(): readonly ScopeView[] {
    return this.infos;
  }

  names(): string[] {
    return this.infos.map((i) => i.scope);
  }

  /** Every scope a token of an account may hold: all in the operator account, else all but the operator-only ones. */
  namesFor(operatorAccount: boolean): string[] {
    return operatorAccount ? this.names() : this.infos.filter((i) => !i.operator_only).map((i) => i.scope);
  }

  has(scope: string): boolean {
    return this.known.has(scope);
  }

  /** One error per bad entry of a requested scope list (pointer `/scopes/<i>`). */
  validate(scopes: readonly string[]): FieldError[] {
    const errors: FieldError[] = [];
    const seen = new Set<string>();
    scopes.forEach((scope, i) => {
      const at = `/scopes/${i}`;
      if (parseScope(scope) === null)
        errors.push({ pointer: at, detail: `"${truncate(scope)}" is not of the form <resource>:<read|write>` });
      else if (!this.known.has(scope)) errors.push({ pointer: at, detail: `unknown scope "${scope}"` });
      else if (seen.has(scope)) errors.push({ pointer: at, detail: `duplicate scope "${scope}"` });
      seen.add(scope);
    });
    return errors;
  }
}

// Redacted before it is cut: a cut secret is too short to be recognised later (the
// problem is redacted again as a whole, src/errors.ts).
function truncate(raw: string): string {
  const s = redactSecrets(raw);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** The actions a resource's scopes have: `read` alone for a read-only resource. */
export function actionsOf(resource: string): readonly Action[] {
  return READ_ONLY_RESOURCES.includes(resource) ? ['read'] : ACTIONS;
}

/** Whether `held` grants `required`: the scope itself, or `write` on its resource. */
export function grants(held: readonly string[], required: string): boolean {
  if (held.includes(required)) return true;
  const p = parseScope(required);
  return p !== null && p.action === 'read' && held.includes(`${p.resource}:write`);
}

export function missingScopes(held: readonly string[], required: readonly string[]): string[] {
  return required.filter((s) => !grants(held, s));
}

/** Whether `held` grants every scope of `required` (missingScopes() is empty), with nothing allocated. */
export function holdsAll(held: readonly string[], required: readonly string[]): boolean {
  for (const s of required) if (!grants(held, s)) return false;
  return true;
}
