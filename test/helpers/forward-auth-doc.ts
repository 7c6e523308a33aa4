// The gateway configurations docs/forward-auth.md tells operators to copy, read from the
// document itself, so the tests exercise exactly what is published.
import { readFileSync } from 'node:fs';

const DOC = new URL('../../docs/forward-auth.md', import.meta.url);

function doc(): string {
  return readFileSync(DOC, 'utf8');
}

function section(title: string): string {
  const text = doc();
  const start = text.indexOf(`### ${title}`);
  if (start === -1) throw new Error(`docs/forward-auth.md has no "### ${title}" section`);
  const end = text.indexOf('\n#', start + 4);
  return text.slice(start, end === -1 ? undefined : end);
}

/** The nginx block between the snippet markers. */
export function nginxSnippet(): string {
  const m = /<!-- nginx-snippet:start -->\s*```nginx\n([\s\S]*?)```\s*<!-- nginx-snippet:end -->/.exec(doc());
  if (m === null) throw new Error('docs/forward-auth.md has no nginx snippet between the markers');
  return m[1]!;
}

/**
 * The nginx snippet with its service location replaced by the one that passes the signed
 * access token on (`X-Token-Jwt` as the service's Authorization), as the document says.
 */
export function nginxJwtSnippet(): string {
  const m = /<!-- nginx-jwt-snippet:start -->\s*```nginx\n([\s\S]*?)```\s*<!-- nginx-jwt-snippet:end -->/.exec(doc());
  if (m === null) throw new Error('docs/forward-auth.md has no nginx JWT snippet between the markers');
  const location = /^ {4}location \/apps\/ \{\n[\s\S]*?\n {4}\}\n/m;
  const snippet = nginxSnippet();
  if (!location.test(snippet)) throw new Error('the nginx snippet has no `location /apps/` block');
  return snippet.replace(location, m[1]!);
}

/** The `proxy_set_header NAME VALUE;` lines of the check location, in order. */
export function nginxCheckHeaders(): [string, string][] {
  const m = /location = \/_infracat_check \{([\s\S]*?)\n {4}\}/.exec(nginxSnippet());
  if (m === null) throw new Error('the nginx snippet has no `location = /_infracat_check` block');
  return [...m[1]!.matchAll(/^\s*proxy_set_header\s+(\S+)\s+(\S+);/gm)].map((x) => [x[1]!, x[2]!]);
}

function yamlList(block: string, key: string): string[] | undefined {
  const m = new RegExp(`^\\s*${key}:\\s*\\[([^\\]]*)\\]`, 'm').exec(block);
  return m === null ? undefined : [...m[1]!.matchAll(/"([^"]+)"/g)].map((x) => x[1]!);
}

/** Traefik's forwardAuth settings that decide what reaches infracat. */
export function traefikForwardAuth(): { authRequestHeaders: string[] | undefined; trustForwardHeader: boolean } {
  const block = section('Traefik');
  const trust = /^\s*trustForwardHeader:\s*(true|false)/m.exec(block);
  return { authRequestHeaders: yamlList(block, 'authRequestHeaders'), trustForwardHeader: trust?.[1] === 'true' };
}

/** The client headers Envoy's ext_authz filter is told to pass (`allowed_headers`). */
export function envoyAllowedHeaders(): string[] {
  const m = /^\s*allowed_headers:\s*\{\s*patterns:\s*\[(.*)\]\s*\}/m.exec(section('Envoy'));
  if (m === null) throw new Error('the Envoy snippet has no allowed_headers');
  return [...m[1]!.matchAll(/exact:\s*([\w-]+)/g)].map((x) => x[1]!);
}

/** Envoy's path_prefix in the snippet. */
export function envoyPathPrefix(): string {
  const m = /^\s*path_prefix:\s*(\S+)/m.exec(section('Envoy'));
  if (m === null) throw new Error('the Envoy snippet has no path_prefix');
  return m[1]!;
}
