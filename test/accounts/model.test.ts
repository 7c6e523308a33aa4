// Model-based test of tenancy (fast-check commands): random sequences of every account
// and token operation, by the operator and by the tokens of at least three customer
// accounts, against the real app on both backends, each answer checked against a plain
// in-memory model. What it proves: no operation made with one account's token ever
// shows, changes or confirms the existence of another account's tokens (another
// account's token id is answered exactly as an unknown one); a suspended or deleted
// account's tokens are refused everywhere; the operator sees all.
// MODEL_RUNS sets the number of sequences.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import fc from 'fast-check';
import { OPERATOR_ACCOUNT_ID } from '../../src/accounts/ids.js';
import type { App } from '../../src/http/types.js';
import { build } from '../helpers/app.js';
import { backends, type Backend } from '../helpers/backends.js';
import { TEST_CONTEXT } from '../helpers/audit.js';

const RUNS = Number(process.env.MODEL_RUNS ?? 20);
const CUSTOMERS = 3;
const CUSTOMER_ADMIN_SCOPES = ['api-tokens:write', 'apps:read'];
const GHOST_TOKEN = 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H';

interface MToken {
  id: string;
  secret: string;
  account: number;
  deleted: boolean;
  scopes: string[];
}

interface MAccount {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  deleted: boolean;
  /** Index of its admin token in Model.tokens. */
  admin: number;
}

interface Model {
  accounts: MAccount[];
  tokens: MToken[];
}

interface Real {
  app: App;
}

type Res = Awaited<ReturnType<App['inject']>>;

const bearer = (t: MToken) => ({ authorization: `Bearer ${t.secret}` });
const alive = (m: Model, t: MToken) => !t.deleted && !m.accounts[t.account]!.deleted;
const works = (m: Model, t: MToken) => alive(m, t) && m.accounts[t.account]!.status === 'active';
const pick = <T>(list: readonly T[], i: number): T => list[i % list.length]!;
/** The tokens an account lists: its own, not deleted, oldest first (creation order). */
const listed = (m: Model, account: number) =>
  m.tokens.filter((t) => t.account === account && !t.deleted).map((t) => t.id);

function call(r: Real, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, auth: object, payload?: object) {
  return r.app.inject({ method, url, headers: auth as Record<string, string>, ...(payload ? { payload } : {}) });
}

/** A 404 body with what legitimately differs (request id, the id quoted in detail) taken out. */
function shape404(res: Res): string {
  assert.equal(res.statusCode, 404, res.body);
  const p = res.json<Record<string, unknown>>();
  return JSON.stringify({ ...p, request_id: '', instance: '', detail: String(p.detail).replace(/tok_\w+/, 'ID') });
}

/** Every token id a 2xx body mentions must belong to `account` (the operator may see all through its routes). */
function noForeignIds(m: Model, res: Res, account: number): void {
  for (const t of m.tokens) {
    if (t.account !== account) assert.ok(!res.body.includes(t.id), `account #${account} was shown ${t.id}`);
  }
}

/** The admin token of account `a`: the operator's (a = 0) or a customer's. */
const adminOf = (m: Model, a: number) => m.tokens[m.accounts[a]!.admin]!;

abstract class Cmd implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  abstract run(m: Model, r: Real): Promise<void>;
  abstract toString(): string;
}

class CreateAccount extends Cmd {
  constructor(readonly name: string) {
    super();
  }
  async run(m: Model, r: Real) {
    const res = await call(r, 'POST', '/api/v1/accounts', bearer(adminOf(m, 0)), { name: this.name });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json<{ id: string; name: string }>();
    const minted = await call(r, 'POST', `/api/v1/accounts/${body.id}/api-tokens`, bearer(adminOf(m, 0)), {
      name: 'admin',
      scopes: CUSTOMER_ADMIN_SCOPES,
    });
    assert.equal(minted.statusCode, 201, minted.body);
    const t = minted.json<{ id: string; token: string }>();
    m.tokens.push({
      id: t.id,
      secret: t.token,
      account: m.accounts.length,
      deleted: false,
      scopes: CUSTOMER_ADMIN_SCOPES,
    });
    m.accounts.push({ id: body.id, name: body.name, status: 'active', deleted: false, admin: m.tokens.length - 1 });
  }
  toString = () => `createAccount(${JSON.stringify(this.name)})`;
}

