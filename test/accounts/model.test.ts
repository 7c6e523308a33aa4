// Model-based test of tenancy (fast-check commands): random sequences of every account
// and token operation, by the operator and by the tokens of at least three customer
// accounts, against the real app on both backends, each answer checked against a plain
// in-memory model. What it proves: no operation made with one account's token ever
// shows, changes or confirms the existence of another account's tokens (another
// account's token id is answered exactly as an unknown one); a suspended or deleted
// account's tokens are refused everywhere; the operator sees all; no token grants,
// edits, rotates or deletes beyond the scopes it holds. Tokens are rotated (with no grace
// period, or one of a day, which no run outlives) and edited (renamed, scopes narrowed or
// widened): the model knows each token's scopes and which of its secrets are live.
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
/** What edits choose scope lists from: what the operator's admin holds, and apps:write, which no token holds. */
const EDIT_SCOPES = ['api-tokens:write', 'api-tokens:read', 'apps:read', 'apps:write'];
const GHOST_TOKEN = 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H';

interface MToken {
  id: string;
  name: string;
  /** The current secret. */
  secret: string;
  /** The secret before the last rotation, in its grace period (a day: no run outlives it), or null. */
  previous: string | null;
  /** Every other secret the token ever had: always refused. */
  retired: string[];
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
const token = (id: string, secret: string, account: number, name: string, scopes: string[]): MToken => ({
  id,
  name,
  secret,
  previous: null,
  retired: [],
  account,
  deleted: false,
  scopes,
});
/** Whether `scopes` grant `scope` (write implies read). */
const holds = (scopes: readonly string[], scope: string) =>
  scopes.includes(scope) || (scope.endsWith(':read') && scopes.includes(scope.replace(/:read$/, ':write')));
const holdsAll = (caller: MToken, scopes: readonly string[]) => scopes.every((s) => holds(caller.scopes, s));
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
    m.tokens.push(token(t.id, t.token, m.accounts.length, 'admin', CUSTOMER_ADMIN_SCOPES));
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
 * operator on /accounts/{id}/api-tokens; the token that acts; and the refusal it must get
 * before anything else (404 for a deleted account via the operator, 401 when the
 * account's own admin no longer works, 403 when it lacks api-tokens:read or :write, as
 * `needs` says; the operator's admin holds what every route needs, and is never edited).
 */
function tokenRoute(m: Model, index: number, viaOperator: boolean, needs: 'read' | 'write') {
  const acc = m.accounts[index]!;
  if (viaOperator) {
    const caller = adminOf(m, 0);
    return {
      base: `/api/v1/accounts/${acc.id}/api-tokens`,
      auth: bearer(caller),
      caller,
      refused: acc.deleted ? 404 : null,
    };
  }
  const caller = adminOf(m, index);
  const refused = !works(m, caller) ? 401 : holds(caller.scopes, `api-tokens:${needs}`) ? null : 403;
  return { base: '/api/v1/api-tokens', auth: bearer(caller), caller, refused };
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
    const { base, auth, caller, refused } = tokenRoute(m, index, this.viaOperator, 'write');
    const res = await call(r, 'POST', base, auth, { name: 'made', scopes: ['apps:read'] });
    if (refused !== null) return assert.equal(res.statusCode, refused, res.body);
    if (!holdsAll(caller, ['apps:read'])) return assert.equal(res.statusCode, 403, 'no escalation');
    assert.equal(res.statusCode, 201, res.body);
    const t = res.json<{ id: string; token: string }>();
    m.tokens.push(token(t.id, t.token, index, 'made', ['apps:read']));
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
    const { base, auth, refused } = tokenRoute(m, index, this.viaOperator, 'read');
    const res = await call(r, 'GET', base, auth);
    if (refused !== null) return assert.equal(res.statusCode, refused);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(
      res.json<{ id: string }[]>().map((t) => t.id),
      listed(m, index),
    );
    for (const shown of res.json<{ id: string; name: string; scopes: string[] }[]>()) {
      const t = m.tokens.find((x) => x.id === shown.id)!;
      assert.deepEqual([shown.name, shown.scopes], [t.name, t.scopes], `name and scopes of ${t.id}`);
    }
    noForeignIds(m, res, index);
  }
  toString = () => `listTokens(#${this.a}${this.viaOperator ? ', by the operator' : ''})`;
}

/**
 * A command on one token (`t`, see pickTarget) by account `a`'s admin (own routes), or by
 * the operator through account `a`'s routes. `send` makes the request for a token id; a
 * target the caller cannot see (another account's, deleted) must be answered exactly as
 * an id that never existed: same status, body and headers. Resolves to the target, the
 * caller and the answer when the target is visible.
 */
async function onToken(
  m: Model,
  r: Real,
  cmd: { a: number; t: number; viaOperator: boolean },
  needs: 'read' | 'write',
  send: (url: string, auth: object) => Promise<Res>,
): Promise<{ target: MToken; caller: MToken; res: Res } | null> {
  const index = cmd.a % m.accounts.length;
  const target = pickTarget(m, cmd.t);
  if (target === undefined) return null;
  const { base, auth, caller, refused } = tokenRoute(m, index, cmd.viaOperator, needs);
  const res = await send(`${base}/${target.id}`, auth);
  if (refused !== null) {
    assert.equal(res.statusCode, refused, res.body);
    return null;
  }
  if (target.account !== index || target.deleted) {
    const ghost = await send(`${base}/${GHOST_TOKEN}`, auth);
    assert.equal(shape404(res), shape404(ghost));
    assert.deepEqual(Object.keys(res.headers).sort(), Object.keys(ghost.headers).sort());
    return null;
  }
  return { target, caller, res };
}

/** Token `t` among those commands may target: any but the operator's own admin (every later step needs it). */
function pickTarget(m: Model, t: number): MToken | undefined {
  const targets = m.tokens.filter((x) => x !== adminOf(m, 0));
  return targets.length === 0 ? undefined : pick(targets, t);
}

const by = (viaOperator: boolean) => (viaOperator ? ', by the operator' : '');

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
    const needs = this.method === 'GET' ? 'read' : 'write';
    const seen = await onToken(m, r, this, needs, (url, auth) => call(r, this.method, url, auth));
    if (seen === null) return;
    const { target, caller, res } = seen;
    if (this.method === 'GET') {
      assert.equal(res.statusCode, 200, res.body);
      return noForeignIds(m, res, target.account);
    }
    // A token deletes only tokens whose scopes it holds.
    if (!holdsAll(caller, target.scopes)) return assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.statusCode, 204, res.body);
    target.deleted = true;
  }
  toString = () => `${this.method.toLowerCase()}Token(#${this.a} -> token #${this.t}${by(this.viaOperator)})`;
}

