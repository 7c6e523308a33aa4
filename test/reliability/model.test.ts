// Model-based test of the token lifecycle (fast-check commands): random sequences of
// create / list / use / rotate / edit / delete / let-time-pass, run against the real app
// on both backends and checked, step by step, against a plain in-memory model. The model
// knows each token's name and scopes, and which of its secrets are live: the current one,
// the previous one until its grace period ends, none of the older ones.
// MODEL_RUNS sets the number of sequences.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import fc from 'fast-check';
import type { App } from '../../src/http/types.js';
import { build } from '../helpers/app.js';
import { backends, type Backend } from '../helpers/backends.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { TEST_CONTEXT } from '../helpers/audit.js';

const RUNS = Number(process.env.MODEL_RUNS ?? 50);
const SCOPES = ['api-tokens:read', 'apps:read', 'apps:write', 'images:read', 'regions:read'];

interface ModelToken {
  id: string;
  name: string;
  scopes: string[];
  /** The current secret. */
  secret: string;
  /** The secret before the last rotation, valid until `until` (a grace period), or null. */
  previous: { secret: string; until: number } | null;
  /** Every other secret the token ever had: always refused. */
  retired: string[];
  expiresAt: number | null;
  deleted: boolean;
  used: boolean;
}

interface Model {
  now: number;
  tokens: ModelToken[];
}

interface Real {
  app: App;
  clock: { now: number };
  admin: string;
}

const live = (m: Model, t: ModelToken): boolean => !t.deleted && (t.expiresAt === null || t.expiresAt > m.now);
// Expired tokens stay listed for TOKEN_EXPIRED_RETENTION_DAYS (30 by default).
const RETENTION_MS = 30 * 86_400_000;
const listed = (m: Model, t: ModelToken): boolean =>
  !t.deleted && (t.expiresAt === null || t.expiresAt > m.now - RETENTION_MS);

class CreateCmd implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly name: string,
    readonly scopes: string[],
    readonly ttlMs: number | null,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const body: Record<string, unknown> = { name: this.name, scopes: this.scopes };
    const expiresAt = this.ttlMs === null ? null : m.now + this.ttlMs;
    if (expiresAt !== null) body.expires_at = new Date(expiresAt).toISOString();
    const res = await r.app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: { authorization: `Bearer ${r.admin}` },
      payload: body,
    });
    assert.equal(res.statusCode, 201, res.body);
    const created = res.json<{ id: string; token: string; expires_at: string | null }>();
    assert.equal(created.expires_at, expiresAt === null ? null : new Date(expiresAt).toISOString());
    m.tokens.push({
      id: created.id,
      name: this.name.trim(),
      scopes: this.scopes,
      secret: created.token,
      previous: null,
      retired: [],
      expiresAt,
      deleted: false,
      used: false,
    });
  }
  toString = () => `create(${JSON.stringify(this.name)}, ${this.scopes.join(' ')}, ttl=${this.ttlMs})`;
}

class ListCmd implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    // One page holds every token the model can make (the list is paged: 100 by default).
    const res = await r.app.inject({
      method: 'GET',
      url: '/api/v1/api-tokens?per_page=1000',
      headers: { authorization: `Bearer ${r.admin}` },
    });
    assert.equal(res.statusCode, 200);
    const shown = res
      .json<{ id: string; name: string; scopes: string[]; last_used_at: string | null }[]>()
      .filter((x) => m.tokens.some((t) => t.id === x.id));
    const expected = m.tokens.filter((t) => listed(m, t)).map((t) => t.id);
    assert.deepEqual(
      shown.map((x) => x.id),
      expected,
      'the live tokens and those expired within the retention, oldest first',
    );
    for (const x of shown) {
      const t = m.tokens.find((y) => y.id === x.id)!;
      assert.equal(x.last_used_at !== null, t.used, `last_used_at of ${x.id}`);
      assert.deepEqual([x.name, x.scopes], [t.name, t.scopes], `name and scopes of ${x.id}`);
    }
  }
  toString = () => 'list';
}

/** GET /api-tokens/current with `secret`: the way every use here authenticates (and fills the cache). */
async function current(r: Real, secret: string) {
  return r.app.inject({
    method: 'GET',
    url: '/api/v1/api-tokens/current',
    headers: { authorization: `Bearer ${secret}` },
  });
}

/** Which of a token's secrets a use presents. */
type Which = 'current' | 'previous' | 'retired';