class ListAccounts extends Cmd {
  async run(m: Model, r: Real) {
    const res = await call(r, 'GET', '/api/v1/accounts', bearer(adminOf(m, 0)));
    assert.equal(res.statusCode, 200);
    const got = res.json<{ id: string; status: string; name: string }[]>();
    const expected = m.accounts.filter((a) => !a.deleted);
    assert.deepEqual(
      got.map((a) => [a.id, a.status, a.name]),
      expected.map((a) => [a.id, a.status, a.name]),
    );
  }
  toString = () => 'listAccounts';
}

class GetAccount extends Cmd {
  constructor(readonly a: number) {
    super();
  }
  async run(m: Model, r: Real) {
    const acc = pick(m.accounts, this.a);
    const res = await call(r, 'GET', `/api/v1/accounts/${acc.id}`, bearer(adminOf(m, 0)));
    assert.equal(res.statusCode, acc.deleted ? 404 : 200);
    if (!acc.deleted) assert.equal(res.json<{ status: string }>().status, acc.status);
  }
  toString = () => `getAccount(#${this.a})`;
}

class PatchAccount extends Cmd {
  constructor(
    readonly a: number,
    readonly patch: { name?: string; status?: 'active' | 'suspended' },
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const acc = pick(m.accounts, this.a);
    const res = await call(r, 'PATCH', `/api/v1/accounts/${acc.id}`, bearer(adminOf(m, 0)), this.patch);
    if (acc.deleted) return assert.equal(res.statusCode, 404);
    if (acc.id === OPERATOR_ACCOUNT_ID && this.patch.status === 'suspended') {
      assert.equal(res.statusCode, 409);
      return assert.equal(res.json<{ code: string }>().code, 'OPERATOR_ACCOUNT');
    }
    assert.equal(res.statusCode, 200, res.body);
    if (this.patch.name !== undefined) acc.name = this.patch.name;
    if (this.patch.status !== undefined) acc.status = this.patch.status;
    assert.deepEqual(res.json<{ name: string; status: string }>().status, acc.status);
  }
  toString = () => `patchAccount(#${this.a}, ${JSON.stringify(this.patch)})`;
}

class DeleteAccount extends Cmd {
  constructor(readonly a: number) {
    super();
  }
  async run(m: Model, r: Real) {
    const acc = pick(m.accounts, this.a);
    const res = await call(r, 'DELETE', `/api/v1/accounts/${acc.id}`, bearer(adminOf(m, 0)));
    if (acc.id === OPERATOR_ACCOUNT_ID) return assert.equal(res.statusCode, 409);
    assert.equal(res.statusCode, acc.deleted ? 404 : 204);
    acc.deleted = true;
  }
  toString = () => `deleteAccount(#${this.a})`;
}

/**
 * Where a command on account `index`'s tokens goes: its own admin on /api-tokens, or the
 * operator on /accounts/{id}/api-tokens; and the refusal it must get instead (404 for a
 * deleted account via the operator, 401 when the account's own admin no longer works).
 */
function tokenRoute(m: Model, index: number, viaOperator: boolean) {
  const acc = m.accounts[index]!;
  return viaOperator
    ? { base: `/api/v1/accounts/${acc.id}/api-tokens`, auth: bearer(adminOf(m, 0)), refused: acc.deleted ? 404 : null }
    : {
        base: '/api/v1/api-tokens',
        auth: bearer(adminOf(m, index)),
        refused: works(m, adminOf(m, index)) ? null : 401,
      };
}

