// The reference servers `npm run bench` measures infracat against, in the same run.
// Each answers GET /api/v1/plans with the body infracat serves:
//   C      bare node:http, infracat's headers byte for byte (a fresh request id each time)
//   D      bare node:http, only Content-Type and Content-Length
//   F      a minimal Fastify 5 route returning the same Buffer, no logger, infracat's headers
//   nginx  Debian's nginx-light, the body as a static file, infracat's headers, one process
// C is the ratio's denominator: what serving these bytes with these headers costs on Node.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, ROOT, waitUntilUp } from './builds.js';
import { serverEnv, spawnServer } from './load.js';

/** The headers a baseline copies: everything infracat sent but what node:http writes itself. */
export function copiedHeaders(headers: Record<string, string>): Record<string, string> {
  const own = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !own.has(k.toLowerCase())));
}

export interface Baseline {
  name: string;
  child: ChildProcess;
  url: string;
}

const NODE_PROGRAMS: Record<'C' | 'D' | 'F', string> = {
  C: `
    const { randomUUID } = require('node:crypto');
    const body = Buffer.from(process.env.BODY, 'base64');
    const headers = JSON.parse(process.env.HEADERS);
    const hasId = 'x-request-id' in headers;
    require('node:http').createServer((req, res) => {
      if (hasId) headers['x-request-id'] = randomUUID();
      headers['content-length'] = body.length;
      res.writeHead(200, headers);
      res.end(body);
    }).listen(Number(process.env.PORT), '127.0.0.1');`,
  D: `
    const body = Buffer.from(process.env.BODY, 'base64');
    require('node:http').createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    }).listen(Number(process.env.PORT), '127.0.0.1');`,
  F: `
    const { randomUUID } = require('node:crypto');
    const body = Buffer.from(process.env.BODY, 'base64');
    const headers = JSON.parse(process.env.HEADERS);
    const app = require(${JSON.stringify(path.join(ROOT, 'node_modules/fastify'))})({ logger: false });
    app.get('/api/v1/plans', (req, reply) => {
      reply.headers(headers);
      if ('x-request-id' in headers) reply.header('x-request-id', randomUUID());
      return body;
    });
    app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });`,
};

/** Starts baseline `name` (C, D or F), pinned when `pin`; resolves { name, child, url } (url: the base). */
export async function startNodeBaseline(
  name: 'C' | 'D' | 'F',
  body: Buffer,
  headers: Record<string, string>,
  pin: boolean,
): Promise<Baseline> {
  const port = await freePort();
  const child = spawnServer(
    process.execPath,
    ['-e', NODE_PROGRAMS[name]],
    {
      env: serverEnv({ BODY: body.toString('base64'), HEADERS: JSON.stringify(headers), PORT: String(port) }),
      stdio: ['ignore', 'ignore', 'inherit'],
    },
    pin,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitUntilUp(`${url}/api/v1/plans`, child);
  return { name, child, url };
}

/**
 * nginx serving the body as a static file with the same headers: one process (no master,
 * so its CPU time is one process's), open_file_cache, no access log, no etag or
 * last-modified of its own. Resolves { name, child, url }.
 */
export async function startNginx(
  nginx: string,
  dir: string,
  body: Buffer,
  headers: Record<string, string>,
  pin: boolean,
): Promise<Baseline> {
  const root = path.join(dir, 'nginx');
  mkdirSync(path.join(root, 'www/api/v1'), { recursive: true });
  mkdirSync(path.join(root, 'tmp'), { recursive: true });
  writeFileSync(path.join(root, 'www/api/v1/plans'), body);
  const port = await freePort();
  const add = Object.entries(headers)
    .filter(([k]) => k.toLowerCase() !== 'content-type' && k.toLowerCase() !== 'x-request-id')
    .map(([k, v]) => `      add_header ${k} ${JSON.stringify(String(v)).replaceAll('$', '\\$')} always;`)
    .join('\n');
  const conf = `
daemon off;
master_process off;
worker_processes 1;
pid ${root}/nginx.pid;
error_log ${root}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  server_tokens off;
  client_body_temp_path ${root}/tmp/body;
  proxy_temp_path ${root}/tmp/proxy;
  fastcgi_temp_path ${root}/tmp/fastcgi;
  uwsgi_temp_path ${root}/tmp/uwsgi;
  scgi_temp_path ${root}/tmp/scgi;
  open_file_cache max=16;
  open_file_cache_valid 60s;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  etag off;
  if_modified_since off;
  server {
    listen 127.0.0.1:${port};
    root ${root}/www;
    location / {
      types { }
      default_type ${JSON.stringify(headers['content-type'] ?? 'application/json')};
      add_header x-request-id $request_id always;
${add}
    }
  }
}
`;
  writeFileSync(path.join(root, 'nginx.conf'), conf);
  const child = spawnServer(nginx, ['-p', root, '-c', path.join(root, 'nginx.conf')], { stdio: 'ignore' }, pin);
  const url = `http://127.0.0.1:${port}`;
  await waitUntilUp(`${url}/api/v1/plans`, child);
  return { name: 'nginx', child, url };
}
