// Crash safety: the real server as a child process, concurrent creates and deletes over
// HTTP, `kill -9` at a random moment, restart, and check that every acknowledged create
// exists and works and every acknowledged delete is gone, that the audit trail agrees
// with the tokens both ways (and, on SQLite, that the file passes integrity_check).
// CRASH_ROUNDS kills per backend (npm test: 3; npm run test:reliability: 20).
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { openDatabase } from '../../src/storage/sqlite/driver.js';
import { backends, type Backend } from '../helpers/backends.js';
import { fetchAll } from '../helpers/pages.js';
import { cli, serve } from '../helpers/process.js';
import { sleep, until } from '../helpers/until.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 3);
const WORKERS = 8;

interface Ledger {
  /** Acknowledged creates (201): id -> secret. */
  created: Map<string, string>;
  /** Deletes that were sent: their outcome may be unknown after a crash. */
  deleteSent: Set<string>;
  /** Acknowledged deletes (204). */
  deleted: Set<string>;
}

/** Every audit event, oldest first, following the Link header from page to page. */
async function auditTrail(url: string, admin: string): Promise<{ action: string; target: { id: string } }[]> {
  const trail = await fetchAll<{ action: string; target: { id: string } }>(url, '/api/v1/audit-events?per_page=100', {
    authorization: `Bearer ${admin}`,
  });
  return trail.reverse();
}

async function verify(url: string, admin: string, ledger: Ledger): Promise<void> {
  const tokens = await fetchAll<{ id: string }>(url, '/api/v1/api-tokens?per_page=1000', {
    authorization: `Bearer ${admin}`,
  });
  const ids = new Set(tokens.map((x) => x.id));
  // The audit trail and the tokens agree: an acknowledged change has its event, an event its change.
  const trail = await auditTrail(url, admin);
  const targets = (action: string) => trail.filter((e) => e.action === action).map((e) => e.target.id);
  const createdEvents = new Set(targets('api_token.created'));
  const deletedEvents = new Set(targets('api_token.deleted'));
  assert.equal(createdEvents.size, targets('api_token.created').length, 'one creation event per token');
  assert.equal(deletedEvents.size, targets('api_token.deleted').length, 'one deletion event per token');
  for (const id of ledger.created.keys()) assert.ok(createdEvents.has(id), `acknowledged create ${id} has its event`);
  for (const id of ledger.deleted) assert.ok(deletedEvents.has(id), `acknowledged delete ${id} has its event`);
  for (const id of ids)
    assert.ok(createdEvents.has(id) && !deletedEvents.has(id), `stored ${id}: created, not deleted`);
  for (const id of createdEvents) assert.ok(ids.has(id) || deletedEvents.has(id), `${id} of a creation event exists`);
  const mustExist = [...ledger.created.keys()].filter((id) => !ledger.deleteSent.has(id));
  for (const id of mustExist) assert.ok(ids.has(id), `acknowledged create ${id} survived`);
  for (const id of ledger.deleted) assert.ok(!ids.has(id), `acknowledged delete ${id} stayed deleted`);
  // The stored hashes still match their secrets: a sample of survivors authenticate, deleted ones do not.
  for (const id of mustExist.slice(-15)) {
    const r = await fetch(`${url}/api/v1/api-tokens/current`, {
      headers: { authorization: `Bearer ${ledger.created.get(id)!}` },
    });
    assert.equal(r.status, 200, `${id} works after restart`);
  }
  for (const id of [...ledger.deleted].slice(-15)) {
    const r = await fetch(`${url}/api/v1/api-tokens/current`, {
      headers: { authorization: `Bearer ${ledger.created.get(id)!}` },
    });
    assert.equal(r.status, 401, `${id} is refused after restart`);
  }
}

async function load(url: string, admin: string, ledger: Ledger, stop: { now: boolean }): Promise<void> {
  const headers = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; !stop.now; i++) {
      try {
        const candidates = [...ledger.created.keys()].filter((id) => !ledger.deleteSent.has(id));
        if (i % 3 === 2 && candidates.length > 0) {
          const id = candidates[(w * 7919 + i) % candidates.length]!;
          ledger.deleteSent.add(id);
          const res = await fetch(`${url}/api/v1/api-tokens/${id}`, {
            method: 'DELETE',
            headers: { authorization: headers.authorization },
          });
          if (res.status === 204) ledger.deleted.add(id);
          else assert.equal(res.status, 404); // deleted by another worker
        } else {
          const res = await fetch(`${url}/api/v1/api-tokens`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ name: `w${w}-${i}`, scopes: ['apps:read'] }),
          });
          if (res.status === 201) {
            const body = (await res.json()) as { id: string; token: string };
            ledger.created.set(body.id, body.token);
          }
        }
      } catch {
        return; // the server died under us
      }
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
}

async function crashRounds(t: TestContext, backend: Backend, rounds: number): Promise<void> {
  const db = await backend.fresh(t);
  const env = {
    DATABASE_URL: db.url,
    RATE_LIMIT: '0',
    RATE_LIMIT_ANONYMOUS: '0',
    BOOTSTRAP_ADMIN_TOKEN: 'false',
    LOG_LEVEL: 'info',
    TOKEN_MAX_LIVE: '1000000',
    LAST_USED_FLUSH_MS: '50',
  };
  const made = await cli(
    [
      'tokens',
      'create',
      '--name',
      'crash admin',
      '--scopes',
      'api-tokens:write,apps:write,audit-events:read',
      '--json',
    ],
    { env },
  );
  assert.equal(made.code, 0, made.stderr);
  const admin = (JSON.parse(made.stdout) as { token: string }).token;
  const ledger: Ledger = { created: new Map(), deleteSent: new Set(), deleted: new Set() };

  for (let round = 0; round < rounds; round++) {
    const { child, url } = await serve(env);
    await verify(url, admin, ledger);
    const stop = { now: false };
    const running = load(url, admin, ledger, stop);
    // Killed at a random moment once the load is under way (a busy machine starts it slowly).
    const before = ledger.created.size;
    await until(() => ledger.created.size >= before + 6, 'the load under way');
    await sleep(Math.floor(Math.random() * 600));
    child.proc.kill('SIGKILL');
    stop.now = true;
    await running;
    const { signal } = await child.exited;
    assert.equal(signal, 'SIGKILL');
  }
  const { child, url } = await serve(env);
  try {
    await verify(url, admin, ledger);
  } finally {
    child.proc.kill('SIGTERM');
    await child.exited;
  }
  assert.ok(ledger.created.size > rounds * 5, `load was applied (${ledger.created.size} creates acknowledged)`);
  assert.ok(ledger.deleted.size > 0, 'deletes were acknowledged');
  if (backend.name === 'sqlite') {
    const file = db.url.slice('sqlite:'.length);
    const check = openDatabase(file, { readonly: true });
    try {
      assert.equal(check.pragma('integrity_check', { simple: true }), 'ok');
    } finally {
      check.close();
    }
  }
}

for (const backend of backends()) {
  describe(`kill -9 under load on ${backend.name}`, () => {
    it(
      `${ROUNDS} crashes lose no acknowledged create or delete, nor its audit event`,
      { timeout: 600_000 },
      async (t) => {
        await crashRounds(t, backend, ROUNDS);
      },
    );
  });
}
