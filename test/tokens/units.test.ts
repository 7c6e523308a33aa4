// The token domain's building blocks, without HTTP or storage.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Value } from 'typebox/value';
import { VerificationCache } from '../../src/tokens/cache.js';
import { CHECKSUM_CHARS, checkSecret, generateSecret, hashSecret, RANDOM_CHARS } from '../../src/tokens/format.js';
import { firstIdAt, newTokenId, TOKEN_ID_PATTERN } from '../../src/tokens/ids.js';
import { validateCreate, type Caller } from '../../src/tokens/rules.js';
import { CreatedToken, ScopeView, TokenView } from '../../src/tokens/schemas.js';
import { grants, missingScopes, parseScope, ScopeRegistry } from '../../src/tokens/scopes.js';
import { createdView, tokenView } from '../../src/tokens/views.js';
import { FailureLimiter } from '../../src/http/failure-limiter.js';
import type { TokenRecord, TokenWithAccount } from '../../src/storage/types.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';

describe('secret format', () => {
  it('is <prefix>_<30 base62><6 base62 checksum> and passes its own check', () => {
    for (let i = 0; i < 200; i++) {
      const s = generateSecret('icat');
      assert.match(s, new RegExp(`^icat_[0-9A-Za-z]{${RANDOM_CHARS + CHECKSUM_CHARS}}$`));
      assert.deepEqual(checkSecret(s, 'icat'), { ok: true });
    }
    assert.ok(RANDOM_CHARS * Math.log2(62) >= 160, 'at least 160 random bits');
  });

  it('every single-character change is caught by the checksum or the shape check', () => {
    const s = generateSecret('icat');
    let caught = 0;
    for (let i = 5; i < s.length; i++) {
      const changed = s.slice(0, i) + (s[i] === 'x' ? 'y' : 'x') + s.slice(i + 1);
      if (!checkSecret(changed, 'icat').ok) caught += 1;
    }
    assert.equal(caught, s.length - 5);
  });

  it('rejects other prefixes, lengths and alphabets', () => {
    const s = generateSecret('icat');
    assert.deepEqual(checkSecret(s, 'other'), { ok: false, reason: 'format' });
    assert.deepEqual(checkSecret(`${s}A`, 'icat'), { ok: false, reason: 'format' });
    assert.deepEqual(checkSecret(s.replace(/.$/, '-'), 'icat'), { ok: false, reason: 'format' });
    assert.deepEqual(checkSecret('', 'icat'), { ok: false, reason: 'format' });
  });

  it('random parts do not repeat and use the whole alphabet', () => {
    const seen = new Set<string>();
    const chars = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const s = generateSecret('icat');
      seen.add(s);
      for (const c of s.slice(5, 5 + RANDOM_CHARS)) chars.add(c);
    }
    assert.equal(seen.size, 2000);
    assert.equal(chars.size, 62);
  });

  it('hash is lowercase hex SHA-256', () => {
    assert.equal(hashSecret('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('token ids', () => {
  it('are tok_ + ULID, unique and sortable by creation', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => newTokenId(1_800_000_000_000 + Math.floor(i / 10)));
    for (const id of ids) assert.match(id, TOKEN_ID_PATTERN);
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...ids].sort(), ids, 'lexical order is creation order, also within one millisecond');
  });

  it('carry the exact time they are minted for, also after the clock stepped back; firstIdAt bounds a ms', () => {
    const later = newTokenId(1_800_000_000_500);
    const earlier = newTokenId(1_800_000_000_000);
    const sameMs = newTokenId(1_800_000_000_000);
    // The audit trail's since/until are id ranges: an id's time must be its event's occurred_at.
    assert.ok(earlier < later, 'an id minted for an earlier time sorts earlier, whatever was minted before');
    assert.ok(earlier < sameMs, 'within one millisecond, in order');
    for (const id of [earlier, sameMs]) {
      assert.ok(id >= firstIdAt('tok', 1_800_000_000_000) && id < firstIdAt('tok', 1_800_000_000_001), id);
    }
    assert.ok(later >= firstIdAt('tok', 1_800_000_000_500) && later < firstIdAt('tok', 1_800_000_000_501));
    assert.equal(firstIdAt('evt', -5), 'evt_00000000000000000000000000', 'before 1970: the first id of all');
    assert.equal(firstIdAt('evt', 2 ** 50), 'evt_7ZZZZZZZZZ0000000000000000', 'clamped to what a ULID holds');
  });
});