class UseCmd implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly which: Which = 'current',
  ) {}
  check = (m: Readonly<Model>) => m.tokens.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const t = m.tokens[this.pick % m.tokens.length]!;
    // A token without such a secret presents its current one.
    let secret = t.secret;
    let valid = live(m, t);
    if (this.which === 'previous' && t.previous !== null) {
      secret = t.previous.secret;
      valid = live(m, t) && t.previous.until > m.now;
    } else if (this.which === 'retired' && t.retired.length > 0) {
      secret = t.retired[this.pick % t.retired.length]!;
      valid = false;
    }
    const res = await current(r, secret);
    if (valid) {
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<{ id: string; name: string; scopes: string[] }>();
      assert.deepEqual([body.id, body.name, body.scopes], [t.id, t.name, t.scopes]);
      t.used = true;
    } else {
      assert.equal(
        res.statusCode,
        401,
        `${this.which} secret of ${t.id} (${t.deleted ? 'deleted' : 'not live'}) answered ${res.statusCode}`,
      );
    }
  }
  toString = () => `use(#${this.pick}, ${this.which})`;
}

/** Admin rotates a token: a new secret, the current one kept for `graceS` seconds (0: none). */
class RotateCmd implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly graceS: number,
    readonly ttlMs: number | null,
  ) {}
  check = (m: Readonly<Model>) => m.tokens.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const t = m.tokens[this.pick % m.tokens.length]!;
    // A live token is used first, so this instance holds it in its verification cache.
    if (live(m, t)) {
      assert.equal((await current(r, t.secret)).statusCode, 200);
      t.used = true;
    }
    const body: Record<string, unknown> = { grace_period_s: this.graceS };
    const expiresAt = this.ttlMs === null ? t.expiresAt : m.now + this.ttlMs;
    if (this.ttlMs !== null) body.expires_at = new Date(m.now + this.ttlMs).toISOString();
    const res = await r.app.inject({
      method: 'POST',
      url: `/api/v1/api-tokens/${t.id}/rotate`,
      headers: { authorization: `Bearer ${r.admin}` },
      payload: body,
    });
    // Deleted, or purged-looking (expired past the retention): unknown. Expired: not rotated.
    if (!listed(m, t)) return assert.equal(res.statusCode, 404, res.body);
    if (!live(m, t)) return assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.statusCode, 200, res.body);
    const rotated = res.json<{
      id: string;
      token: string;
      name: string;
      scopes: string[];
      expires_at: string | null;
    }>();
    assert.deepEqual([rotated.id, rotated.name, rotated.scopes], [t.id, t.name, t.scopes]);
    assert.equal(rotated.expires_at, expiresAt === null ? null : new Date(expiresAt).toISOString());
    // At most two live secrets: an earlier previous one is retired at once.
    if (t.previous !== null) t.retired.push(t.previous.secret);
    if (this.graceS > 0) t.previous = { secret: t.secret, until: m.now + this.graceS * 1000 };
    else {
      t.retired.push(t.secret);
      t.previous = null;
    }
    const old = t.secret;
    t.secret = rotated.token;
    t.expiresAt = expiresAt;
    // At once, though it was cached: the old secret works only with a grace period.
    assert.equal((await current(r, old)).statusCode, this.graceS > 0 && live(m, t) ? 200 : 401);
  }
  toString = () => `rotate(#${this.pick}, grace=${this.graceS}s, ttl=${this.ttlMs})`;
}

/** Admin edits a token (a merge patch): a new name, a new scope list (within what admin holds), or both. */
class EditCmd implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly name: string | undefined,
    readonly scopes: string[] | undefined,
  ) {}
  check = (m: Readonly<Model>) => m.tokens.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const t = m.tokens[this.pick % m.tokens.length]!;
    // A live token is used first, so this instance holds it in its verification cache.
    if (live(m, t)) {
      assert.equal((await current(r, t.secret)).statusCode, 200);
      t.used = true;
    }
    const patch = {
      ...(this.name !== undefined ? { name: this.name } : {}),
      ...(this.scopes ? { scopes: this.scopes } : {}),
    };
    const res = await r.app.inject({
      method: 'PATCH',
      url: `/api/v1/api-tokens/${t.id}`,
      headers: { authorization: `Bearer ${r.admin}`, 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify(patch),
    });
    if (!listed(m, t)) return assert.equal(res.statusCode, 404, res.body);
    assert.equal(res.statusCode, 200, res.body);
    if (this.name !== undefined) t.name = this.name.trim();
    if (this.scopes !== undefined) t.scopes = this.scopes;
    const body = res.json<{ id: string; name: string; scopes: string[] }>();
    assert.deepEqual([body.id, body.name, body.scopes], [t.id, t.name, t.scopes]);
    assert.ok(!('token' in body), 'no secret');
    if (live(m, t)) {
      // At once, though it was cached: the token authenticates with its new name and scopes.
      const now = (await current(r, t.secret)).json<{ name: string; scopes: string[] }>();
      assert.deepEqual([now.name, now.scopes], [t.name, t.scopes], 'the edit holds at once');
    }
  }
  toString = () => `edit(#${this.pick}, ${JSON.stringify({ name: this.name, scopes: this.scopes })})`;
}

