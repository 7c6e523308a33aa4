// At least once across kill -9: the server as a child process on a real database (a SQLite
// file, PostgreSQL), changes acknowledged while their deliveries are in flight (the receiver
// holds every request without answering) or still queued, then `kill -9`; after a restart
// every acknowledged change is delivered, signed, with the webhook-id it had.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backends } from '../helpers/backends.js';
import { cli, serve } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { receiver, RECEIVER_ENV, verified } from '../helpers/webhooks.js';

for (const backend of backends()) {
  describe(`webhook deliveries across kill -9 on ${backend.name}`, () => {
    it('every change acknowledged before the kill is delivered after the restart', { timeout: 120_000 }, async (t) => {
      const db = await backend.fresh(t);
      const env = {
        DATABASE_URL: db.url,
        ...RECEIVER_ENV,
        RATE_LIMIT: '0',
        BOOTSTRAP_ADMIN_TOKEN: 'false',
        WEBHOOK_TIMEOUT_MS: '1000',
        WEBHOOK_CONCURRENCY: '4',
        WEBHOOK_CONCURRENCY_PER_HOST: '2',
      };
      const made = await cli(
        ['tokens', 'create', '--name', 'admin', '--scopes', 'api-tokens:write,apps:read,webhooks:write', '--json'],
        { env },
      );
      assert.equal(made.code, 0, made.stderr);
      const auth = { authorization: `Bearer ${(JSON.parse(made.stdout) as { token: string }).token}` };
      const r = await receiver(t);
      r.answer(() => 'hang');

      const first = await serve(env);
      const hook = await fetch(`${first.url}/api/v1/webhooks`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ url: r.url, events: ['api_token.created'] }),
      });
      assert.equal(hook.status, 201);
      const { secret } = (await hook.json()) as { secret: string };
      const acknowledged: string[] = [];
      await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          const res = await fetch(`${first.url}/api/v1/api-tokens`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `t${i}`, scopes: ['apps:read'] }),
          });
          assert.equal(res.status, 201);
          acknowledged.push(((await res.json()) as { id: string }).id);
        }),
      );
      // Some deliveries are in flight (held by the receiver), the rest queued behind them.
      await until(() => r.received.length >= 2, 'deliveries in flight');
      first.child.proc.kill('SIGKILL');
      assert.equal((await first.child.exited).signal, 'SIGKILL');
      const heldBeforeKill = r.received.length;
      assert.ok(heldBeforeKill < acknowledged.length, 'not everything was even attempted before the kill');

      r.answer(() => 204);
      const second = await serve(env);
      t.after(async () => {
        second.child.proc.kill('SIGTERM');
        await second.child.exited;
      });
      const delivered = () =>
        new Set(r.received.slice(heldBeforeKill).map((q) => (verified(secret, q).data.target as { id: string }).id));
      await until(() => acknowledged.every((id) => delivered().has(id)), 'every acknowledged change delivered', 60_000);
      // The attempts cut off by the kill came again with the same webhook-id.
      const ids = (from: number, to?: number) =>
        new Set(r.received.slice(from, to).map((q) => q.headers['webhook-id']));
      for (const id of ids(0, heldBeforeKill)) assert.ok(ids(heldBeforeKill).has(id), `${String(id)} delivered again`);
    });
  });
}
