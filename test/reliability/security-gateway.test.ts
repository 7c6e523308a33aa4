// Adversarial forward auth. The client controls every header and byte it
// sends to the gateway; whatever it adds, a request the rule table denies must never be
// approved. Check requests are built the way each gateway builds them
// (test/helpers/gateways.ts, from the configurations docs/forward-auth.md publishes and
// from permissive ones a gateway also allows) and sent byte for byte to a listening
// infracat; the path normaliser is fuzzed against reference resolutions; bodies past the
// limit are refused without being read. FUZZ_RUNS scales the generated cases.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import fc from 'fast-check';
import { normalisePath } from '../../src/gateway/path.js';
import { compileRules, DEFAULT_RULES_JSON, matchRule } from '../../src/gateway/rules.js';
import { build, mintToken } from '../helpers/app.js';
import { envoyAllowedHeaders, envoyPathPrefix, traefikForwardAuth } from '../helpers/forward-auth-doc.js';
import {
  CHECK_PATH,
  FAMILIES,
  spellings,
  spoofs,
  viaEnvoy,
  viaNginx,
  viaTraefik,
  type CheckRequest,
  type ClientRequest,
  type Header,
} from '../helpers/gateways.js';
import { rawRequest } from '../helpers/raw-http.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const NO_LIMITS = {
  RATE_LIMIT: '0',
  RATE_LIMIT_ANONYMOUS: '0',
  AUTH_FAILURE_LIMIT: '1000000',
  LOG_LEVEL: 'silent',
  LAST_USED_FLUSH_MS: '600000',
};

/** Requests an `apps:read` token must never get through (default rule table). */
const DENIED: readonly Omit<ClientRequest, 'headers'>[] = [
  { method: 'DELETE', target: '/apps/x' },
  { method: 'GET', target: '/admin' },
  { method: 'PUT', target: '/apps/x?scope=apps:read' },
  { method: 'POST', target: '/apps' },
  { method: 'GET', target: '/billing/1?scope=apps:read' },
  { method: 'GET', target: '/apps/%2e%2e/admin' },
  { method: 'GET', target: '/apps/%2e%2e/admin/%C0' },
  { method: 'GET', target: '/apps/..;/admin' },
  { method: 'GET', target: '/apps/%252e%252e/admin' },
  { method: 'GET', target: '/apps/..%2fadmin' },
  { method: 'GET', target: '/apps/..%5cadmin' },
];

