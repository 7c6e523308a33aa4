// The `list` commands of tokens and accounts: the whole list, read from the store a page
// at a time and written out as each page arrives, so the output is complete and the
// command holds one page in memory however long the list. The pages are keyset pages
// (the store's), so rows added meanwhile never make a row skip or repeat.
import type { Page } from '../tokens/query.js';
import type { ListPosition } from '../storage/types.js';
import { table } from './table.js';

/** Rows read from the store per page. */
export const CLI_PAGE = 1000;

export interface ListOutput<T, P = ListPosition> {
  /** `--json`: one JSON array, as the API's list shows it (2-space indent). */
  json: boolean;
  /** The page after `after` (from the start when undefined), at most CLI_PAGE rows. */
  read: (after: P | undefined) => Promise<Page<T, P>>;
  /** The row's view (the API's JSON). */
  view: (item: T) => unknown;
  /** The table's header and a row's cells; a table is aligned a page at a time. */
  header: string[];
  cells: (item: T) => string[];
  /** What is printed when the list is empty (not in JSON). */
  empty: string;
  write?: (text: string) => void;
}

/** Writes every page of the list; resolves to how many rows there were. */
export async function printList<T, P = ListPosition>(o: ListOutput<T, P>): Promise<number> {
  const write = o.write ?? ((text: string) => void process.stdout.write(text));
  let count = 0;
  let after: P | undefined;
  for (;;) {
    const page = await o.read(after);
    if (o.json) {
      // The bytes JSON.stringify(wholeList, null, 2) would make, a page at a time.
      for (const item of page.items) {
        const text = JSON.stringify(o.view(item), null, 2).replace(/\n/g, '\n  ');
        write(`${count === 0 ? '[\n' : ',\n'}  ${text}`);
        count += 1;
      }
    } else if (page.items.length > 0) {
      const rows = page.items.map(o.cells);
      // The header with the first page only: one table, aligned a page at a time.
      const text = table(count === 0 ? [o.header, ...rows] : rows);
      write(text);
      count += page.items.length;
    }
    if (page.next === null) break;
    after = page.next;
  }
  if (o.json) write(count === 0 ? '[]\n' : '\n]\n');
  else if (count === 0) write(`${o.empty}\n`);
  return count;
}
