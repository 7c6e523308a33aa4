// No SSRF at delivery time: the address a delivery would connect to is checked where the
// connection is made (the socket's own lookup, an address literal before connecting), so
// a name that resolved to a public address when the webhook was created and resolves to a
// private one now (DNS rebinding) is refused then, as is a URL stored while private targets
// were allowed. The address rules themselves, range by range.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { refusedAddress } from '../../src/webhooks/addresses.js';
import { send } from '../../src/webhooks/send.js';
import type { ResolvedAddress, TargetPolicy } from '../../src/webhooks/targets.js';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { receiver, RECEIVER_ENV, TEST_ENCRYPTION_KEY } from '../helpers/webhooks.js';

const v = (address: string): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 });

describe('addresses a webhook may be delivered to', () => {
  it('public unicast only; every special range refused with its name', () => {
    const cases: [string, string | null][] = [
      ['93.184.215.14', null],
      ['8.8.8.8', null],
      ['2606:4700::6810:85e5', null],
      ['127.0.0.1', 'loopback'],
      ['127.255.255.254', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['172.32.0.1', null],
      ['192.168.1.1', 'private'],
      ['169.254.169.254', 'link-local'],
      ['100.64.0.1', 'shared (carrier-grade NAT)'],
      ['100.128.0.1', null],
      ['0.0.0.0', 'unspecified ("this network")'],
      ['224.0.0.251', 'multicast'],
      ['255.255.255.255', 'reserved'],
      ['198.18.0.1', 'reserved (benchmarking)'],
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'IPv4-mapped, loopback'],
      ['::ffff:a9fe:a9fe', 'IPv4-mapped, link-local'],
      ['::ffff:8.8.8.8', 'IPv4-mapped'],
      ['::127.0.0.1', 'IPv4-compatible'],
      ['64:ff9b::a00:1', 'NAT64 (carries an IPv4 address)'],
      ['fc00::1', 'unique-local'],
      ['fd12:3456::1', 'unique-local'],
      ['fe80::1', 'link-local'],
      ['fec0::1', 'site-local'],
      ['ff02::1', 'multicast'],
      ['2001:db8::1', 'documentation'],
      ['2001::1', 'Teredo (carries an IPv4 address)'],
      ['2002:7f00:1::1', '6to4 (carries an IPv4 address)'],
      ['4000::1', 'not global unicast'],
      ['localhost', 'not an IP address'],
    ];
    for (const [address, why] of cases) assert.equal(refusedAddress(address), why, address);
  });

  it('send() refuses a non-public address, literal or resolved, without connecting', async () => {
    const resolved: Record<string, string[]> = {
      'public.example.com': ['93.184.215.14'],
      'rebind.example.com': ['127.0.0.1'],
      'both.example.com': ['93.184.215.14', '10.0.0.1'],
    };
    const policy: TargetPolicy = {
      allowPrivate: false,
      resolve: (host) => Promise.resolve((resolved[host] ?? []).map(v)),
    };
    const attempt = (url: string) => send({ url, headers: {}, body: '{}', timeoutMs: 2000 }, policy);
    for (const [url, why] of [
      ['https://127.0.0.1:1/x', /127\.0\.0\.1 is not a public address \(loopback\)/],
      ['https://[::1]:1/x', /loopback/],
      ['https://[::ffff:7f00:1]:1/x', /IPv4-mapped, loopback/],
      ['https://rebind.example.com:1/x', /rebind\.example\.com resolves to 127\.0\.0\.1.*loopback/],
      ['https://both.example.com:1/x', /10\.0\.0\.1.*private/],
      ['http://public.example.com/x', /must be an https URL/],
    ] as const) {
      const result = await attempt(url);
      assert.equal(result.refused, true, url);
      assert.equal(result.statusCode, null);
      assert.match(result.error!, why, url);
    }
  });
});

for (const backend of backends()) {
  describe(`deliveries refused where they would land, on ${backend.name}`, () => {
    it('DNS rebinding (public at creation, loopback at delivery): a failed attempt, nothing sent', async (t) => {
      const r = await receiver(t);
      const port = new URL(r.url).port;
      let address = '93.184.215.14';
      const db = await backend.fresh(t);
      const { app } = await build(t, {
        store: db.open(),
        env: {
          DATABASE_URL: db.url,
          WEBHOOK_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEY,
          WEBHOOK_POLL_MS: '100',
          WEBHOOK_RETRY_DELAYS_S: '3600',
        },
        webhookResolver: (host) =>
          host === 'hooks.example.com' ? Promise.resolve([v(address)]) : Promise.reject(new Error('ENOTFOUND')),
      });
      const admin = await mintToken(app, ['webhooks:write', 'api-tokens:write', 'apps:read']);
      const made = await app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: admin.auth,
        payload: { url: `https://hooks.example.com:${port}/hook`, events: ['api_token.created'] },
      });
      assert.equal(made.statusCode, 201, made.body);
      const { id } = made.json<{ id: string }>();
      address = '127.0.0.1';
      app.infracat.webhooks.worker.start();
      await app.inject({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, headers: admin.auth });
      let log: { delivered: boolean; error: string | null; status_code: number | null }[] = [];
      for (let i = 0; i < 500 && log.length === 0; i++) {
        log = (await app.inject({ url: `/api/v1/webhooks/${id}/deliveries`, headers: admin.auth })).json();
        await new Promise((res) => setTimeout(res, 20));
      }
      assert.equal(log.length, 1);
      assert.equal(log[0]!.delivered, false);
      assert.equal(log[0]!.status_code, null);
      assert.match(log[0]!.error!, /refused: hooks\.example\.com resolves to 127\.0\.0\.1.*loopback/);
      assert.equal(r.received.length, 0, 'no connection reached the receiver');
    });

    it('a URL stored while private targets were allowed is refused once they are not', async (t) => {
      const r = await receiver(t);
      const db = await backend.fresh(t);
      const first = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...RECEIVER_ENV } });
      const admin = await mintToken(first.app, ['webhooks:write']);
      const made = await first.app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: admin.auth,
        payload: { url: r.url, events: ['api_token.created'] },
      });
      const { id } = made.json<{ id: string }>();
      await first.app.close();
      const { app } = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, ...RECEIVER_ENV, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' },
      });
      app.infracat.webhooks.worker.start();
      await app.inject({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, headers: admin.auth });
      let log: { error: string | null }[] = [];
      for (let i = 0; i < 500 && log.length === 0; i++) {
        log = (await app.inject({ url: `/api/v1/webhooks/${id}/deliveries`, headers: admin.auth })).json();
        await new Promise((res) => setTimeout(res, 20));
      }
      assert.match(log[0]!.error!, /must be an https URL/);
      assert.equal(r.received.length, 0);
    });
  });
}
