// The failed-authentication limiter's gate on its own: how many lookups an address may
// have in flight, in what order waiting ones get their turn, the memory of unknown
// hashes, and the bounds on what it keeps.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressKey } from '../../src/http/client-key.js';
import { FailureLimiter } from '../../src/http/failure-limiter.js';
import type { TokenWithAccount } from '../../src/storage/types.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';

const TOKEN: TokenWithAccount = {
  id: 'tok_1',
  name: 'x',
  scopes: [],
  secretHash: 'h',
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
};

/** Lookups that finish only when the test says so, recording the order they started in. */
function controlledReads() {
  const started: string[] = [];
  const finish = new Map<string, (value: TokenWithAccount | null) => void>();
  const fail = new Map<string, (err: Error) => void>();
  const read = (hash: string) => () =>
    new Promise<TokenWithAccount | null>((resolve, reject) => {
      started.push(hash);
      finish.set(hash, resolve);
      fail.set(hash, reject);
    });
  return {
    started,
    read,
    finish: (hash: string, v: TokenWithAccount | null) => finish.get(hash)!(v),
    fail: (hash: string) => fail.get(hash)!(new Error('storage down')),
  };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('failure limiter gate', () => {
  it('an address may have as many lookups in flight as it has failures left, and at least one', async () => {
    const clock = { t: 0 };
    const now = () => clock.t;
    const l = new FailureLimiter(3, 60_000);
    const gate = l.gate('ip', now);
    const r = controlledReads();
    const answers = ['a', 'b', 'c', 'd'].map((h) => gate(h, r.read(h)));
    await settle();
    assert.deepEqual(r.started, ['a', 'b', 'c'], 'three failures left: three at once');
    l.fail('ip', now());
    l.fail('ip', now());
    l.fail('ip', now());
    r.finish('a', null);
    await settle();
    assert.deepEqual(r.started, ['a', 'b', 'c'], 'past the limit: d waits until nothing is in flight');
    r.finish('b', null);
    r.finish('c', TOKEN);
    await settle();
    assert.deepEqual(r.started, ['a', 'b', 'c', 'd']);
    r.finish('d', TOKEN);
    assert.deepEqual(await Promise.all(answers), [null, null, TOKEN, TOKEN]);
    assert.equal(l.sizes.gates, 0, 'no gate is kept once idle');
  });

  it('past the limit, one at a time in arrival order; other addresses are not held up', async () => {
    const now = () => 0;
    const l = new FailureLimiter(1, 60_000);
    l.fail('ip', 0);
    const r = controlledReads();
    const gate = l.gate('ip', now);
    const answers = Promise.allSettled(['a', 'b', 'c'].map((h) => gate(h, r.read(h))));
    const other = l.gate('other', now)('z', r.read('z'));
    await settle();
    assert.deepEqual(r.started, ['a', 'z']);
    r.finish('a', null);
    await settle();
    assert.deepEqual(r.started, ['a', 'z', 'b']);
    r.fail('b');
    await settle();
    assert.deepEqual(r.started, ['a', 'z', 'b', 'c'], 'a failed read gives its turn back too');
    r.finish('c', TOKEN);
    r.finish('z', TOKEN);
    const settled = await answers;
    assert.deepEqual(
      settled.map((s) => s.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal(await other, TOKEN);
    assert.equal(l.sizes.gates, 0);
  });

  it(
    'a hash found unknown is answered without a lookup until the window ends; a found one, or a failed read, is ' +
      'not remembered',
    async () => {
      const clock = { t: 0 };
      const l = new FailureLimiter(5, 10_000);
      const gate = l.gate('ip', () => clock.t);
      let reads = 0;
      const lookup = (value: TokenWithAccount | null) => async () => {
        reads += 1;
        return value;
      };
      assert.equal(await gate('fake', lookup(null)), null);
      assert.equal(await l.gate('elsewhere', () => clock.t)('fake', lookup(TOKEN)), null, 'from any address');
      assert.equal(reads, 1);
      clock.t = 10_000;
      assert.equal(await gate('fake', lookup(null)), null);
      assert.equal(reads, 2, 'forgotten after the window');
      await gate('real', lookup(TOKEN));
      await gate('real', lookup(TOKEN));
      assert.equal(reads, 4, "found tokens are the cache's business");
      await assert.rejects(
        gate('flaky', async () => {
          reads += 1;
          throw new Error('storage down');
        }),
      );
      assert.equal(await gate('flaky', lookup(TOKEN)), TOKEN, 'an error is not an answer');
    },
  );

  it('a request that waited is not looked up if one ahead of it found the same hash unknown', async () => {
    const l = new FailureLimiter(1, 60_000);
    l.fail('ip', 0);
    const gate = l.gate('ip', () => 0);
    const r = controlledReads();
    const first = gate('same', r.read('same'));
    const second = gate('same', async () => {
      throw new Error('must not be read');
    });
    await settle();
    r.finish('same', null);
    assert.deepEqual(await Promise.all([first, second]), [null, null]);
  });

  it('memory is bounded: addresses and remembered hashes, oldest dropped first', async () => {
    const l = new FailureLimiter(1, 60_000, 3, 4);
    for (const ip of ['a', 'b', 'c', 'd', 'e']) l.fail(ip, 0);
    const gate = l.gate('x', () => 0);
    for (let i = 0; i < 10; i++) await gate(`h${i}`, async () => null);
    assert.deepEqual(l.sizes, { addresses: 3, gates: 0, unknown: 4 });
    let reads = 0;
    await gate('h0', async () => {
      reads += 1;
      return null;
    });
    assert.equal(reads, 1, 'the oldest hash was forgotten');
    await gate('h9', async () => {
      reads += 1;
      return null;
    });
    assert.equal(reads, 1, 'the newest is still remembered');
  });

  it('the oldest window is dropped first, however recently its address was checked', () => {
    const l = new FailureLimiter(1, 60_000, 2);
    l.fail('a', 0);
    l.fail('b', 1);
    assert.ok(l.retryAfter('a', 2) > 0, 'a is checked (and still over its limit)');
    l.fail('c', 3);
    assert.equal(l.retryAfter('a', 4), 0, 'a had the oldest window');
    assert.ok(l.retryAfter('b', 4) > 0);
    assert.ok(l.retryAfter('c', 4) > 0);
  });

  it('fail() says whether the address had already used up its failures (429) or not (401)', () => {
    const l = new FailureLimiter(2, 10_000);
    assert.equal(l.fail('ip', 0), 0);
    assert.equal(l.fail('ip', 1), 0, 'the second of two allowed failures');
    assert.equal(l.fail('ip', 2_000), 8);
    assert.equal(l.fail('ip', 10_000), 0, 'a new window');
  });
});

describe('addressKey', () => {
  it('IPv4 as it is (also when IPv4-mapped); IPv6 by /64; anything else unchanged', () => {
    const cases: [string, string][] = [
      ['192.0.2.1', '192.0.2.1'],
      ['::ffff:192.0.2.1', '192.0.2.1'],
      ['::ffff:c000:201', '192.0.2.1'],
      ['2001:db8::1', '2001:db8:0:0::/64'],
      ['2001:db8:0:0:ffff:ffff:ffff:ffff', '2001:db8:0:0::/64'],
      ['2001:0DB8:0000:0000:1:2:3:4', '2001:db8:0:0::/64'],
      ['2001:db8:0:1::1', '2001:db8:0:1::/64'],
      ['fe80::1%eth0', 'fe80:0:0:0::/64'],
      ['::1', '0:0:0:0::/64'],
      ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
      ['not-an-ip', 'not-an-ip'],
    ];
    for (const [ip, key] of cases) assert.equal(addressKey(ip), key, ip);
  });
});
