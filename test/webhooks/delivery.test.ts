// Deliveries to real receivers (node:http on loopback addresses, WEBHOOK_ALLOW_PRIVATE_TARGETS=true)
// on both backends: Standard Webhooks signatures that the standardwebhooks package verifies,
// the body of each kind of event, which webhooks get which events (types, accounts, the
// operator's all_accounts), retries after a 500, a timeout and a receiver that is down for a
// while, the delivery log walked page by page, redirects not followed, bounded answers and
// concurrency (per host and per instance), two signatures after a rotation and the new
// secret's alone once its 24 hours have passed, the test event, and a webhook disabled after
// failing for 24 hours (a controlled clock skips retry delays and days).
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import type { App } from '../../src/http/types.js';
import { allEvents, customer, OPERATOR_SCOPES, type Auth } from '../helpers/audit-http.js';
import { backends } from '../helpers/backends.js';
import { build, mintToken } from '../helpers/app.js';
import { parseExposition, value } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';
import { receiver, RECEIVER_ENV, verified, type Receiver } from '../helpers/webhooks.js';

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  delivered: boolean;
  error: string | null;
  next_attempt_at: string | null;
  duration_ms: number;
}

async function hook(app: App, auth: Auth, payload: object): Promise<{ id: string; secret: string }> {
  const res = await app.inject({ method: 'POST', url: '/api/v1/webhooks', headers: auth, payload });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** POST .../rotate-secret: the new secret. */
async function rotateSecret(app: App, auth: Auth, id: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${id}/rotate-secret`, headers: auth });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ secret: string }>().secret;
}

async function deliveries(app: App, auth: Auth, id: string): Promise<Delivery[]> {
  const res = await app.inject({ url: `/api/v1/webhooks/${id}/deliveries?per_page=100`, headers: auth });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** One page of a delivery log, and where its `Link: <...>; rel="next"` points (null: the last page). */
async function deliveryPage(app: App, auth: Auth, url: string): Promise<{ items: Delivery[]; next: string | null }> {
  const res = await app.inject({ url, headers: auth });
  assert.equal(res.statusCode, 200, res.body);
  const link = res.headers.link;
  if (link === undefined) return { items: res.json(), next: null };
  const next = /^<([^>]+)>; rel="next"$/.exec(String(link));
  assert.ok(next !== null, String(link));
  return { items: res.json(), next: next[1]! };
}

/** The delivery log once it holds at least `n` attempts (polled: an attempt is recorded after its answer). */
async function logged(app: App, auth: Auth, id: string, n: number): Promise<Delivery[]> {
  const end = Date.now() + 20_000;
  for (;;) {
    const log = await deliveries(app, auth, id);
    if (log.length >= n) return log;
    assert.ok(Date.now() < end, `${n} attempts in the log of ${id}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

/** Creates a token in the account of `auth` over the API: an api_token.created event there. */
async function makeToken(app: App, auth: Auth, name: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/api-tokens',
    headers: auth,
    payload: { name, scopes: ['apps:read'] },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string }>().id;
}

for (const backend of backends()) {
  describe(`webhook deliveries on ${backend.name}`, () => {
    async function setup(t: TestContext, env: Record<string, string> = {}, now?: () => number) {
      const db = await backend.fresh(t);
      const built = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, RATE_LIMIT: '0', ...RECEIVER_ENV, ...env },
        ...(now !== undefined ? { now } : {}),
      });
      const operator = await mintToken(built.app, [...OPERATOR_SCOPES, 'webhooks:write'], 'operator');
      built.app.infracat.webhooks.worker.start();
      return { ...built, db, operator };
    }

    it('signed as Standard Webhooks (the standardwebhooks package verifies); an audited change as body', async (t) => {
      const { app, operator } = await setup(t);
      const r = await receiver(t);
      const { id, secret } = await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      const tokenId = await makeToken(app, operator.auth, 'deploy');
      await until(() => r.received.length === 1, 'the delivery');
      const request = r.received[0]!;
      const payload = verified(secret, request);
      assert.equal(request.headers['content-type'], 'application/json');
      assert.match(String(request.headers['user-agent']), /^infracat-webhooks\//);
      assert.match(String(request.headers['webhook-id']), /^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.ok(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
      assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
      assert.equal(payload.type, 'api_token.created');
      assert.match(payload.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.equal(payload.data.id, request.headers['webhook-id'], 'webhook-id is the audit event id');
      assert.equal(payload.data.action, 'api_token.created');
      assert.equal(payload.data.account_id, OPERATOR_ACCOUNT_ID);
      assert.deepEqual(payload.data.target, { type: 'api_token', id: tokenId, name: 'deploy' });
      assert.deepEqual((payload.data.actor as { type: string }).type, 'api_token');
      assert.doesNotMatch(request.body, /icat_[A-Za-z0-9]{30}/, 'no token secret');
      assert.ok(!request.body.includes(secret.slice(6)), 'no webhook secret');
      // A tampered body or a wrong secret does not verify.
      assert.throws(() => verified(secret, { ...request, body: request.body.replace('deploy', 'deplox') }));
      assert.throws(() => verified(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, request));
      const log = await logged(app, operator.auth, id, 1);
      assert.equal(log.length, 1);
      assert.equal(log[0]!.event_id, request.headers['webhook-id']);
      assert.equal(log[0]!.event_type, 'api_token.created');
      assert.equal(log[0]!.attempt, 1);
      assert.equal(log[0]!.status_code, 204);
      assert.equal(log[0]!.delivered, true);
      assert.equal(log[0]!.error, null);
      assert.equal(log[0]!.next_attempt_at, null);
    });

    it('each webhook gets its types of its own account; all_accounts gets every account', async (t) => {
      const { app, operator } = await setup(t);
      const scopes = ['webhooks:write', 'api-tokens:write', 'apps:read'];
      const acme = await customer(app, operator.auth, scopes, 'Acme');
      const globex = await customer(app, operator.auth, scopes, 'Globex');
      const [ra, rg, rall, rdel] = [await receiver(t), await receiver(t), await receiver(t), await receiver(t)];
      const a = await hook(app, acme.auth, { url: ra.url, events: ['api_token.created', 'account.updated'] });
      const g = await hook(app, globex.auth, { url: rg.url, events: ['api_token.created'] });
      const all = await hook(app, operator.auth, {
        url: rall.url,
        events: ['api_token.created', 'account.updated'],
        all_accounts: true,
      });
      await hook(app, acme.auth, { url: rdel.url, events: ['api_token.deleted'] });
      const off = await hook(app, acme.auth, { url: rdel.url, events: ['api_token.created'] });
      await app.inject({
        method: 'PATCH',
        url: `/api/v1/webhooks/${off.id}`,
        headers: acme.auth,
        payload: { enabled: false },
      });
      await makeToken(app, acme.auth, 'acme token');
      await makeToken(app, globex.auth, 'globex token');
      // The operator renames Acme: an account.updated event in Acme's trail, made by the operator.
      await app.inject({
        method: 'PATCH',
        url: `/api/v1/accounts/${acme.account.id}`,
        headers: operator.auth,
        payload: { name: 'Acme Corp' },
      });
      await until(() => ra.received.length === 2 && rg.received.length === 1 && rall.received.length === 3, 'fan-out');
      await app.infracat.webhooks.worker.idle();
      const types = (r: Receiver, secret: string) =>
        r.received.map((q) => {
          const p = verified(secret, q);
          return `${p.type} ${String(p.data.account_id)}`;
        });
      assert.deepEqual(types(ra, a.secret).sort(), [
        `account.updated ${acme.account.id}`,
        `api_token.created ${acme.account.id}`,
      ]);
      assert.deepEqual(types(rg, g.secret), [`api_token.created ${globex.account.id}`]);
      assert.deepEqual(types(rall, all.secret).sort(), [
        `account.updated ${acme.account.id}`,
        `api_token.created ${acme.account.id}`,
        `api_token.created ${globex.account.id}`,
      ]);
      assert.equal(rdel.received.length, 0, 'neither an unsubscribed type nor a disabled webhook');
      // The operator's change: to Acme's webhook as Acme's trail shows it (the operator, unnamed);
      // to the operator's all_accounts webhook whole.
      const renamed = (r: Receiver, secret: string) =>
        r.received.map((q) => verified(secret, q)).find((p) => p.type === 'account.updated')!.data;
      assert.deepEqual(renamed(ra, a.secret).actor, { type: 'operator', id: null, name: null });
      assert.equal(renamed(ra, a.secret).ip, null);
      assert.equal((renamed(rall, all.secret).actor as { name: string }).name, 'operator');
      assert.equal(
        ra.received.find((q) => verified(a.secret, q).type === 'account.updated')!.headers['webhook-id'],
        rall.received.find((q) => verified(all.secret, q).type === 'account.updated')!.headers['webhook-id'],
        'one event, one webhook-id',
      );
    });

    it('retries after a 500 and a timeout, with the same webhook-id and body; each attempt logged', async (t) => {
      const { app, operator } = await setup(t, { WEBHOOK_TIMEOUT_MS: '300' });
      const r = await receiver(t);
      r.answer((_q, i) => (i === 0 ? 500 : i === 1 ? 'hang' : 200));
      const { id, secret } = await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      await makeToken(app, operator.auth, 'retried');
      await until(() => r.received.length === 3, 'three attempts');
      await app.infracat.webhooks.worker.idle();
      const [first, second, third] = r.received;
      for (const q of r.received) verified(secret, q);
      assert.equal(second!.headers['webhook-id'], first!.headers['webhook-id']);
      assert.equal(third!.headers['webhook-id'], first!.headers['webhook-id']);
      assert.equal(second!.body, first!.body);
      assert.equal(third!.body, first!.body);
      assert.ok(second!.at - first!.at >= 900, 'the retry waits its delay (WEBHOOK_RETRY_DELAYS_S=1)');
      const log = await deliveries(app, operator.auth, id);
      assert.deepEqual(
        log.map((d) => [d.attempt, d.status_code, d.delivered]),
        [
          [3, 200, true],
          [2, null, false],
          [1, 500, false],
        ],
        'newest first',
      );
      assert.equal(log[2]!.error, 'answered 500');
      assert.equal(log[1]!.error, 'timed out after 300 ms');
      assert.ok(log[1]!.duration_ms >= 290);
      assert.ok(log[2]!.next_attempt_at !== null && log[0]!.next_attempt_at === null);
      const webhook = await app.inject({ url: `/api/v1/webhooks/${id}`, headers: operator.auth });
      assert.equal(webhook.json<{ failing_since: string | null }>().failing_since, null, 'a success clears it');
      const metrics = parseExposition((await app.inject({ url: '/metrics' })).body);
      assert.equal(value(metrics, 'infracat_webhook_attempts_total', { outcome: 'delivered' }), 1);
      assert.equal(value(metrics, 'infracat_webhook_attempts_total', { outcome: 'failed' }), 2);
    });

    it('the delivery log pages newest first: following Link walks every attempt once, then ends', async (t) => {
      let offset = 0;
      const { app, operator } = await setup(t, { WEBHOOK_RETRY_DELAYS_S: '60' }, () => Date.now() + offset);
      const r = await receiver(t);
      r.answer((_q, i) => (i < 4 ? 500 : 204));
      const { id } = await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      await makeToken(app, operator.auth, 'first');
      await makeToken(app, operator.auth, 'second');
      // Two events, each failing twice, then delivered: the clock skips each retry delay.
      await logged(app, operator.auth, id, 2);
      offset += 61_000;
      await logged(app, operator.auth, id, 4);
      offset += 61_000;
      await logged(app, operator.auth, id, 6);
      await app.infracat.webhooks.worker.idle();
      const whole = await deliveries(app, operator.auth, id);
      assert.equal(whole.length, 6);
      assert.equal(whole.filter((d) => d.delivered).length, 2);
      for (const perPage of [1, 4]) {
        const walked: Delivery[] = [];
        let url: string | null = `/api/v1/webhooks/${id}/deliveries?per_page=${perPage}`;
        let pages = 0;
        while (url !== null) {
          const { items, next } = await deliveryPage(app, operator.auth, url);
          assert.ok(items.length >= 1 && items.length <= perPage, `page ${pages + 1} holds 1 to ${perPage}`);
          walked.push(...items);
          pages += 1;
          if (next !== null)
            assert.match(next, new RegExp(`^/api/v1/webhooks/${id}/deliveries\\?per_page=${perPage}&cursor=`));
          url = next;
          assert.ok(pages <= 6, 'the walk ends');
        }
        assert.equal(pages, Math.ceil(6 / perPage), `pages of ${perPage}`);
        const ids = walked.map((d) => d.id);
        assert.equal(new Set(ids).size, ids.length, 'no attempt twice');
        assert.deepEqual(
          ids,
          whole.map((d) => d.id),
          'every attempt, in order',
        );
        const times = walked.map((d) => Date.parse(d.attempted_at));
        assert.deepEqual(
          times,
          [...times].sort((a, b) => b - a),
          'newest first',
        );
        for (const event of new Set(walked.map((d) => d.event_id)))
          assert.deepEqual(
            walked.filter((d) => d.event_id === event).map((d) => [d.attempt, d.delivered]),
            [
              [3, true],
              [2, false],
              [1, false],
            ],
          );
      }
    });

    it('a receiver down for a while, then back: delivered once it answers', async (t) => {
      const { app, operator } = await setup(t);
      const r = await receiver(t);
      const { id, secret } = await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      await r.close();
      await makeToken(app, operator.auth, 'while down');
      const log = await logged(app, operator.auth, id, 2);
      assert.ok(
        log.every((d) => !d.delivered && d.status_code === null && /ECONNREFUSED/.test(d.error!)),
        log[0]!.error!,
      );
      const failing = await app.inject({ url: `/api/v1/webhooks/${id}`, headers: operator.auth });
      assert.notEqual(failing.json<{ failing_since: string | null }>().failing_since, null);
      await r.listen();
      await until(() => r.received.length === 1, 'delivered once back');
      assert.equal(verified(secret, r.received[0]!).type, 'api_token.created');
    });

    it('redirects are not followed: a 3xx is a failure, and its Location gets nothing', async (t) => {
      const { app, operator } = await setup(t, { WEBHOOK_RETRY_DELAYS_S: '3600' });
      const target = await receiver(t);
      const r = await receiver(t);
      r.answer(() => ({ status: 302, headers: { location: target.url } }));
      const { id } = await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      await makeToken(app, operator.auth, 'redirected');
      await until(() => r.received.length === 1, 'the attempt');
      await app.infracat.webhooks.worker.idle();
      const [attempt] = await deliveries(app, operator.auth, id);
      assert.equal(attempt!.status_code, 302);
      assert.equal(attempt!.delivered, false);
      assert.match(attempt!.error!, /redirects are not followed/);
      assert.equal(target.received.length, 0);
    });

    it('bounded answers: a huge body is not read to its end; oversized headers are a failure', async (t) => {
      const { app, operator } = await setup(t, { WEBHOOK_RETRY_DELAYS_S: '3600', WEBHOOK_TIMEOUT_MS: '5000' });
      const big = await receiver(t);
      big.answer(() => ({ status: 200, body: 'x'.repeat(8 * 1024 * 1024) }));
      const headers = await receiver(t);
      headers.answer(() => ({ status: 200, headers: { 'x-big': 'y'.repeat(16 * 1024) } }));
      const a = await hook(app, operator.auth, { url: big.url, events: ['api_token.created'] });
      const b = await hook(app, operator.auth, { url: headers.url, events: ['api_token.created'] });
      await makeToken(app, operator.auth, 'bounded');
      await until(() => big.received.length === 1 && headers.received.length === 1, 'both attempts');
      await app.infracat.webhooks.worker.idle();
      const [bigAttempt] = await deliveries(app, operator.auth, a.id);
      assert.equal(bigAttempt!.delivered, true);
      const [headerAttempt] = await deliveries(app, operator.auth, b.id);
      assert.equal(headerAttempt!.delivered, false);
      assert.match(headerAttempt!.error!, /HPE_HEADER_OVERFLOW|header/i);
    });

    it('bounded concurrency: at most WEBHOOK_CONCURRENCY_PER_HOST at once to one host', async (t) => {
      const { app, operator } = await setup(t, { WEBHOOK_CONCURRENCY: '4', WEBHOOK_CONCURRENCY_PER_HOST: '2' });
      const r = await receiver(t);
      r.answer(() => ({ status: 204, delayMs: 400 }));
      await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      for (let i = 0; i < 8; i++) await makeToken(app, operator.auth, `t${i}`);
      await until(() => r.received.length === 8, 'every delivery');
      assert.equal(r.maxInFlight, 2);
    });

    it('bounded concurrency: at most WEBHOOK_CONCURRENCY at once per instance, whatever the hosts', async (t) => {
      const { app, operator } = await setup(t, { WEBHOOK_CONCURRENCY: '4', WEBHOOK_CONCURRENCY_PER_HOST: '2' });
      // Three hosts of two slots each: six could run at once, the instance's four bind.
      const rs = [
        await receiver(t, '/hook', '127.0.0.1'),
        await receiver(t, '/hook', '127.0.0.2'),
        await receiver(t, '/hook', '127.0.0.3'),
      ];
      // Requests only ever arrive one at a time: the sum at each arrival is the instance's peak.
      let most = 0;
      for (const r of rs)
        r.answer(() => {
          most = Math.max(
            most,
            rs.reduce((n, q) => n + q.inFlight, 0),
          );
          return { status: 204, delayMs: 400 };
        });
      for (const r of rs) await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      for (let i = 0; i < 4; i++) await makeToken(app, operator.auth, `t${i}`);
      await until(() => rs.every((r) => r.received.length === 4), 'every delivery');
      assert.equal(most, 4, "the instance's limit, reached and never passed");
      for (const r of rs) assert.ok(r.maxInFlight <= 2, `at most 2 at once to ${r.url}`);
    });

    it('after rotate-secret both secrets verify for 24 h: two signatures, the new one first', async (t) => {
      const { app, operator } = await setup(t);
      const r = await receiver(t);
      const { id, secret: old } = await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      const fresh = await rotateSecret(app, operator.auth, id);
      await makeToken(app, operator.auth, 'after rotation');
      await until(() => r.received.length === 1, 'the delivery');
      const request = r.received[0]!;
      const signatures = String(request.headers['webhook-signature']).split(' ');
      assert.equal(signatures.length, 2);
      verified(fresh, request);
      verified(old, request);
      assert.throws(() =>
        verified(fresh, { ...request, headers: { ...request.headers, 'webhook-signature': signatures[1] } }),
      );
      verified(fresh, { ...request, headers: { ...request.headers, 'webhook-signature': signatures[0] } });
    });

    it("24 h after rotate-secret: one signature, the new secret's; the previous one no longer verifies", async (t) => {
      let offset = 0;
      const { app, operator } = await setup(t, {}, () => Date.now() + offset);
      const r = await receiver(t);
      const { id, secret: old } = await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      const fresh = await rotateSecret(app, operator.auth, id);
      offset = 24 * 3_600_000 + 1000;
      const webhook = (await app.inject({ url: `/api/v1/webhooks/${id}`, headers: operator.auth })).json<{
        previous_secret_expires_at: string;
      }>();
      assert.ok(Date.parse(webhook.previous_secret_expires_at) < Date.now() + offset, 'its 24 h have passed');
      await makeToken(app, operator.auth, 'a day after rotation');
      await until(() => r.received.length === 1, 'the delivery');
      const request = r.received[0]!;
      assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/, 'one signature');
      assert.equal(verified(fresh, request).type, 'api_token.created');
      assert.throws(() => verified(old, request), /signature/i);
    });

    it('test: a webhook.test event to that webhook alone, whatever it subscribes to', async (t) => {
      const { app, operator } = await setup(t);
      const r = await receiver(t);
      const other = await receiver(t);
      const { id, secret } = await hook(app, operator.auth, { url: r.url, events: ['account.deleted'] });
      await hook(app, operator.auth, { url: other.url, events: ['account.deleted'] });
      const res = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, headers: operator.auth });
      assert.equal(res.statusCode, 202);
      await until(() => r.received.length === 1, 'the test event');
      const payload = verified(secret, r.received[0]!);
      assert.equal(payload.type, 'webhook.test');
      assert.equal(r.received[0]!.headers['webhook-id'], res.json<{ event_id: string }>().event_id);
      assert.deepEqual(payload.data, {
        account_id: OPERATOR_ACCOUNT_ID,
        target: { type: 'webhook', id, name: null },
        details: {},
      });
      await app.infracat.webhooks.worker.idle();
      assert.equal(other.received.length, 0);
    });

    it('failing for 24 hours: disabled, with a webhook.disabled event; enabling starts it afresh', async (t) => {
      let offset = 0;
      const { app, operator, store } = await setup(t, {}, () => Date.now() + offset);
      const r = await receiver(t);
      r.answer(() => 503);
      const { id } = await hook(app, operator.auth, { url: r.url, events: ['api_token.created'] });
      await makeToken(app, operator.auth, 'one');
      await until(() => r.received.length >= 1, 'the first attempt');
      await app.infracat.webhooks.worker.idle();
      const failing = await app.inject({ url: `/api/v1/webhooks/${id}`, headers: operator.auth });
      assert.notEqual(failing.json<{ failing_since: string | null }>().failing_since, null);
      assert.equal(failing.json<{ enabled: boolean }>().enabled, true);
      // A day later, still failing: the next attempt disables it.
      offset = 24 * 3_600_000 + 5000;
      await until(() => r.received.length >= 2, 'an attempt a day later');
      await app.infracat.webhooks.worker.idle();
      const disabled = (await app.inject({ url: `/api/v1/webhooks/${id}`, headers: operator.auth })).json<{
        enabled: boolean;
        disabled_reason: string | null;
      }>();
      assert.equal(disabled.enabled, false);
      assert.equal(disabled.disabled_reason, 'failing');
      const metrics = parseExposition((await app.inject({ url: '/metrics' })).body);
      assert.equal(value(metrics, 'infracat_webhooks_disabled_total'), 1);
      const [event] = await allEvents(app, operator.auth, '?action=webhook.disabled');
      assert.equal(event!.target.id, id);
      assert.equal(event!.actor.type, 'system');
      assert.equal(event!.details.reason, 'failing');
      assert.deepEqual(await store.webhooks.pending(Date.now() + 10 * 86_400_000, 10), [], 'its outbox is emptied');
      // Disabled: new events are not even queued.
      const before = r.received.length;
      await makeToken(app, operator.auth, 'two');
      assert.deepEqual(await store.webhooks.pending(Date.now() + 10 * 86_400_000, 10), []);
      const enabled = await app.inject({
        method: 'PATCH',
        url: `/api/v1/webhooks/${id}`,
        headers: operator.auth,
        payload: { enabled: true },
      });
      const after = enabled.json<{ enabled: boolean; disabled_reason: string | null; failing_since: string | null }>();
      assert.deepEqual([after.enabled, after.disabled_reason, after.failing_since], [true, null, null]);
      assert.equal(r.received.length, before);
    });
  });
}
