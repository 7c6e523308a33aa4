// Expiry notices under a controlled clock, on both backends: api_token.expiring 7 days and
// 1 day before a token's expiry (only the latest window for a token created inside one),
// api_token.expired when it passes, each once, even with two instances scanning at once;
// a rotation to a new expiry starts them over; a listening instance sends what is due at
// start.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { TEST_CONTEXT } from '../helpers/audit.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import type { App } from '../../src/http/types.js';
import { backends } from '../helpers/backends.js';
import { build, mintToken } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { receiver, RECEIVER_ENV, verified, type Receiver } from '../helpers/webhooks.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

for (const backend of backends()) {
  describe(`token expiry notices on ${backend.name}`, () => {
    async function setup(t: TestContext) {
      const clock = { offset: 0 };
      const now = () => Date.now() + clock.offset;
      const db = await backend.fresh(t);
      const built = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...RECEIVER_ENV }, now });
      const admin = await mintToken(built.app, ['webhooks:write']);
      const r = await receiver(t);
      const made = await built.app.inject({
        method: 'POST',
        url: '/api/v1/webhooks',
        headers: admin.auth,
        payload: { url: r.url, events: ['api_token.expiring', 'api_token.expired'] },
      });
      assert.equal(made.statusCode, 201, made.body);
      built.app.infracat.webhooks.worker.start();
      return { ...built, db, clock, now, r, secret: made.json<{ secret: string }>().secret };
    }

    const token = async (app: App, name: string, expiresAt: number | null) =>
      (
        await app.infracat.tokens.service.create(
          { name, scopes: ['apps:read'], expires_at: expiresAt === null ? null : new Date(expiresAt).toISOString() },
          null,
          OPERATOR_ACCOUNT_ID,
          TEST_CONTEXT,
        )
      ).token;

    /** `<type> <token name> <within>` of every notice received, in no particular order. */
    const notices = (r: Receiver, secret: string, from = 0) =>
      r.received
        .slice(from)
        .map((q) => {
          const p = verified(secret, q);
          const target = p.data.target as { name: string };
          const details = p.data.details as { within?: string };
          return `${p.type} ${target.name}${details.within === undefined ? '' : ` ${details.within}`}`;
        })
        .sort();

    async function scan(app: App, r: Receiver, expected: number): Promise<void> {
      await app.infracat.notices.run();
      await until(() => r.received.length >= expected, `${expected} notices`);
      await app.infracat.webhooks.worker.idle();
    }

    it('7 days and 1 day ahead, then at expiry, each once; created inside a window: that one', async (t) => {
      const { app, clock, now, r, secret } = await setup(t);
      const t0 = now();
      const tenDays = await token(app, 'ten days', t0 + 10 * DAY);
      await token(app, 'three days', t0 + 3 * DAY);
      await token(app, 'twelve hours', t0 + 12 * HOUR);
      await token(app, 'forever', null);
      await scan(app, r, 2);
      assert.deepEqual(notices(r, secret), ['api_token.expiring three days 7d', 'api_token.expiring twelve hours 1d']);
      const first = verified(secret, r.received[0]!);
      assert.equal(first.data.account_id, OPERATOR_ACCOUNT_ID);
      await scan(app, r, 2);
      assert.equal(r.received.length, 2, 'once: a second scan sends nothing');

      clock.offset = 3 * DAY + 60_000;
      await scan(app, r, 5);
      assert.deepEqual(
        notices(r, secret, 2),
        ['api_token.expired three days', 'api_token.expired twelve hours', 'api_token.expiring ten days 7d'].sort(),
      );
      clock.offset = 9 * DAY + 60_000;
      await scan(app, r, 6);
      clock.offset = 10 * DAY + 60_000;
      await scan(app, r, 7);
      await scan(app, r, 7);
      assert.equal(r.received.length, 7);
      const all = notices(r, secret);
      assert.deepEqual(
        all.filter((n) => n.includes('ten days')),
        ['api_token.expired ten days', 'api_token.expiring ten days 1d', 'api_token.expiring ten days 7d'],
      );
      assert.ok(all.every((n) => !n.includes('forever')));
      const expired = r.received.map((q) => verified(secret, q)).find((p) => p.type === 'api_token.expired')!;
      assert.deepEqual(Object.keys(expired.data).sort(), ['account_id', 'details', 'target']);
      assert.equal((expired.data.target as { id: string; type: string }).type, 'api_token');
      assert.match((expired.data.details as { expires_at: string }).expires_at, /Z$/);
      assert.ok(tenDays.id.length > 0);
    });

    it('a rotation to a new expiry starts its notices over; the same expiry keeps where they are', async (t) => {
      const { app, clock, now, r, secret } = await setup(t);
      const t0 = now();
      const soon = await token(app, 'soon', t0 + 2 * DAY);
      await scan(app, r, 1);
      await app.infracat.tokens.service.rotate(OPERATOR_ACCOUNT_ID, soon.id, { grace_period_s: 0 }, null, TEST_CONTEXT);
      await app.infracat.notices.run();
      await app.infracat.webhooks.worker.idle();
      assert.equal(r.received.length, 1, 'the same expiry: no notice again');
      await app.infracat.tokens.service.rotate(
        OPERATOR_ACCOUNT_ID,
        soon.id,
        { grace_period_s: 0, expires_at: new Date(t0 + 30 * DAY).toISOString() },
        null,
        TEST_CONTEXT,
      );
      await app.infracat.notices.run();
      await app.infracat.webhooks.worker.idle();
      assert.equal(r.received.length, 1, 'a month away: nothing due yet');
      clock.offset = 23 * DAY + 60_000;
      await scan(app, r, 2);
      assert.deepEqual(notices(r, secret), ['api_token.expiring soon 7d', 'api_token.expiring soon 7d']);
    });

    it('two instances scanning at once send each notice once', async (t) => {
      const { app, db, now, r } = await setup(t);
      const other = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...RECEIVER_ENV }, now });
      const t0 = now();
      for (let i = 0; i < 40; i++) await token(app, `t${i}`, t0 + (1 + i) * HOUR);
      await Promise.all([app.infracat.notices.run(), other.app.infracat.notices.run()]);
      await until(() => r.received.length >= 40, '40 notices');
      await app.infracat.webhooks.worker.idle();
      await new Promise((res) => setTimeout(res, 300));
      assert.equal(r.received.length, 40);
      assert.equal(new Set(r.received.map((q) => q.headers['webhook-id'])).size, 40);
    });

    it('a listening instance sends the notices due at start', async (t) => {
      const { app, now, r, secret } = await setup(t);
      await token(app, 'due', now() + 6 * DAY);
      await app.listen({ port: 0, host: '127.0.0.1' });
      await until(() => r.received.length === 1, 'the notice');
      assert.deepEqual(notices(r, secret), ['api_token.expiring due 7d']);
    });
  });
}
