// The forward-auth rule table: which scopes a request to another platform service
// needs, by its method and path. First matching rule wins; no match means denied (the
// check fails closed). Paths are globs: `*` is one path segment, `**` any rest.
//
//   [{"method": "GET", "path": "/apps/**", "scopes": ["apps:read"]},
//    {"path": "/apps/**", "scopes": ["apps:write"]}]
//
// `method` may be a string or a list (absent: any method); `scopes: []` admits any
// valid token. Paths are matched after src/gateway/path.ts has read them strictly.
import { HTTP_METHODS, isHttpMethod } from '../http/methods.js';
import { parseScope } from '../tokens/scopes.js';
import { normalisePath } from './path.js';

export interface Rule {
  methods: readonly string[] | null;
  path: string;
  scopes: readonly string[];
  pattern: RegExp;
}

export const DEFAULT_RULES_JSON = JSON.stringify([
  { method: ['GET', 'HEAD'], path: '/apps/**', scopes: ['apps:read'] },
  { path: '/apps/**', scopes: ['apps:write'] },
]);

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (c === '*') re += '[^/]*';
    else re += c.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  // `/apps/**` also matches `/apps` itself.
  if (glob.endsWith('/**')) re = `${re.slice(0, -'/.*'.length)}(?:/.*)?`;
  return new RegExp(`^${re}$`);
}

/** Parses and checks a rule table (JSON text); throws a one-line Error naming the problem. */
export function compileRules(json: string): Rule[] {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('is not valid JSON');
  }
  if (!Array.isArray(raw)) throw new Error('must be a JSON array of rules');
  return raw.map((r: unknown, i) => {
    if (typeof r !== 'object' || r === null) throw new Error(`rule ${i} must be an object`);
    const { method, path, scopes } = r as { method?: unknown; path?: unknown; scopes?: unknown };
    if (typeof path !== 'string' || !path.startsWith('/')) throw new Error(`rule ${i}: path must start with /`);
    if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string' || parseScope(s) === null)) {
      throw new Error(`rule ${i}: scopes must be a list of <resource>:<read|write>`);
    }
    let methods: string[] | null = null;
    if (method !== undefined) {
      const list = Array.isArray(method) ? method : [method];
      // A rule for a method the check refuses to read could never match: say so at start.
      if (list.length === 0 || list.some((m) => typeof m !== 'string' || !isHttpMethod(m.toUpperCase()))) {
        throw new Error(`rule ${i}: method must be one of ${HTTP_METHODS.join(', ')} or a list of them`);
      }
      methods = (list as string[]).map((m) => m.toUpperCase());
    }
    return { methods, path, scopes: scopes as string[], pattern: globToRegExp(path) };
  });
}

/** Scopes the first rule matching a method and a normalised path requires, or null (deny). */
export function matchRule(rules: readonly Rule[], method: string, path: string): readonly string[] | null {
  const m = method.toUpperCase();
  for (const rule of rules) {
    if (rule.methods !== null && !rule.methods.includes(m)) continue;
    if (rule.pattern.test(path)) return rule.scopes;
  }
  return null;
}

/**
 * Scopes a forwarded method and request target need, or null (deny) when no rule matches
 * or the target cannot be read unambiguously (see normalisePath).
 */
export function requiredScopes(rules: readonly Rule[], method: string, uri: string): readonly string[] | null {
  const path = normalisePath(uri);
  return path.ok ? matchRule(rules, method, path.path) : null;
}