/** A token created by account `a`'s admin in its own account, or by the operator through /accounts/{id}/api-tokens. */
class CreateToken extends Cmd {
  constructor(
    readonly a: number,
    readonly viaOperator: boolean,
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const index = this.a % m.accounts.length;
    const { base, auth, refused } = tokenRoute(m, index, this.viaOperator);
    const res = await call(r, 'POST', base, auth, { name: 'made', scopes: ['apps:read'] });
    if (refused !== null) return assert.equal(res.statusCode, refused, res.body);
    assert.equal(res.statusCode, 201, res.body);
    const t = res.json<{ id: string; token: string }>();
    m.tokens.push({ id: t.id, secret: t.token, account: index, deleted: false, scopes: ['apps:read'] });
  }
  toString = () => `createToken(#${this.a}${this.viaOperator ? ', by the operator' : ''})`;
}

class ListTokens extends Cmd {
  constructor(
    readonly a: number,
    readonly viaOperator: boolean,
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const index = this.a % m.accounts.length;
    const { base, auth, refused } = tokenRoute(m, index, this.viaOperator);
    const res = await call(r, 'GET', base, auth);
    if (refused !== null) return assert.equal(res.statusCode, refused);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(
      res.json<{ id: string }[]>().map((t) => t.id),
      listed(m, index),
    );
    noForeignIds(m, res, index);
  }
  toString = () => `listTokens(#${this.a}${this.viaOperator ? ', by the operator' : ''})`;
}

/** GET or DELETE of token `t` by account `a`'s admin (own routes), or by the operator through account `a`'s routes. */
class TokenById extends Cmd {
  constructor(
    readonly method: 'GET' | 'DELETE',
    readonly a: number,
    readonly t: number,
    readonly viaOperator: boolean,
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const index = this.a % m.accounts.length;
    // The operator's own admin is never the target: every later step needs it.
    const targets = m.tokens.filter((x) => x !== adminOf(m, 0));
    if (targets.length === 0) return;
    const target = pick(targets, this.t);
    const { base, auth, refused } = tokenRoute(m, index, this.viaOperator);
    const res = await call(r, this.method, `${base}/${target.id}`, auth);
    if (refused !== null) return assert.equal(res.statusCode, refused);
    const visible = target.account === index && !target.deleted;
    if (!visible) {
      // Exactly as an id that never existed: same status, same body, same headers.
      const ghost = await call(r, this.method, `${base}/${GHOST_TOKEN}`, auth);
      assert.equal(shape404(res), shape404(ghost));
      assert.deepEqual(Object.keys(res.headers).sort(), Object.keys(ghost.headers).sort());
      return;
    }
    assert.equal(res.statusCode, this.method === 'GET' ? 200 : 204, res.body);
    if (this.method === 'GET') noForeignIds(m, res, index);
    else target.deleted = true;
  }
  toString = () =>
    `${this.method.toLowerCase()}Token(#${this.a} -> token #${this.t}${this.viaOperator ? ', by the operator' : ''})`;
}

/** Token `t` presents itself: current, forward auth, and introspection by an admin of account `a`. */
class UseToken extends Cmd {
  constructor(
    readonly t: number,
    readonly a: number,
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const t = pick(m.tokens, this.t);
    const acc = m.accounts[t.account]!;
    const current = await call(r, 'GET', '/api/v1/api-tokens/current', bearer(t));
    const check = await call(r, 'GET', '/api/v1/auth/check?scope=apps:read', bearer(t));
    if (works(m, t)) {
      assert.equal(current.statusCode, 200, current.body);
      assert.equal(current.json<{ account_id: string }>().account_id, acc.id);
      assert.equal(check.statusCode, 200);
      assert.equal(check.headers['x-account-id'], acc.id);
    } else {
      for (const res of [current, check]) {
        assert.equal(res.statusCode, 401, res.body);
        const suspended = alive(m, t) && acc.status === 'suspended';
        assert.equal(/account is suspended/.test(res.json<{ detail: string }>().detail), suspended, res.body);
      }
    }
    const index = this.a % m.accounts.length;
    const asker = adminOf(m, index);
    const res = await call(r, 'POST', '/api/v1/api-tokens/introspect', bearer(asker), { token: t.secret });
    if (!works(m, asker)) return assert.equal(res.statusCode, 401);
    assert.equal(res.statusCode, 200);
    const sees = works(m, t) && (index === 0 || t.account === index);
    if (sees) assert.equal(res.json<{ account_id: string }>().account_id, acc.id);
    else assert.deepEqual(res.json(), { active: false });
  }
  toString = () => `use(token #${this.t}, introspected by #${this.a})`;
}

