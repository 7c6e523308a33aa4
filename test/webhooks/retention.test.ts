// The delivery log's retention on both backends: attempts older than
// WEBHOOK_DELIVERY_RETENTION_DAYS are deleted in batches (a backlog of several), newer ones kept.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WEBHOOK_DELIVERIES } from '../../src/storage/tables.js';
import type { DeliveryRecord } from '../../src/storage/types.js';
import { newId } from '../../src/tokens/ids.js';
import { build } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { insertRows, rawSql } from '../helpers/raw-sql.js';

const DAY = 86_400_000;

for (const backend of backends()) {
  describe(`the delivery log's retention on ${backend.name}`, () => {
    it('deletes the attempts older than the retention, in batches; keeps the rest', async (t) => {
      const db = await backend.fresh(t);
      const now = Date.now();
      const attempt = (i: number, at: number): DeliveryRecord => ({
        id: newId('dlv', at),
        webhookId: `whk_${i % 3}`,
        eventId: newId('evt', at),
        eventType: 'api_token.created',
        attempt: 1,
        attemptedAt: at,
        statusCode: 204,
        durationMs: 3,
        error: null,
        nextAttemptAt: null,
      });
      const old = Array.from({ length: 2500 }, (_, i) => attempt(i, now - 10 * DAY - i * 1000));
      const kept = Array.from({ length: 20 }, (_, i) => attempt(i, now - 6 * DAY + i * 1000));
      await insertRows(backend, db, WEBHOOK_DELIVERIES, [...old, ...kept]);
      const { app } = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, WEBHOOK_DELIVERY_RETENTION_DAYS: '7' },
      });
      // One run (an app that never listens purges only when asked) goes through every batch.
      await app.infracat.deliveryPruner.run();
      const rows = (await rawSql(backend, db, 'SELECT id FROM webhook_deliveries ORDER BY id')) as { id: string }[];
      assert.deepEqual(
        rows.map((r) => r.id),
        kept.map((k) => k.id),
      );
    });
  });
}
