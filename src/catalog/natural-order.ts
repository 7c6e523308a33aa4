// The natural order of image distributions and versions: digit runs by their value ("9"
// before "10", "1.9" before "1.10"), letters without regard to case or accents, space and
// punctuation before digits, digits before letters. ICU's collation with numeric
// ordering says exactly that.
const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

/** Negative, zero or positive as `a` sorts before, with or after `b`. */
export function naturalCompare(a: string, b: string): number {
  return collator.compare(a, b);
}
