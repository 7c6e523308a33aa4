// The shared SQL uses `?` placeholders (SQLite's, and the one form both engines could
// share); PostgreSQL wants `$1, $2, ...`. Rewritten once per distinct SQL text: the
// texts are the store's constants, so the cache stays as small as the statement list.
const cache = new Map<string, string>();

/** `sql` with each `?` outside quotes replaced by `$n`, numbered from 1 in order. */
export function numbered(sql: string): string {
  let out = cache.get(sql);
  if (out === undefined) {
    out = rewrite(sql);
    cache.set(sql, out);
  }
  return out;
}

function rewrite(sql: string): string {
  let n = 0;
  let out = '';
  // A quote opens a literal ('...') or an identifier ("..."), where `?` is just a
  // character; a doubled quote inside is an escaped one and leaves it open.
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote !== null) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
    } else if (ch === '?') {
      n += 1;
      out += `$${n}`;
      continue;
    }
    out += ch;
  }
  return out;
}