/** Rotation of token `t` (as TokenById), with no grace period or one of a day. */
class RotateToken extends Cmd {
  constructor(
    readonly a: number,
    readonly t: number,
    readonly viaOperator: boolean,
    readonly graceS: 0 | 86_400,
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const body = this.graceS === 0 ? undefined : { grace_period_s: this.graceS };
    const seen = await onToken(m, r, this, 'write', (url, auth) => call(r, 'POST', `${url}/rotate`, auth, body));
    if (seen === null) return;
    const { target, caller, res } = seen;
    if (!holdsAll(caller, target.scopes)) return assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.statusCode, 200, res.body);
    const rotated = res.json<{ id: string; token: string; scopes: string[] }>();
    assert.deepEqual([rotated.id, rotated.scopes], [target.id, target.scopes]);
    // At most two live secrets: an earlier previous one is retired at once.
    if (target.previous !== null) target.retired.push(target.previous);
    if (this.graceS > 0) target.previous = target.secret;
    else {
      target.retired.push(target.secret);
      target.previous = null;
    }
    target.secret = rotated.token;
  }
  toString = () => `rotate(#${this.a} -> token #${this.t}, grace=${this.graceS}s${by(this.viaOperator)})`;
}

/** A merge patch of token `t` (as TokenById): a name and/or a scope list, maybe one the caller lacks. */
class EditToken extends Cmd {
  constructor(
    readonly a: number,
    readonly t: number,
    readonly viaOperator: boolean,
    readonly patch: { name?: string; scopes?: string[] },
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    // A working target is used first, so the instance holds it in its verification cache.
    const before = pickTarget(m, this.t);
    if (before !== undefined && works(m, before))
      assert.equal((await call(r, 'GET', '/api/v1/api-tokens/current', bearer(before))).statusCode, 200);
    const seen = await onToken(m, r, this, 'write', (url, auth) => call(r, 'PATCH', url, auth, this.patch));
    if (seen === null) return;
    const { target, caller, res } = seen;
    // A token edits only tokens it could delete, and grants only scopes it holds.
    if (!holdsAll(caller, target.scopes) || !holdsAll(caller, this.patch.scopes ?? []))
      return assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.statusCode, 200, res.body);
    if (this.patch.name !== undefined) target.name = this.patch.name;
    if (this.patch.scopes !== undefined) target.scopes = this.patch.scopes;
    const body = res.json<{ id: string; name: string; scopes: string[] }>();
    assert.deepEqual([body.id, body.name, body.scopes], [target.id, target.name, target.scopes]);
    if (works(m, target)) {
      // At once, though it was cached: the token authenticates with its new scopes.
      const now = await call(r, 'GET', '/api/v1/api-tokens/current', bearer(target));
      assert.deepEqual(now.json<{ scopes: string[] }>().scopes, target.scopes, 'the edit holds at once');
      const check = await call(r, 'GET', '/api/v1/auth/check?scope=apps:read', bearer(target));
      assert.equal(check.statusCode, holds(target.scopes, 'apps:read') ? 200 : 403, 'forward auth too');
    }
  }
  toString = () => `edit(#${this.a} -> token #${this.t}, ${JSON.stringify(this.patch)}${by(this.viaOperator)})`;
}