class DeleteCmd implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.tokens.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const t = m.tokens[this.pick % m.tokens.length]!;
    const res = await r.app.inject({
      method: 'DELETE',
      url: `/api/v1/api-tokens/${t.id}`,
      headers: { authorization: `Bearer ${r.admin}` },
    });
    // An expired token is still stored until deleted; a deleted one is gone.
    assert.equal(res.statusCode, t.deleted ? 404 : 204);
    t.deleted = true;
  }
  toString = () => `delete(#${this.pick})`;
}

class TimePassesCmd implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.now = m.now;
  }
  toString = () => `wait(${this.ms} ms)`;
}

const tokenName = fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() !== '' && !/\p{Cc}/u.test(s));
const scopeList = fc.subarray(SCOPES, { minLength: 1 });
const ttl = fc.option(fc.integer({ min: 1000, max: 3 * 86_400_000 }), { nil: null });
// Small picks: the same few tokens get used, rotated, edited, deleted and used again.
const pick = fc.nat({ max: 4 });
const commands = [
  fc.tuple(tokenName, scopeList, ttl).map(([n, s, t]) => new CreateCmd(n, s, t)),
  fc.constant(new ListCmd()),
  fc.tuple(pick, fc.constantFrom<Which>('current', 'previous', 'retired')).map(([i, which]) => new UseCmd(i, which)),
  pick.map((i) => new DeleteCmd(i)),
  fc
    // Grace periods of any length, and often short ones the short time steps below end.
    .tuple(pick, fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 120 }), fc.integer({ min: 1, max: 86_400 })), ttl)
    .map(([i, grace, t]) => new RotateCmd(i, grace, t)),
  fc
    .tuple(pick, fc.option(tokenName, { nil: undefined }), fc.option(scopeList, { nil: undefined }))
    .map(([i, n, s]) => new EditCmd(i, n, s)),
  fc.integer({ min: 1, max: 2 * 86_400_000 }).map((ms) => new TimePassesCmd(ms)),
  // Short steps too, so grace periods (at most a day) end between two uses.
  fc.integer({ min: 1, max: 120_000 }).map((ms) => new TimePassesCmd(ms)),
];

async function runModel(t: TestContext, backend: Backend): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 60, size: 'medium' }), async (cmds) => {
      const db = await backend.fresh(t);
      const clock = { now: Date.UTC(2030, 0, 1) };
      const built = await build(t, {
        store: db.open(),
        now: () => clock.now,
        env: {
          DATABASE_URL: db.url,
          RATE_LIMIT: '0',
          RATE_LIMIT_ANONYMOUS: '0',
          LAST_USED_FLUSH_MS: '600000',
          TOKEN_MAX_LIFETIME_DAYS: '30',
        },
      });
      const admin = (
        await built.app.infracat.tokens.service.create(
          { name: 'admin', scopes: ['api-tokens:write', ...SCOPES] },
          null,
          OPERATOR_ACCOUNT_ID,
          TEST_CONTEXT,
        )
      ).secret;
      try {
        await fc.asyncModelRun(
          () => ({ model: { now: clock.now, tokens: [] }, real: { app: built.app, clock, admin } }),
          cmds,
        );
      } finally {
        await built.app.close();
      }
    }),
    { numRuns: RUNS, endOnFailure: true },
  );
}

for (const backend of backends()) {
  describe(`token lifecycle model on ${backend.name}`, () => {
    it(`${RUNS} random command sequences agree with the model`, async (t) => {
      await runModel(t, backend);
    });
  });
}
