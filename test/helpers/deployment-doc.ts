// The fleet configuration docs/deployment.md tells operators to copy (the instances'
// settings and nginx's upstream), read from the document itself, so the end-to-end fleet
// test runs exactly what is published.
import { readFileSync } from 'node:fs';

const DOC = new URL('../../docs/deployment.md', import.meta.url);

function block(marker: string, lang: string): string {
  const re = new RegExp(`<!-- ${marker}:start -->\\s*\`\`\`${lang}\\n([\\s\\S]*?)\`\`\`\\s*<!-- ${marker}:end -->`);
  const m = re.exec(readFileSync(DOC, 'utf8'));
  if (m === null) throw new Error(`docs/deployment.md has no ${lang} block between the ${marker} markers`);
  return m[1]!;
}

/** The documented instance settings, `NAME=value` lines (comments left out). */
export function fleetSettings(): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const line of block('fleet-env', 'sh').split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const m = /^([A-Z][A-Z0-9_]*)=(\S*)$/.exec(line.trim());
    if (m === null) throw new Error(`docs/deployment.md: not a NAME=value line: ${line}`);
    settings[m[1]!] = m[2]!;
  }
  return settings;
}

/** The documented nginx configuration (upstream and server blocks). */
export function fleetNginx(): string {
  return block('fleet-nginx', 'nginx');
}

/** Seconds of a time like `2s`, `500ms` or `1m` in nginx's syntax. */
export function nginxSeconds(time: string): number {
  const m = /^(\d+)(ms|s|m)?$/.exec(time);
  if (m === null) throw new Error(`not an nginx time: ${time}`);
  const n = Number(m[1]);
  return m[2] === 'ms' ? n / 1000 : m[2] === 'm' ? n * 60 : n;
}

/**
 * The documented nginx configuration pointed at these instance ports (one per `server` line
 * of the upstream, in order) and listening on 127.0.0.1:`port`; nothing else changed.
 */
export function fleetNginxFor(port: number, instancePorts: readonly number[]): string {
  const conf = fleetNginx();
  const servers = [...conf.matchAll(/^(\s*server\s+)(\S+:\d+)/gm)];
  if (servers.length !== instancePorts.length) {
    throw new Error(`the documented upstream has ${servers.length} servers, the test runs ${instancePorts.length}`);
  }
  let i = 0;
  const pointed = conf.replace(
    /^(\s*server\s+)(\S+:\d+)/gm,
    (_all, lead: string) => `${lead}127.0.0.1:${instancePorts[i++]}`,
  );
  const listens = pointed.match(/^\s*listen\s+80;/gm);
  if (listens?.length !== 1) throw new Error('the documented server block should have one `listen 80;`');
  return pointed.replace(/^(\s*)listen\s+80;/m, `$1listen 127.0.0.1:${port};`);
}