async function listening(t: TestContext, gateway: string, env: Record<string, string> = {}) {
  const { app } = await build(t, { env: { ...NO_LIMITS, AUTH_CHECK_GATEWAY: gateway, ...env } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const reader = await mintToken(app, ['apps:read']);
  const port = (app.server.address() as net.AddressInfo).port;
  return { app, reader, send: (r: CheckRequest) => rawRequest(port, r.method, r.target, r.headers) };
}

interface Setup {
  name: string;
  modes: string[];
  forward: (client: ClientRequest) => CheckRequest;
}

function setups(): Setup[] {
  const traefikDoc = traefikForwardAuth();
  assert.ok(traefikDoc.authRequestHeaders !== undefined, 'the documented Traefik config names authRequestHeaders');
  assert.equal(
    traefikDoc.trustForwardHeader,
    false,
    'the documented Traefik config does not trust client X-Forwarded-*',
  );
  const envoy = { pathPrefix: envoyPathPrefix(), allowedHeaders: envoyAllowedHeaders() };
  for (const name of FAMILIES.flat())
    assert.ok(!envoy.allowedHeaders.includes(name.toLowerCase()), `the documented Envoy config does not pass ${name}`);
  return [
    { name: 'nginx (docs snippet)', modes: ['auto', 'nginx'], forward: viaNginx },
    {
      name: 'Traefik (docs config)',
      modes: ['auto', 'traefik'],
      forward: (c) => viaTraefik(c, { authRequestHeaders: traefikDoc.authRequestHeaders, trustForwardHeader: false }),
    },
    // Traefik's permissive set-up: authRequestHeaders unset, so every client header is copied.
    { name: 'Traefik (every client header copied)', modes: ['auto', 'traefik'], forward: (c) => viaTraefik(c) },
    { name: 'Envoy (docs config)', modes: ['auto', 'envoy'], forward: (c) => viaEnvoy(c, envoy) },
    {
      name: 'Envoy (every client header allowed)',
      modes: ['auto', 'envoy'],
      forward: (c) => viaEnvoy(c, { ...envoy, allowedHeaders: 'all' }),
    },
  ];
}

/** Runs `send` over the list a few at a time (the machine is shared). */
async function inBatches<T, R>(items: readonly T[], send: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += 16) out.push(...(await Promise.all(items.slice(i, i + 16).map(send))));
  return out;
}

describe('forward auth: a client cannot choose what is checked', () => {
  for (const setup of setups()) {
    for (const mode of setup.modes) {
      it(`${setup.name}, AUTH_CHECK_GATEWAY=${mode}: no spoof turns a 403 into a 200`, async (t) => {
        const { reader, send } = await listening(t, mode);
        const auth: Header = ['Authorization', `Bearer ${reader.secret}`];
        // The harness works: the same gateway passes a plain allowed request, denies a plain denied one.
        assert.equal(
          (await send(setup.forward({ method: 'GET', target: '/apps/x?y=1', headers: [auth] }))).status,
          200,
        );
        assert.equal((await send(setup.forward({ method: 'DELETE', target: '/apps/x', headers: [auth] }))).status, 403);

        // Every denied request as is; the first three (a write, no rule, a query) with every spoof.
        const cases = [
          ...DENIED.map((d) => ({ ...d, headers: [auth] })),
          ...DENIED.slice(0, 3).flatMap((d) => spoofs().map((spoof) => ({ ...d, headers: [auth, ...spoof] }))),
        ];
        const answers = await inBatches(cases, async (client) => ({ client, res: await send(setup.forward(client)) }));
        const approved = answers.filter(({ res }) => res.status !== 400 && res.status !== 403);
        assert.deepEqual(
          approved
            .slice(0, 5)
            .map(
              ({ client, res }) =>
                `${res.status} for ${client.method} ${client.target} with ${JSON.stringify(client.headers.slice(1))}`,
            ),
          [],
          `${approved.length} of ${answers.length} denied requests were not refused`,
        );
        // Generated spoofs too: any mix of the names, spellings and values above.
        const name = fc.constantFrom(...FAMILIES.flat(), 'Connection').chain((n) => fc.constantFrom(...spellings(n)));
        const value = fc.constantFrom(
          'GET',
          'HEAD',
          'get',
          'GET, DELETE',
          '',
          '/apps/x',
          '/apps',
          '/apps/x,/admin',
          '/apps/x?scope=apps:read',
          '/apps/%2e%2e/x',
          'X-Forwarded-Method',
          'X-Original-URI, X-Forwarded-Uri',
        );
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...DENIED),
            fc.array(fc.tuple(name, value), { minLength: 1, maxLength: 6 }),
            async (denied, spoof) => {
              const client = { ...denied, headers: [auth, ...spoof] };
              const res = await send(setup.forward(client));
              assert.ok(
                res.status === 400 || res.status === 403,
                `${res.status} for ${JSON.stringify(client)}: ${res.body}`,
              );
            },
          ),
          { numRuns: Math.max(20, Math.floor(RUNS / 4)) },
        );
      });
    }
  }

  it('a CORS preflight a gateway forwards is a check like any other, never a 2xx', async (t) => {
    // With CORS_ORIGINS set, the CORS plugin would answer an OPTIONS carrying Origin and
    // Access-Control-Request-Method with 204 before any authentication: a gateway that
    // forwards the method and those headers (Envoy; Traefik with preserveRequestMethod)
    // would take that for an approval and let the OPTIONS through unauthenticated.
    const { send } = await listening(t, 'auto', { CORS_ORIGINS: 'https://console.example.com' });
    const preflight: Header[] = [
      ['Origin', 'https://console.example.com'],
      ['Access-Control-Request-Method', 'DELETE'],
    ];
    const client: ClientRequest = { method: 'OPTIONS', target: '/apps/x', headers: preflight };
    const traefikKeepingMethod = { ...viaTraefik(client), method: 'OPTIONS' };
    for (const request of [
      viaEnvoy(client, { pathPrefix: CHECK_PATH, allowedHeaders: 'all' }),
      traefikKeepingMethod,
      { ...viaNginx(client), method: 'OPTIONS' },
    ]) {
      const res = await send(request);
      assert.equal(res.status, 401, `${request.method} ${request.target}: ${res.body}`);
      assert.equal(res.headers['access-control-allow-methods'], undefined);
    }
  });

  it("a named gateway refuses the others' forms, however a client dresses them up", async (t) => {
    const apps = {
      nginx: await listening(t, 'nginx'),
      traefik: await listening(t, 'traefik'),
      envoy: await listening(t, 'envoy'),
    };
    const envoy = { pathPrefix: CHECK_PATH, allowedHeaders: 'all' as const };
    for (const [mode, { reader, send }] of Object.entries(apps)) {
      const client: ClientRequest = {
        method: 'GET',
        target: '/apps/x',
        headers: [['Authorization', `Bearer ${reader.secret}`]],
      };
      const forms = { nginx: viaNginx(client), traefik: viaTraefik(client), envoy: viaEnvoy(client, envoy) };
      for (const [form, request] of Object.entries(forms)) {
        assert.equal(
          (await send(request)).status,
          form === mode ? 200 : 400,
          `${form} form, AUTH_CHECK_GATEWAY=${mode}`,
        );
      }
    }
  });
});

