// Debian packages the end-to-end tests need (nginx-light, chromium). Under CI a missing
// one is installed with apt-get (as root, without starting any system service); elsewhere
// the test skips with a message saying how to get it.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';

export function isCI(): boolean {
  return process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
}

function aptInstall(pkg: string): { ok: boolean; log: string } {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // policy-rc.d exit 101: no postinst may start a service (nginx would take port 80).
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !existsSync(policy);
  if (ownPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    // Two test files installing at once wait for each other's dpkg lock instead of failing.
    const install = () =>
      spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=300', 'install', '-y', '--no-install-recommends', pkg], {
        env,
        encoding: 'utf8',
        timeout: 600_000,
      });
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

/**
 * The first of `candidates` that exists; under CI (or with `install`, as the bench asks, when
 * running as root) the Debian package is installed when none does (a failed install throws).
 * Undefined when unavailable and not installed.
 */
export function ensureDebianBinary(
  pkg: string,
  candidates: readonly string[],
  { install = false }: { install?: boolean } = {},
): string | undefined {
  const find = () => candidates.find((p) => existsSync(p));
  const found = find();
  if (found !== undefined || !(isCI() || (install && process.getuid?.() === 0))) return found;
  const { ok, log } = aptInstall(pkg);
  const after = find();
  if (!ok || after === undefined) throw new Error(`could not install ${pkg}:\n${log}`);
  return after;
}
