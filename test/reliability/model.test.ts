// Model-based test of the token lifecycle (fast-check commands): random sequences of
// create / list / use / delete / let-time-pass, run against the real app on both
// backends and checked, step by step, against a plain in-memory model.
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
  secret: string;
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
    m.tokens.push({ id: created.id, secret: created.token, expiresAt, deleted: false, used: false });
  }
  toString = () => `create(${JSON.stringify(this.name)}, ${this.scopes.join(' ')}, ttl=${this.ttlMs})`;
}

class ListCmd implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const res = await r.app.inject({
      method: 'GET',
      url: '/api/v1/api-tokens',
      headers: { authorization: `Bearer ${r.admin}` },
    });
    assert.equal(res.statusCode, 200);
    const shown = res
      .json<{ id: string; last_used_at: string | null }[]>()
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
    }
  }
  toString = () => 'list';
}

class UseCmd implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.tokens.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const t = m.tokens[this.pick % m.tokens.length]!;
    const res = await r.app.inject({
      method: 'GET',
      url: '/api/v1/api-tokens/current',
      headers: { authorization: `Bearer ${t.secret}` },
    });
    if (live(m, t)) {
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json<{ id: string }>().id, t.id);
      t.used = true;
    } else {
      assert.equal(
        res.statusCode,
        401,
        `${t.id} is ${t.deleted ? 'deleted' : 'expired'} but answered ${res.statusCode}`,
      );
    }
  }
  toString = () => `use(#${this.pick})`;
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

const commands = [
  fc
    .tuple(
      fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() !== '' && !/\p{Cc}/u.test(s)),
      fc.subarray(SCOPES, { minLength: 1 }),
      fc.option(fc.integer({ min: 1000, max: 3 * 86_400_000 }), { nil: null }),
    )
    .map(([n, s, ttl]) => new CreateCmd(n, s, ttl)),
  fc.constant(new ListCmd()),
  // Small picks: the same few tokens get used, deleted and used again.
  fc.nat({ max: 4 }).map((i) => new UseCmd(i)),
  fc.nat({ max: 4 }).map((i) => new DeleteCmd(i)),
  fc.integer({ min: 1, max: 2 * 86_400_000 }).map((ms) => new TimePassesCmd(ms)),
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