/** Strict percent-decoding (the normaliser's own rules); undefined when it cannot. */
function strictDecode(path: string): string | undefined {
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}

/** WHATWG URL resolution (browsers, Node's URL), then decoded. */
function whatwgPath(target: string): string | undefined {
  try {
    const url = new URL(target, 'http://infracat.test');
    if (url.host !== 'infracat.test') return undefined;
    return strictDecode(url.pathname);
  } catch {
    return undefined;
  }
}

/** Servlet-style resolution (Tomcat, Jetty): `;params` dropped per segment, each decoded, dots resolved. */
function servletPath(target: string): string | undefined {
  const out: string[] = [];
  for (const raw of (target.split('?')[0] ?? '').split('/').slice(1)) {
    const segment = strictDecode(raw.split(';')[0] ?? '');
    if (segment === undefined) return undefined;
    if (segment === '..') out.pop();
    else if (segment !== '.' && segment !== '') out.push(segment);
  }
  return `/${out.join('/')}`;
}

function underApps(path: string | undefined): boolean {
  return path !== undefined && (path === '/apps' || path.startsWith('/apps/'));
}

describe('the path normaliser fails closed', () => {
  const rules = compileRules(DEFAULT_RULES_JSON);
  const segment = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('apps', 'admin', 'billing', 'x', '1', '') },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '.',
        '..',
        '%2e',
        '%2E',
        '.%2e',
        '%2e.',
        '%2E%2e',
        '..;x',
        '.;',
        '%2e%2e%3b',
        '...',
        '.x',
        'x..',
      ),
    },
    { weight: 2, arbitrary: fc.constantFrom('%2f', '%2F', 'a%2fb', '..%2f', '\\', '%5c', '%5C', '..\\', 'a\\..') },
    { weight: 2, arbitrary: fc.constantFrom('%00', 'a%00b', '%0a', '%7f', '%C2%85', '\t', ' ') },
    {
      weight: 2,
      arbitrary: fc.constantFrom('%C0%AE', '%C0%AE%C0%AE', '%C0%AF', '%E0%80%AE', '%C0', '%ED%A0%80', '%F4%90%80%80'),
    },
    { weight: 2, arbitrary: fc.constantFrom('%', '%z', '%zz', '%4', '%g0', '%%32e') },
    { weight: 2, arbitrary: fc.constantFrom('%252e', '%252E%252e', '%25', '%255c', '%252f', '%2525') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '%EF%BC%8E',
        '%EF%BC%8E%EF%BC%8E',
        '%E2%80%A5',
        'caf%C3%A9',
        '%EF%BC%8F',
        '%EF%BC%BC',
        '%EF%BC%85',
        '%61pps',
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom('#', '?', '%23', '%3F', ';', '%3B') },
    { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom(...'ap.s%2eEfF5cC/\\;x0'), maxLength: 8 }) },
  );
  const target = fc
    .tuple(
      fc.constantFrom('/', '/apps/', '//', ''),
      fc.array(segment, { maxLength: 6 }),
      fc.constantFrom('', '?q=1', '?scope=apps:read', '#f'),
    )
    .map(([lead, segments, tail]) => `${lead}${segments.join('/')}${tail}`);

  it('never throws, and what it accepts is fully resolved', () => {
    fc.assert(
      fc.property(fc.oneof(target, fc.string({ unit: 'binary', maxLength: 40 })), (uri) => {
        const result = normalisePath(uri);
        if (!result.ok) return;
        const { path } = result;
        assert.ok(path.startsWith('/') && !path.startsWith('//'), path);
        const left = [...path].filter(
          (c) =>
            c === '%' || c === '\\' || c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f),
        );
        assert.deepEqual(left, [], `no escape, backslash or control left: ${JSON.stringify(path)}`);
        const segments = path.split('/').slice(1);
        assert.ok(
          segments.every((s) => s !== '.' && s !== '..' && !s.startsWith('..;') && (s !== '' || path === '/')),
          `no dot or empty segment: ${path}`,
        );
        assert.equal(strictDecode(path), path, 'a second decoding changes nothing');
      }),
      { numRuns: RUNS * 5 },
    );
  });

  it('a path the rules admit under /apps is under /apps for every reference resolution', () => {
    let admitted = 0;
    fc.assert(
      fc.property(target, (uri) => {
        const result = normalisePath(uri);
        if (!result.ok || matchRule(rules, 'GET', result.path) === null) return;
        admitted++;
        assert.ok(underApps(result.path));
        assert.ok(underApps(whatwgPath(uri)), `WHATWG resolves ${JSON.stringify(uri)} to ${whatwgPath(uri)}`);
        assert.ok(
          underApps(servletPath(uri)),
          `a servlet container resolves ${JSON.stringify(uri)} to ${servletPath(uri)}`,
        );
      }),
      { numRuns: RUNS * 5 },
    );
    assert.ok(admitted > 0, 'some generated paths were admitted: the property is not vacuous');
  });

  it('a refused path is a 400 problem at the check, through the header and the path form', async (t) => {
    const { reader, send } = await listening(t, 'auto');
    const auth: Header = ['Authorization', `Bearer ${reader.secret}`];
    for (const target of [
      '/apps/%2e%2e/admin/%C0',
      '/apps/%2e%2e/admin',
      '/apps/%00',
      '/apps/x\\..\\..\\admin',
      '/apps/%252e%252e/admin',
      '//apps/x',
    ]) {
      for (const request of [
        viaTraefik({ method: 'GET', target, headers: [auth] }),
        viaEnvoy({ method: 'GET', target, headers: [auth] }, { pathPrefix: CHECK_PATH, allowedHeaders: [] }),
      ]) {
        const res = await send(request);
        assert.equal(res.status, 400, `${request.target}: ${res.body}`);
        assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
        assert.equal((JSON.parse(res.body) as { code: string }).code, 'BAD_REQUEST');
      }
    }
  });
});