const name = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => /^[\p{L}\p{N}][\p{L}\p{N} ]*$/u.test(s.trim()));
const acc = fc.nat({ max: CUSTOMERS + 2 });
const tok = fc.nat({ max: 12 });
const commands = [
  name.map((n) => new CreateAccount(n.trim())),
  fc.constant(new ListAccounts()),
  acc.map((a) => new GetAccount(a)),
  fc
    .tuple(
      acc,
      fc.record(
        {
          name: fc.option(
            name.map((n) => n.trim()),
            { nil: undefined },
          ),
          status: fc.constantFrom<'active' | 'suspended'>('active', 'suspended'),
        },
        { requiredKeys: [] },
      ),
    )
    .map(([a, p]) => new PatchAccount(a, Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)))),
  fc.tuple(acc, fc.constant('suspended' as const)).map(([a, status]) => new PatchAccount(a, { status })),
  fc.tuple(acc, fc.constant('active' as const)).map(([a, status]) => new PatchAccount(a, { status })),
  acc.map((a) => new DeleteAccount(a)),
  fc.tuple(acc, fc.boolean()).map(([a, op]) => new CreateToken(a, op)),
  fc.tuple(acc, fc.boolean()).map(([a, op]) => new ListTokens(a, op)),
  fc
    .tuple(fc.constantFrom<'GET' | 'DELETE'>('GET', 'DELETE'), acc, tok, fc.boolean())
    .map(([method, a, t, op]) => new TokenById(method, a, t, op)),
  fc.tuple(tok, acc).map(([t, a]) => new UseToken(t, a)),
];

async function runModel(t: TestContext, backend: Backend): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: 'medium' }), async (cmds) => {
      const db = await backend.fresh(t);
      const built = await build(t, {
        store: db.open(),
        env: { DATABASE_URL: db.url, RATE_LIMIT: '0', RATE_LIMIT_ANONYMOUS: '0', AUTH_FAILURE_LIMIT: '1000000' },
      });
      const model: Model = { accounts: [], tokens: [] };
      const real: Real = { app: built.app };
      // The operator: its account, and an admin token holding what every step needs.
      const op = await built.app.infracat.tokens.service.create(
        { name: 'operator', scopes: ['accounts:write', 'api-tokens:write', 'apps:read'] },
        null,
        OPERATOR_ACCOUNT_ID,
        TEST_CONTEXT,
      );
      model.tokens.push({ id: op.token.id, secret: op.secret, account: 0, deleted: false, scopes: op.token.scopes });
      model.accounts.push({ id: OPERATOR_ACCOUNT_ID, name: 'operator', status: 'active', deleted: false, admin: 0 });
      for (let i = 0; i < CUSTOMERS; i++) await new CreateAccount(`customer ${i}`).run(model, real);
      try {
        await fc.asyncModelRun(() => ({ model, real }), cmds);
      } finally {
        await built.app.close();
      }
    }),
    { numRuns: RUNS, endOnFailure: true },
  );
}

for (const backend of backends()) {
  describe(`account tenancy model on ${backend.name}`, () => {
    it(`${RUNS} random command sequences agree with the model`, async (t) => {
      await runModel(t, backend);
    });
  });
}
