// A real nginx for the end-to-end tests (forward auth, the fleet): Debian's nginx-light.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ensureDebianBinary } from './apt.js';
import { freePort } from './embedded-pg.js';

/** Path of an nginx binary; installs it under CI. Undefined (outside CI) when unavailable. */
export function ensureNginx(): string | undefined {
  return ensureDebianBinary('nginx-light', ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx']);
}

export const NGINX_MISSING = 'nginx is not installed (apt-get install nginx-light); under CI=true the test installs it';

/** A whole nginx.conf around `http` (the documented server/upstream blocks), all files under `dir`. */
export function nginxConf(dir: string, http: string): string {
  const at = (f: string) => path.join(dir, f);
  return `user root;
worker_processes 1;
daemon off;
pid ${at('nginx.pid')};
error_log ${at('logs/error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${at('tmp/body')};
  proxy_temp_path ${at('tmp/proxy')};
  fastcgi_temp_path ${at('tmp/fastcgi')};
  uwsgi_temp_path ${at('tmp/uwsgi')};
  scgi_temp_path ${at('tmp/scgi')};
${http}
}
`;
}

export interface RunningNginx {
  port: number;
  /** Stops nginx (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** nginx's error log so far (why it answered 502, for a failure message). */
  errorLog(): string;
}

const running = new Set<ChildProcess>();
// A test process that ends without its cleanup (a crash, a cancelled run) takes nginx with it.
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
});

/**
 * Starts nginx (`conf` from nginxConf) on a free port and waits until nginx itself answers
 * there. A port that freePort() handed out can be taken by another test file's server
 * before nginx binds it; a check that only waited for "something listening" would then talk
 * to that server (an infracat answering 404). So a reply counts only with nginx's Server
 * header, and a bind failure picks another port. On failure nothing is left running.
 */
export async function startNginx(nginx: string, dir: string, confFor: (port: number) => string): Promise<RunningNginx> {
  for (const sub of ['logs', 'tmp']) mkdirSync(path.join(dir, sub), { recursive: true });
  const errorLogFile = path.join(dir, 'logs/error.log');
  const errorLog = () => (existsSync(errorLogFile) ? readFileSync(errorLogFile, 'utf8') : '');
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const conf = path.join(dir, `nginx-${attempt}.conf`);
    writeFileSync(conf, confFor(port));
    const proc: ChildProcess = spawn(nginx, ['-p', dir, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    running.add(proc);
    const exited = once(proc, 'exit');
    let done = false;
    void exited.then(() => {
      done = true;
      running.delete(proc);
    });
    const stop = async () => {
      if (!done) {
        proc.kill('SIGTERM');
        await exited;
      }
    };
    let stderr = '';
    proc.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const started = Date.now();
    for (;;) {
      if (done) break;
      const server = await fetch(`http://127.0.0.1:${port}/`).then(
        (res) => res.headers.get('server') ?? '',
        () => '',
      );
      if (server.startsWith('nginx')) return { port, stop, errorLog };
      if (Date.now() - started > 10_000) {
        await stop();
        throw new Error(`nginx did not answer on ${port}\n${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (attempt >= 5 || !/Address already in use/.test(stderr + errorLog()))
      throw new Error(`nginx exited\n${stderr}\n${errorLog()}`);
  }
}