describe('scopes', () => {
  it('parse <resource>:<read|write> only', () => {
    assert.deepEqual(parseScope('apps:read'), { resource: 'apps', action: 'read' });
    assert.deepEqual(parseScope('api-tokens:write'), { resource: 'api-tokens', action: 'write' });
    for (const bad of ['apps', 'apps:', ':read', 'apps:admin', 'Apps:read', 'apps:read ', 'a b:read', 'apps:read:x'])
      assert.equal(parseScope(bad), null, bad);
  });

  it('write implies read of the same resource, nothing else', () => {
    assert.ok(grants(['apps:write'], 'apps:read'));
    assert.ok(grants(['apps:read'], 'apps:read'));
    assert.ok(!grants(['apps:read'], 'apps:write'));
    assert.ok(!grants(['apps:write'], 'images:read'));
    assert.deepEqual(missingScopes(['apps:write', 'images:read'], ['apps:read', 'catalog:write', 'plans:read']), [
      'catalog:write',
      'plans:read',
    ]);
  });

  it('the registry validates requested lists entry by entry', () => {
    const r = new ScopeRegistry(['apps']);
    assert.deepEqual(r.names(), ['apps:read', 'apps:write']);
    assert.deepEqual(
      r.validate(['apps:read', 'apps:read', 'images:read', 'junk']).map((e) => e.pointer),
      ['/scopes/1', '/scopes/2', '/scopes/3'],
    );
    assert.throws(() => new ScopeRegistry(['Bad Resource']));
  });
});

// A caller without conditions, and the conditions of a token created without any.
const UNCONDITIONED = { allowedCidrs: null, notBefore: null };
const NO_CONDITIONS = { allowedCidrs: null, notBefore: null, enabled: true };

describe('create rules: a new token never outlives its creator', () => {
  const now = Date.UTC(2030, 0, 1);
  const ctx = (caller: Caller | null) => ({
    registry: new ScopeRegistry(),
    now,
    maxLifetimeMs: 30 * 86_400_000,
    caller,
    operatorAccount: true,
  });
  const iso = (ms: number) => new Date(ms).toISOString();
  const ask = (expires_at: string | null | undefined, caller: Caller | null) =>
    validateCreate({ name: 'x', scopes: ['apps:read'], expires_at }, ctx(caller));
  const expiring: Caller = { scopes: ['api-tokens:write', 'apps:read'], expiresAt: now + 5000, ...UNCONDITIONED };

  it("no expires_at: the creator's expiry; none for a creator that never expires and for the operator", () => {
    assert.deepEqual(ask(undefined, expiring), {
      value: { name: 'x', scopes: ['apps:read'], expiresAt: now + 5000, ...NO_CONDITIONS },
    });
    assert.deepEqual(ask(undefined, { scopes: ['api-tokens:write'], expiresAt: null, ...UNCONDITIONED }), {
      value: { name: 'x', scopes: ['apps:read'], expiresAt: null, ...NO_CONDITIONS },
    });
    assert.deepEqual(ask(undefined, null), {
      value: { name: 'x', scopes: ['apps:read'], expiresAt: null, ...NO_CONDITIONS },
    });
  });

  it('null or a later time from an expiring creator is refused at /expires_at, naming its expiry', () => {
    for (const asked of [null, iso(now + 5001), iso(now + 86_400_000)]) {
      const result = ask(asked, expiring);
      assert.ok('errors' in result, String(asked));
      assert.deepEqual(
        result.errors.map((e) => e.pointer),
        ['/expires_at'],
      );
      assert.ok(result.errors[0]!.detail.includes(iso(now + 5000)), result.errors[0]!.detail);
    }
  });

  it(
    "up to the creator's expiry is granted as asked; the operator and never-expiring creators may ask for " + 'null',
    () => {
      for (const at of [now + 1, now + 4999, now + 5000])
        assert.deepEqual(ask(iso(at), expiring), {
          value: { name: 'x', scopes: ['apps:read'], expiresAt: at, ...NO_CONDITIONS },
        });
      assert.deepEqual(ask(null, null), {
        value: { name: 'x', scopes: ['apps:read'], expiresAt: null, ...NO_CONDITIONS },
      });
      assert.deepEqual(ask(null, { scopes: [], expiresAt: null, ...UNCONDITIONED }), {
        value: { name: 'x', scopes: ['apps:read'], expiresAt: null, ...NO_CONDITIONS },
      });
    },
  );
});

