// A limit holds across a fleet of three instances on PostgreSQL whichever instances a
// client reaches (src/fleet/counts.ts): pinned to one, spread over all, moving between
// them, while instances join and leave; an account's limit across its tokens on different
// instances, and an account's own limit set on one instance; with storage down, each
// instance enforces its share. Each measure counts the answers one paced client gets
// within one whole window of its key (RATE_LIMIT=60 per 2 s, the client sending 3 times
// that): 0.9x-1.2x of the limit.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { windowEnd, windowOffset } from '../../src/fleet/counts.js';
import { shareOf } from '../../src/fleet/registry.js';
import type { App } from '../../src/http/types.js';
import { build, mintToken } from '../helpers/app.js';
import { admin, postgresBackend, type BackendDb } from '../helpers/backends.js';
import { sleep, until } from '../helpers/until.js';

const LIMIT = 60;
const WINDOW_S = 2;
/** Requests per second the client sends: three times its limit's rate. */
const RATE = (3 * LIMIT) / WINDOW_S;
const ENV = {
  INSTANCE_HEARTBEAT_MS: '300',
  RATE_LIMIT: String(LIMIT),
  RATE_LIMIT_ANONYMOUS: String(LIMIT),
  RATE_LIMIT_WINDOW_S: String(WINDOW_S),
  AUTH_FAILURE_LIMIT: '1000000',
};

type Auth = { authorization: string };

async function instance(t: TestContext, db: BackendDb, env: Record<string, string> = {}): Promise<App> {
  const { app } = await build(t, { store: db.open(), env: { DATABASE_URL: db.url, ...ENV, ...env } });
  // An instance registers in the fleet, and shares its counts, once it listens.
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

async function fleetOf(t: TestContext, n: number, env: Record<string, string> = {}) {
  const pg = postgresBackend(t);
  if (pg === undefined) return undefined;
  const db = await pg.fresh(t);
  const apps: App[] = [];
  for (let i = 0; i < n; i++) apps.push(await instance(t, db, env));
  await until(() => apps.every((a) => a.infracat.fleet.count === n), `every instance sees ${n}`);
  return { pg, db, apps };
}

const current = (app: App, auth: Auth) =>
  app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: auth });

interface Measure {
  admitted: number;
  sent: number;
  /** The problem codes of the 429s. */
  codes: Set<string>;
}

/**
 * The answers one client gets in one whole window of `key`: from the start of its next
 * window to its end, a request every 1/RATE s (each after the one before was answered),
 * sent by `send(i)`; `during(i)` runs before the i-th request (joins and leaves).
 */
async function oneWindow(
  key: string,
  send: (i: number) => Promise<LightMyRequestResponse>,
  during?: (i: number) => void,
): Promise<Measure> {
  const windowMs = WINDOW_S * 1000;
  const start = windowEnd(Date.now(), windowMs, windowOffset(key, windowMs));
  const end = start + windowMs;
  // A margin at each end: every request counted is judged in this window.
  const margin = 30;
  await sleep(start + margin - Date.now());
  const measure: Measure = { admitted: 0, sent: 0, codes: new Set() };
  for (let i = 0; ; i++) {
    const wait = start + margin + (i * 1000) / RATE - Date.now();
    if (wait > 0) await sleep(wait);
    if (Date.now() >= end - margin) break;
    during?.(i);
    const res = await send(i);
    measure.sent += 1;
    if (res.statusCode === 200) measure.admitted += 1;
    else {
      assert.equal(res.statusCode, 429, res.body);
      measure.codes.add(res.json<{ code: string }>().code);
    }
  }
  // Enough requests to tell: the client asked for well over its limit.
  assert.ok(measure.sent >= 2 * LIMIT, `sent ${measure.sent} requests in the window`);
  return measure;
}

function assertBand(m: Measure, limit: number, what: string): void {
  process.stderr.write(`# ${what}: ${m.admitted} of ${m.sent} admitted (limit ${limit})\n`);
  assert.ok(
    m.admitted >= 0.9 * limit && m.admitted <= 1.2 * limit,
    `${what}: ${m.admitted} of ${m.sent} admitted in one window, for a limit of ${limit}`,
  );
}