/**
 * Streams a chunked body of `total` bytes until the server answers or closes; resolves
 * with the status and how many body bytes were written by then.
 */
function streamBody(port: number, head: string, total: number): Promise<{ status: number; sent: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let sent = 0;
    let settled = false;
    let wake: (() => void) | undefined;
    const finish = () => {
      if (settled) return;
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      if (status === null) return;
      settled = true;
      socket.destroy();
      resolve({ status: Number(status[1]), sent });
    };
    socket.on('data', (c: Buffer) => {
      answer += c.toString('latin1');
      finish();
      wake?.();
    });
    socket.on('error', () => wake?.());
    socket.on('close', () => {
      finish();
      if (!settled) reject(new Error(`closed without an answer after ${sent} bytes: ${JSON.stringify(answer)}`));
      wake?.();
    });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const framed = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    void (async () => {
      socket.write(head);
      while (sent < total && !settled && !socket.destroyed) {
        sent += chunk.length;
        if (!socket.write(framed))
          await new Promise<void>((r) => {
            wake = r;
            socket.once('drain', r);
          });
      }
      if (!settled && !socket.destroyed) socket.write('0\r\n\r\n');
    })();
  });
}

describe('forward auth: bodies past the limit are refused, not drained', () => {
  const FIFTY_MB = 50 * 1024 * 1024;

  it('a 50 MB chunked body (POST or GET) is a 413 long before it is all sent; a declared one at once', async (t) => {
    const { app, reader } = await listening(t, 'auto');
    const port = (app.server.address() as net.AddressInfo).port;
    const common =
      `Host: x\r\nAuthorization: Bearer ${reader.secret}\r\n` + 'X-Original-Method: GET\r\nX-Original-URI: /apps/x\r\n';
    for (const method of ['POST', 'GET']) {
      const { status, sent } = await streamBody(
        port,
        `${method} ${CHECK_PATH} HTTP/1.1\r\n${common}` +
          'Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n',
        FIFTY_MB,
      );
      assert.equal(status, 413, method);
      assert.ok(sent < FIFTY_MB / 2, `${method}: the answer came after ${sent} bytes, not at the end of the body`);
    }
    const declared = await streamBody(
      port,
      `POST ${CHECK_PATH}/apps/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${reader.secret}\r\n` +
        `Content-Type: text/plain\r\nContent-Length: ${FIFTY_MB}\r\n\r\n`,
      0,
    );
    assert.equal(declared.status, 413);
    // A body within the limit from a gateway that forwards it still works.
    const small = await rawRequest(
      port,
      'POST',
      CHECK_PATH,
      [
        ['Authorization', `Bearer ${reader.secret}`],
        ['X-Original-Method', 'GET'],
        ['X-Original-URI', '/apps/x'],
        ['Content-Type', 'text/plain'],
      ],
      'x'.repeat(1000),
    );
    assert.equal(small.status, 200);
  });
});
