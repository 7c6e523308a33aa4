// A real nginx for the forward-auth end-to-end test: Debian's nginx-light. Under CI it
// is installed when absent (apt-get, as root, without starting the system service);
// elsewhere a missing nginx skips the test with a message saying how to get it.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';

const CANDIDATES = ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'];

function find(): string | undefined {
  return CANDIDATES.find((p) => existsSync(p));
}

function aptInstall(): { ok: boolean; log: string } {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // policy-rc.d exit 101: the package's postinst must not start nginx on port 80.
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !existsSync(policy);
  if (ownPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    const install = () => spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'nginx-light'], { env, encoding: 'utf8', timeout: 300_000 });
    let res = install();
    if (res.status !== 0) {
      spawnSync('apt-get', ['update'], { env, encoding: 'utf8', timeout: 300_000 });
      res = install();
    }
    return { ok: res.status === 0, log: `${res.stdout}\n${res.stderr}`.slice(-2000) };
  } finally {
    if (ownPolicy) rmSync(policy, { force: true });
  }
}

export function isCI(): boolean {
  return process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
}

/** Path of an nginx binary; installs it under CI. Undefined (outside CI) when unavailable. */
export function ensureNginx(): string | undefined {
  const found = find();
  if (found !== undefined) return found;
  if (!isCI()) return undefined;
  const { ok, log } = aptInstall();
  const after = find();
  if (!ok || after === undefined) throw new Error(`could not install nginx-light:\n${log}`);
  return after;
}