/** Which of a token's secrets a use presents (one it lacks: its current one). */
type Which = 'current' | 'previous' | 'retired';

/** Token `t` presents one of its secrets: current, forward auth, and introspection by an admin of account `a`. */
class UseToken extends Cmd {
  constructor(
    readonly t: number,
    readonly a: number,
    readonly which: Which = 'current',
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const t = pick(m.tokens, this.t);
    const acc = m.accounts[t.account]!;
    let secret = t.secret;
    if (this.which === 'previous' && t.previous !== null) secret = t.previous;
    if (this.which === 'retired' && t.retired.length > 0) secret = pick(t.retired, this.t);
    // The previous secret is in its grace period (a day) for the whole run.
    const valid = !t.retired.includes(secret);
    const usable = valid && works(m, t);
    const auth = { authorization: `Bearer ${secret}` };
    const current = await call(r, 'GET', '/api/v1/api-tokens/current', auth);
    const check = await call(r, 'GET', '/api/v1/auth/check?scope=apps:read', auth);
    if (usable) {
      assert.equal(current.statusCode, 200, current.body);
      assert.equal(current.json<{ account_id: string }>().account_id, acc.id);
      assert.deepEqual(current.json<{ scopes: string[] }>().scopes, t.scopes);
      // Forward auth answers by the token's scopes as they are now (edits hold at once).
      assert.equal(check.statusCode, holds(t.scopes, 'apps:read') ? 200 : 403, check.body);
      if (check.statusCode === 200) assert.equal(check.headers['x-account-id'], acc.id);
    } else {
      for (const res of [current, check]) {
        assert.equal(res.statusCode, 401, res.body);
        const suspended = valid && alive(m, t) && acc.status === 'suspended';
        assert.equal(/account is suspended/.test(res.json<{ detail: string }>().detail), suspended, res.body);
      }
    }
    const index = this.a % m.accounts.length;
    const asker = adminOf(m, index);
    const res = await call(r, 'POST', '/api/v1/api-tokens/introspect', bearer(asker), { token: secret });
    if (!works(m, asker)) return assert.equal(res.statusCode, 401);
    if (!holds(asker.scopes, 'api-tokens:read')) return assert.equal(res.statusCode, 403);
    assert.equal(res.statusCode, 200);
    const sees = usable && (index === 0 || t.account === index);
    if (sees) assert.equal(res.json<{ account_id: string }>().account_id, acc.id);
    else assert.deepEqual(res.json(), { active: false });
  }
  toString = () => `use(token #${this.t}, ${this.which}, introspected by #${this.a})`;
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
  fc
    .tuple(tok, acc, fc.constantFrom<Which>('current', 'previous', 'retired'))
    .map(([t, a, which]) => new UseToken(t, a, which)),
  fc
    .tuple(acc, tok, fc.boolean(), fc.constantFrom<0 | 86_400>(0, 86_400))
    .map(([a, t, op, grace]) => new RotateToken(a, t, op, grace)),
  fc
    .tuple(
      acc,
      tok,
      fc.boolean(),
      fc.record(
        {
          name: name.map((n) => n.trim()),
          scopes: fc.subarray(EDIT_SCOPES, { minLength: 1 }),
        },
        { requiredKeys: [] },
      ),
    )
    .map(([a, t, op, patch]) => new EditToken(a, t, op, patch)),
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
      model.tokens.push(token(op.token.id, op.secret, 0, 'operator', op.token.scopes));
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
