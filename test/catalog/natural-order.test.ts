// The catalog's natural order (src/catalog/natural-order.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { naturalCompare } from '../../src/catalog/natural-order.js';

const sign = (n: number) => Math.sign(n) + 0; // no -0

describe('catalog natural order', () => {
  it('orders digit runs by value, letters without case or accents, punctuation first', () => {
    // [a, b, the sign of naturalCompare(a, b)]
    const cases: Array<[string, string, -1 | 0 | 1]> = [
      ['9', '10', -1],
      ['24.04', '22.04', 1],
      ['1.10', '1.9', 1],
      ['007', '7', 0],
      ['Ubuntu', 'ubuntu', 0],
      ['Rocky Linux', 'Rocky-Linux', -1],
      ['a b', 'ab', -1],
      ['abc', 'abcd', -1],
      ['a1', 'a1b', -1],
      ['', 'a', -1],
      ['$', '0', -1],
      ['9', 'a', -1],
      [`1${'0'.repeat(40)}`, '9'.repeat(40), 1],
      ['Äpfel', 'Apfel', 0],
      ['debian 13', 'Debian 12 – bookworm', 1],
    ];
    for (const [a, b, expected] of cases) {
      assert.equal(sign(naturalCompare(a, b)), expected, `${a} vs ${b}`);
      assert.equal(sign(naturalCompare(b, a)), sign(-expected), `${b} vs ${a}`);
    }
  });

  it('sorts versions as people read them', () => {
    const versions = ['10', '9.10', '9.2', '9', '11 (beta)', '9.10.1'];
    assert.deepEqual([...versions].sort(naturalCompare), ['9', '9.2', '9.10', '9.10.1', '10', '11 (beta)']);
  });
});