describe('token views', () => {
  const fields = (schema: { properties: object }) => Object.keys(schema.properties);
  const record: TokenRecord = {
    id: 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H',
    name: 'ci',
    scopes: ['apps:read'],
    secretHash: 'a'.repeat(64),
    createdAt: Date.UTC(2026, 10, 21, 19),
    expiresAt: null,
    lastUsedAt: null,
    lastUsedIp: null,
    accountId: OPERATOR_ACCOUNT_ID,
    previousSecretHash: null,
    previousExpiresAt: null,
    allowedCidrs: null,
    notBefore: null,
    enabled: true,
  };

  it('carry exactly the fields of their response schemas, in order, and no secret hash', () => {
    for (const t of [record, { ...record, expiresAt: record.createdAt + 1000, lastUsedAt: record.createdAt + 1 }]) {
      const view = tokenView(t);
      assert.ok(Value.Check(TokenView, view), JSON.stringify(view));
      assert.deepEqual(Object.keys(view), fields(TokenView));
      const created = createdView({ token: t, secret: 'icat_secret' });
      assert.ok(Value.Check(CreatedToken, created), JSON.stringify(created));
      assert.deepEqual(Object.keys(created), fields(CreatedToken));
      assert.ok(!JSON.stringify([view, created]).includes(t.secretHash));
    }
    assert.equal(tokenView(record).created_at, '2026-11-21T19:00:00.000Z');
  });

  it('the scope registry lists entries of the scope schema', () => {
    for (const entry of new ScopeRegistry().all()) {
      assert.ok(Value.Check(ScopeView, entry), entry.scope);
      assert.deepEqual(Object.keys(entry), fields(ScopeView));
    }
  });
});

