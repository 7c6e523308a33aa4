// The natural order of image distributions and versions ("9" before "10", letters without
// regard to case): Intl.Collator('en', { numeric: true, sensitivity: 'base' }).
//
// Why not only the collator: creating one loads ICU's collation data, 14 ms of every start
// and 2.7 MB of memory (BENCHMARKS.md), and a start sorts the catalog. Names and
// versions are nearly always printable ASCII; those are compared here in the collator's
// own order of those characters (CLDR's root order: space and punctuation, then digits,
// then letters), digit runs by their value. Anything else goes to the collator, created on
// first need. test/catalog/natural-order.test.ts checks that both agree.

/** The printable ASCII characters other than digits and letters, in the collator's order. */
const PUNCTUATION = ' _-,;:!?.\'"()[]{}@*/\\&#%`^+<=>|~$';
const DIGIT_WEIGHT = PUNCTUATION.length;
const LETTER_WEIGHT = DIGIT_WEIGHT + 1;

/** Primary weight of each printable ASCII character; -1 for the rest. */
const WEIGHTS = new Int16Array(128).fill(-1);
for (let i = 0; i < PUNCTUATION.length; i++) WEIGHTS[PUNCTUATION.charCodeAt(i)] = i;
for (let c = 0x30; c <= 0x39; c++) WEIGHTS[c] = DIGIT_WEIGHT;
for (let c = 0; c < 26; c++) {
  WEIGHTS[0x41 + c] = LETTER_WEIGHT + c;
  WEIGHTS[0x61 + c] = LETTER_WEIGHT + c;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

let collator: Intl.Collator | undefined;

/** Negative, zero or positive as `a` sorts before, with or after `b`. */
export function naturalCompare(a: string, b: string): number {
  if (PRINTABLE_ASCII.test(a) && PRINTABLE_ASCII.test(b)) return compareAscii(a, b);
  collator ??= new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
  return collator.compare(a, b);
}

function compareAscii(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const wa = WEIGHTS[a.charCodeAt(i)]!;
    const wb = WEIGHTS[b.charCodeAt(j)]!;
    if (wa === DIGIT_WEIGHT && wb === DIGIT_WEIGHT) {
      const ea = runEnd(a, i);
      const eb = runEnd(b, j);
      const byValue = compareDigits(a, i, ea, b, j, eb);
      if (byValue !== 0) return byValue;
      i = ea;
      j = eb;
    } else if (wa !== wb) {
      return wa < wb ? -1 : 1;
    } else {
      i++;
      j++;
    }
  }
  return (i < a.length ? 1 : 0) - (j < b.length ? 1 : 0);
}

function runEnd(s: string, from: number): number {
  let end = from;
  while (end < s.length && WEIGHTS[s.charCodeAt(end)] === DIGIT_WEIGHT) end++;
  return end;
}

/** Two runs of digits by their value: leading zeros do not count. */
function compareDigits(a: string, i: number, ea: number, b: string, j: number, eb: number): number {
  while (i < ea - 1 && a.charCodeAt(i) === 0x30) i++;
  while (j < eb - 1 && b.charCodeAt(j) === 0x30) j++;
  if (ea - i !== eb - j) return ea - i < eb - j ? -1 : 1;
  for (; i < ea; i++, j++) {
    const d = a.charCodeAt(i) - b.charCodeAt(j);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}