/** An account with `n` tokens, made through `app` by an operator token. */
async function customer(app: App, n: number): Promise<{ id: string; tokens: { id: string; auth: Auth }[] }> {
  const operator = (await mintToken(app, ['accounts:write', 'api-tokens:write', 'api-tokens:read'])).auth;
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/accounts',
    headers: operator,
    payload: { name: 'A' },
  });
  const id = created.json<{ id: string }>().id;
  const tokens = [];
  for (let i = 0; i < n; i++) {
    const res = await app.inject({
      method: 'POST',
      url: `/api/v1/accounts/${id}/api-tokens`,
      headers: operator,
      payload: { name: `t${i}`, scopes: ['api-tokens:read'] },
    });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json<{ id: string; token: string }>();
    tokens.push({ id: body.id, auth: { authorization: `Bearer ${body.token}` } });
  }
  return { id, tokens };
}

describe('fleet-wide limits: three instances on PostgreSQL', () => {
  it('a token pinned to one instance, spread over all three, and moving between them: 0.9x-1.2x', async (t) => {
    const fleet = await fleetOf(t, 3);
    if (fleet === undefined) return;
    const { apps } = fleet;
    const clients = {
      pinned: (_i: number) => apps[1]!,
      spread: (i: number) => apps[i % 3]!,
      // Moves to the next instance every 40 requests: about four moves a window.
      moving: (i: number) => apps[Math.floor(i / 40) % 3]!,
    };
    for (const [name, pick] of Object.entries(clients)) {
      const tok = await mintToken(apps[0]!, ['api-tokens:read'], name);
      const m = await oneWindow(`t:${tok.id}`, (i) => current(pick(i), tok.auth));
      assertBand(m, LIMIT, name);
      assert.deepEqual([...m.codes], ['RATE_LIMITED']);
    }
    for (const app of apps) assert.ok(app.infracat.limits.stats.syncs > 0, 'counts were shared');
  });

  it('an instance joining and one leaving mid-window: a spread client still gets 0.9x-1.2x', async (t) => {
    const fleet = await fleetOf(t, 3);
    if (fleet === undefined) return;
    const { db, apps } = fleet;
    const live = [...apps];
    const tok = await mintToken(apps[0]!, ['api-tokens:read']);
    const pending: Promise<unknown>[] = [];
    const m = await oneWindow(
      `t:${tok.id}`,
      (i) => current(live[i % live.length]!, tok.auth),
      (i) => {
        // A quarter into the window an instance starts (it serves once it listens); at half,
        // one stops (gracefully: it leaves the fleet).
        if (i === 45) pending.push(instance(t, db).then((app) => live.push(app)));
        if (i === 90) {
          const leaving = live.shift()!;
          pending.push(leaving.close());
        }
      },
    );
    await Promise.all(pending);
    assert.equal(live.length, 3, 'one joined, one left');
    assertBand(m, LIMIT, 'join and leave');
    await until(() => live.every((a) => a.infracat.fleet.count === 3), 'the fleet counts three again');
    assertBand(await oneWindow(`t:${tok.id}`, (i) => current(live[i % 3]!, tok.auth)), LIMIT, 'after');
  });

  it("an account's limit across two tokens on different instances: 0.9x-1.2x, ACCOUNT_RATE_LIMITED", async (t) => {
    const fleet = await fleetOf(t, 3, { RATE_LIMIT: '1000', RATE_LIMIT_ACCOUNT: String(LIMIT) });
    if (fleet === undefined) return;
    const { apps } = fleet;
    const acme = await customer(apps[0]!, 2);
    const [a, b] = [acme.tokens[0]!, acme.tokens[1]!];
    const m = await oneWindow(`c:${acme.id}`, (i) =>
      i % 2 === 0 ? current(apps[0]!, a.auth) : current(apps[1]!, b.auth),
    );
    assertBand(m, LIMIT, 'account');
    assert.deepEqual([...m.codes], ['ACCOUNT_RATE_LIMITED']);
  });

  it("an account's own rate_limit set on one instance is enforced by every instance", async (t) => {
    const fleet = await fleetOf(t, 3, { RATE_LIMIT: '1000', RATE_LIMIT_ACCOUNT: '1000' });
    if (fleet === undefined) return;
    const { apps } = fleet;
    const acme = await customer(apps[0]!, 2);
    const [a, b] = [acme.tokens[0]!, acme.tokens[1]!];
    // Cached on every instance with the default before the change.
    for (const app of apps) assert.equal((await current(app, a.auth)).statusCode, 200);
    const operator = (await mintToken(apps[2]!, ['accounts:write'])).auth;
    // Above the token limit, below the two tokens' together: only the account's limit binds,
    // and the fleet's overshoot between syncs (a few requests) stays a small part of it.
    const OWN_LIMIT = (LIMIT * 3) / 2;
    const set = await apps[2]!.inject({
      method: 'PATCH',
      url: `/api/v1/accounts/${acme.id}`,
      headers: operator,
      payload: { rate_limit: OWN_LIMIT },
    });
    assert.equal(set.statusCode, 200, set.body);
    // The change feed evicts the account's cached tokens on every instance within about a
    // second; each instance is asked until it says it enforces the new limit.
    const wanted = `"account";q=${OWN_LIMIT};w=${WINDOW_S}`;
    for (const app of apps) {
      let seen = '';
      for (let tries = 0; tries < 250 && !seen.includes(wanted); tries++) {
        if (tries > 0) await sleep(20);
        seen = String((await current(app, b.auth)).headers['ratelimit-policy']);
      }
      assert.ok(seen.includes(wanted), seen);
    }
    const m = await oneWindow(`c:${acme.id}`, (i) => current(apps[i % 3]!, (i % 2 === 0 ? a : b).auth));
    assertBand(m, OWN_LIMIT, "the account's own limit");
    assert.deepEqual([...m.codes], ['ACCOUNT_RATE_LIMITED']);
  });

  it('storage down: each instance enforces its share (pinned: 1/3 of the limit, spread: all of it)', async (t) => {
    const fleet = await fleetOf(t, 3, { TOKEN_CACHE_TTL_MS: '600000' });
    if (fleet === undefined) return;
    const { pg, db, apps } = fleet;
    const pinned = await mintToken(apps[0]!, ['api-tokens:read'], 'pinned');
    const spread = await mintToken(apps[0]!, ['api-tokens:read'], 'spread');
    // Verified once on every instance while storage works: the cache serves them after.
    for (const app of apps) {
      assert.equal((await current(app, pinned.auth)).statusCode, 200);
      assert.equal((await current(app, spread.auth)).statusCode, 200);
    }
    const name = new URL(db.url).pathname.slice(1);
    const cut =
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity ' +
      `WHERE datname = '${name}' AND pid <> pg_backend_pid()`;
    // The count each instance knows when storage goes is the one it keeps: three, not a
    // count a late heartbeat (a stalled test process) made smaller just now.
    await until(() => apps.every((a) => a.infracat.fleet.count === 3), 'every instance sees three');
    await admin(pg.adminUrl, `ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    await admin(pg.adminUrl, cut);
    // Any request makes each instance sync (and fail).
    for (const app of apps) await current(app, spread.auth);
    await until(() => apps.every((a) => a.infracat.limits.stats.failures >= 1), 'syncs fail on every instance');
    const share = shareOf(LIMIT, apps[1]!.infracat.fleet);
    const p = await oneWindow(`t:${pinned.id}`, () => current(apps[1]!, pinned.auth));
    assert.equal(apps[1]!.infracat.fleet.count, 3, 'the last known count');
    assertBand(p, share, 'pinned, storage down (its share)');
    const s = await oneWindow(`t:${spread.id}`, (i) => current(apps[i % 3]!, spread.auth));
    assertBand(s, LIMIT, 'spread, storage down (the shares add up)');
    assert.ok(s.admitted <= LIMIT + 3, 'never more than the limit, give or take a unit an instance');

    // Storage back: the counts are shared again.
    await admin(pg.adminUrl, `ALTER DATABASE ${name} RESET default_transaction_read_only`);
    await admin(pg.adminUrl, cut);
    const syncs = apps[1]!.infracat.limits.stats.syncs;
    for (let tries = 0; tries < 500 && apps[1]!.infracat.limits.stats.syncs === syncs; tries++) {
      await current(apps[1]!, pinned.auth);
      await sleep(20);
    }
    assert.ok(apps[1]!.infracat.limits.stats.syncs > syncs, 'syncs succeed again');
  });
});