describe('verification cache', () => {
  const token = (id: string): TokenWithAccount => ({
    id,
    name: id,
    scopes: [],
    secretHash: id,
    createdAt: 0,
    expiresAt: null,
    lastUsedAt: null,
    lastUsedIp: null,
    accountId: OPERATOR_ACCOUNT_ID,
    previousSecretHash: null,
    previousExpiresAt: null,
    allowedCidrs: null,
    notBefore: null,
    enabled: true,
    accountStatus: 'active',
    accountRateLimit: null,
  });
  /** A storage stand-in by hash: reads are counted; `hold()` makes the next reads wait for `release()`. */
  function storage(records: Record<string, TokenWithAccount | null>) {
    let reads = 0;
    let gate: Promise<void> = Promise.resolve();
    let release = (): void => undefined;
    const read = async (hash: string): Promise<TokenWithAccount | null> => {
      reads += 1;
      const found = records[hash] ?? null;
      await gate;
      return found;
    };
    const hold = (): void => {
      gate = new Promise<void>((r) => (release = r));
    };
    return { read, hold, release: () => release(), reads: () => reads };
  }
  // lru-cache takes a start time of 0 for "no TTL": the test clock starts later.
  const clock = (t: number) => ({
    t,
    now(): number {
      return this.t;
    },
  });

  it('serves an entry for ttl counted from when its read began, then reads again', async () => {
    const c0 = clock(1000);
    const s = storage({ h1: token('a') });
    const c = new VerificationCache(10, 100, s.read, () => c0.now());
    assert.equal(c.get('h1'), undefined);
    s.hold();
    const loading = c.load('h1');
    c0.t = 1050; // the read took 50 ms
    s.release();
    assert.equal((await loading)?.id, 'a');
    c0.t = 1099;
    assert.equal(c.get('h1')?.id, 'a');
    c0.t = 1101;
    assert.equal(c.get('h1'), undefined, 'a delete the read missed is at most ttl old');
    assert.equal((await c.load('h1'))?.id, 'a');
    assert.equal(s.reads(), 2);
    assert.deepEqual({ hits: c.hits, misses: c.misses }, { hits: 1, misses: 2 });
  });

  it('is bounded, evicting the least recently used', async () => {
    const c0 = clock(1000);
    const s = storage({ h1: token('a'), h2: token('b'), h3: token('c') });
    const c = new VerificationCache(2, 10_000, s.read, () => c0.now());
    await c.load('h1');
    await c.load('h2');
    c.get('h1');
    await c.load('h3');
    assert.equal(c.size, 2);
    assert.equal(c.get('h2'), undefined, 'b was least recently used');
    assert.equal(c.get('h1')?.id, 'a');
  });

  it('concurrent loads of one hash share one read; unknown hashes and failed reads are not kept', async () => {
    const s = storage({ h1: token('a') });
    const c = new VerificationCache(10, 10_000, s.read);
    s.hold();
    const loads = [c.load('h1'), c.load('h1'), c.load('nope'), c.load('nope')];
    s.release();
    assert.deepEqual(
      (await Promise.all(loads)).map((t) => t?.id ?? null),
      ['a', 'a', null, null],
    );
    assert.equal(s.reads(), 2);
    assert.equal(c.size, 1, 'the unknown hash is not cached');
    assert.equal(await c.load('nope'), null);
    assert.equal(s.reads(), 3);
    let fail = true;
    const flaky = new VerificationCache(10, 10_000, async () => {
      if (fail) throw new Error('storage down');
      return token('b');
    });
    await assert.rejects(flaky.load('h2'), /storage down/, 'a storage error propagates');
    fail = false;
    assert.equal((await flaky.load('h2'))?.id, 'b', 'and is not remembered');
  });

  it('a load pushed out while its read runs still answers: the token, or null if unknown (not an error)', async () => {
    const s = storage({ h1: token('a') });
    const c = new VerificationCache(1, 10_000, s.read);
    s.hold();
    const found = c.load('h1');
    const unknown = c.load('nope'); // evicts the load of h1 (max 1)
    const other = c.load('h1'); // evicts the load of nope
    s.release();
    assert.equal((await found)?.id, 'a');
    assert.equal(await unknown, null);
    assert.equal((await other)?.id, 'a');
  });

  it('evicts a token by hash, its load in flight included, or by id when the hash is unknown', async () => {
    const s = storage({ h1: token('a'), h2: token('b') });
    const c = new VerificationCache(10, 10_000, s.read);
    await c.load('h1');
    c.evict('a', undefined, OPERATOR_ACCOUNT_ID);
    assert.equal(c.get('h1'), undefined);
    s.hold();
    const before = c.load('h2');
    c.evict('b', 'h2', OPERATOR_ACCOUNT_ID);
    const after = c.load('h2');
    s.release();
    assert.equal((await before)?.id, 'b');
    assert.equal((await after)?.id, 'b');
    assert.equal(s.reads(), 3, 'the load after the eviction made its own read');
  });

  it('ttl 0 turns caching off; concurrent loads still share one read', async () => {
    const s = storage({ h1: token('a') });
    const c = new VerificationCache(10, 0, s.read);
    s.hold();
    const loads = [c.load('h1'), c.load('h1')];
    s.release();
    assert.deepEqual(
      (await Promise.all(loads)).map((t) => t?.id),
      ['a', 'a'],
    );
    assert.equal(s.reads(), 1);
    assert.equal(c.get('h1'), undefined, 'never served from memory');
    assert.equal((await c.load('h1'))?.id, 'a');
    assert.equal(s.reads(), 2, 'every load reads storage');
  });
});

describe('failed-authentication limiter', () => {
  it('blocks a key past the limit until its window ends', () => {
    const l = new FailureLimiter(2, 10_000);
    l.fail('ip', 0);
    assert.equal(l.retryAfter('ip', 1), 0);
    l.fail('ip', 1);
    assert.equal(l.retryAfter('ip', 2), 10);
    assert.equal(l.retryAfter('other', 2), 0);
    assert.equal(l.retryAfter('ip', 10_000), 0, 'a new window');
  });

  it('tracks a bounded number of addresses', () => {
    const l = new FailureLimiter(1, 10_000, 3);
    for (const ip of ['a', 'b', 'c', 'd']) l.fail(ip, 0);
    assert.equal(l.retryAfter('a', 1), 0, 'the oldest address was dropped');
    assert.ok(l.retryAfter('d', 1) > 0);
  });
});
