// Two instances on one database share the deliveries: each claims what is due with the
// store's claim (PostgreSQL: FOR UPDATE SKIP LOCKED and a lease), so every event reaches
// the receiver exactly once between them, and both take part.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { build, mintToken } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { until } from '../helpers/until.js';
import { receiver, RECEIVER_ENV, verified } from '../helpers/webhooks.js';

const EVENTS = 60;

for (const backend of backends()) {
  describe(`two instances delivering on ${backend.name}`, () => {
    it('deliver each event exactly once between them, both taking part', { timeout: 120_000 }, async (t) => {
      const db = await backend.fresh(t);
      const env = {
        DATABASE_URL: db.url,
        ...RECEIVER_ENV,
        RATE_LIMIT: '0',
        WEBHOOK_POLL_MS: '50',
        WEBHOOK_CONCURRENCY: '3',
      };
      const a = await build(t, { store: db.open(), env });
      const b = await build(t, { store: db.open(), env });
      const r = await receiver(t);
      r.answer(() => ({ status: 204, delayMs: 30 }));
      const admin = await mintToken(a.app, ['webhooks:write', 'api-tokens:write', 'apps:read']);
      const made = await a.app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: admin.auth,
        payload: { url: r.url, events: ['api_token.created'] },
      });
      const { secret } = made.json<{ secret: string }>();
      a.app.infracat.webhooks.worker.start();
      b.app.infracat.webhooks.worker.start();
      for (let i = 0; i < EVENTS; i++) {
        const app = i % 2 === 0 ? a.app : b.app;
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: admin.auth,
          payload: { name: `t${i}`, scopes: ['apps:read'] },
        });
        assert.equal(res.statusCode, 201);
      }
      await until(() => r.received.length >= EVENTS, `${EVENTS} deliveries`, 60_000);
      await a.app.infracat.webhooks.worker.idle();
      await b.app.infracat.webhooks.worker.idle();
      // Longer than a poll of either: a second delivery of any event would have come by now.
      await new Promise((res) => setTimeout(res, 500));
      assert.equal(r.received.length, EVENTS);
      const ids = r.received.map((q) => q.headers['webhook-id']);
      assert.equal(new Set(ids).size, EVENTS, 'no event twice');
      for (const q of r.received) verified(secret, q);
      const [da, dbb] = [
        a.app.infracat.webhooks.worker.stats.delivered,
        b.app.infracat.webhooks.worker.stats.delivered,
      ];
      assert.equal(da + dbb, EVENTS);
      assert.ok(da > 0 && dbb > 0, `both delivered (${da} and ${dbb})`);
      assert.deepEqual(await a.store.webhooks.pending(Date.now() + 86_400_000, 10), [], 'the outbox is empty');
    });
  });
}
