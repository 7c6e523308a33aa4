// The catalog's natural order (src/catalog/natural-order.ts) answers as
// Intl.Collator('en', { numeric: true, sensitivity: 'base' }) does, whether it compares
// printable ASCII itself or hands the strings to the collator.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { naturalCompare } from '../../src/catalog/natural-order.js';

const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
const sign = (n: number) => Math.sign(n) + 0; // no -0

const PRINTABLE = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i));
// Printable ASCII, weighted towards what names and versions hold: digits (runs of them,
// leading zeros too), letters of both cases, dots, dashes and spaces.
const asciiChar = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...'0123456789') },
  { weight: 3, arbitrary: fc.constantFrom(...'aAbBzZlLtTsS') },
  { weight: 2, arbitrary: fc.constantFrom(...' .-_') },
  { weight: 2, arbitrary: fc.constantFrom(...PRINTABLE) },
);
const ascii = fc.array(asciiChar, { maxLength: 24 }).map((cs) => cs.join(''));
const anyText = fc.oneof(ascii, fc.string({ maxLength: 12, unit: 'binary' }));

describe('catalog natural order', () => {
  it('orders as the collator: digit runs by value, letters without case, punctuation first', () => {
    const cases: Array<[string, string]> = [
      ['9', '10'],
      ['24.04', '22.04'],
      ['1.10', '1.9'],
      ['007', '7'],
      ['Ubuntu', 'ubuntu'],
      ['Rocky Linux', 'Rocky-Linux'],
      ['ab', 'a b'],
      ['abc', 'abcd'],
      ['a1', 'a1b'],
      ['', 'a'],
      ['$', '0'],
      ['9', 'a'],
      [`1${'0'.repeat(40)}`, '9'.repeat(40)],
      ['Äpfel', 'Apfel'],
      ['debian 13', 'Debian 12 – bookworm'],
    ];
    for (const [a, b] of cases) {
      assert.equal(sign(naturalCompare(a, b)), sign(collator.compare(a, b)), `${a} vs ${b}`);
      assert.equal(sign(naturalCompare(b, a)), sign(collator.compare(b, a)), `${b} vs ${a}`);
    }
  });

  it('agrees with the collator on random printable ASCII and on any text', () => {
    fc.assert(
      fc.property(ascii, ascii, (a, b) => sign(naturalCompare(a, b)) === sign(collator.compare(a, b))),
      { numRuns: 20_000 },
    );
    fc.assert(
      fc.property(anyText, anyText, (a, b) => sign(naturalCompare(a, b)) === sign(collator.compare(a, b))),
      { numRuns: 5_000 },
    );
  });

  it('sorts a list exactly as the collator does', () => {
    fc.assert(
      fc.property(fc.array(ascii, { maxLength: 30 }), (list) => {
        assert.deepEqual([...list].sort(naturalCompare), [...list].sort(collator.compare));
      }),
      { numRuns: 2_000 },
    );
  });
});
