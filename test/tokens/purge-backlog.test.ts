// A start on a database holding a large backlog for the background purges (tokens expired
// longer than TOKEN_EXPIRED_RETENTION_DAYS, events older than AUDIT_RETENTION_DAYS): the
// server listens and answers while the backlog is still there, stays responsive while the
// purges work it off in batches, and in the end every row of it is gone, each purged token
// with its api_token.expired_purged event.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { startServer } from '../../src/server.js';
import { backends, type Backend, type BackendDb } from '../helpers/backends.js';
import { LIVENESS_BOUND_MS, whileWorking } from '../helpers/liveness.js';
import { rawSql } from '../helpers/raw-sql.js';

const DAY = 86_400_000;
const ACCOUNTS = 100;

// On PostgreSQL each statement is a round trip, during which the event loop is free anyway:
// a smaller backlog shows the same there, in less time. On SQLite each batch is synchronous
// work: the backlog is large enough that the purges take seconds.
const backlogOf = (backend: Backend) =>
  backend.name === 'sqlite' ? { tokens: 20_000, events: 10_000 } : { tokens: 5_000, events: 5_000 };

/** Rows 1..? of a recursive CTE (both engines), each made into a row of a table by one statement. */
const SERIES = 'WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?) ';

/**
 * Seeds, one statement per table: accounts; tokens of theirs expired long before the
 * retention (31 days and more ago); and events older than the audit retention (366 days
 * and more).
 */
async function seedBacklog(backend: Backend, db: BackendDb, backlog: { tokens: number; events: number }) {
  const now = Date.now();
  const account = `'acc_backlog' || CAST(i % ${ACCOUNTS} AS TEXT)`;
  await rawSql(
    backend,
    db,
    `${SERIES}INSERT INTO accounts (id, name, external_id, status, created_at)` +
      ` SELECT ${account}, 'backlog', NULL, 'active', CAST(? AS BIGINT) FROM g WHERE i <= ${ACCOUNTS}`,
    [ACCOUNTS, now - 400 * DAY],
  );
  await rawSql(
    backend,
    db,
    `${SERIES}INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, expires_at, account_id)` +
      ` SELECT 'tok_backlog' || CAST(i AS TEXT), 'backlog', '["apps:read"]', 'backlog' || CAST(i AS TEXT),` +
      ` CAST(? AS BIGINT) - i, CAST(? AS BIGINT) - i, ${account} FROM g`,
    [backlog.tokens, now - 40 * DAY, now - 31 * DAY],
  );
  await rawSql(
    backend,
    db,
    `${SERIES}INSERT INTO audit_events (id, account_id, action, occurred_at, actor_type, target_type, details)` +
      ` SELECT 'evt_backlog' || CAST(i AS TEXT), ${account}, 'api_token.created', CAST(? AS BIGINT) - i,` +
      ` 'cli', 'api_token', '{}' FROM g`,
    [backlog.events, now - 366 * DAY],
  );
}

async function count(backend: Backend, db: BackendDb, where: string): Promise<number> {
  const [row] = (await rawSql(backend, db, `SELECT CAST(COUNT(*) AS INTEGER) AS n FROM ${where}`)) as { n: number }[];
  return Number(row!.n);
}

const backlogTokens = "api_tokens WHERE id LIKE 'tok_backlog%'";
const backlogEvents = "audit_events WHERE id LIKE 'evt_backlog%'";
const purgeEvents = "audit_events WHERE action = 'api_token.expired_purged'";

/** A log destination that keeps nothing: the audit lines of the purge are written, as in production. */
const discard = () =>
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });

for (const backend of backends()) {
  describe(`a start with a purge backlog on ${backend.label}`, () => {
    it(
      `listens and answers before the purges are done, answers /healthz within ${LIVENESS_BOUND_MS} ms while they ` +
        'work, and purges the whole backlog, each token with its event',
      async (t) => {
        const backlog = backlogOf(backend);
        const db = await backend.fresh(t);
        await seedBacklog(backend, db, backlog);
        assert.equal(await count(backend, db, backlogTokens), backlog.tokens);
        const config = loadConfig({
          DATABASE_URL: db.url,
          PORT: '0',
          HOST: '127.0.0.1',
          BOOTSTRAP_ADMIN_TOKEN: 'false',
          LOG_LEVEL: 'info',
        });
        const server = await startServer(config, createLogger('info', discard()));
        t.after(() => server.close());
        const { purger, auditPruner } = server.app.infracat;

        // Listening, and answering, with the backlog still there: the start did not wait for it.
        assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
        const left = await count(backend, db, backlogTokens);
        assert.ok(left > 0, `the purge of ${backlog.tokens} tokens is still at work when the server answers`);

        const { slowestMs, answers } = await whileWorking(server.url, async () => {
          await purger.idle();
          await auditPruner.idle();
        });
        assert.ok(answers > 1, `answered meanwhile (${answers})`);
        assert.ok(slowestMs < LIVENESS_BOUND_MS, `/healthz answered within ${LIVENESS_BOUND_MS} ms (${slowestMs})`);

        assert.equal(await count(backend, db, backlogTokens), 0, 'every expired token is purged');
        assert.equal(await count(backend, db, purgeEvents), backlog.tokens, 'each with its event');
        assert.equal(await count(backend, db, backlogEvents), 0, 'every event past the retention is pruned');
      },
    );
  });
}
