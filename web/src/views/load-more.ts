// "Load more" under a paged table (tokens, accounts, the audit log, webhooks and their
// delivery logs, the catalog revisions): the button is there only while another page
// follows (removed, not hidden: the stylesheet's display of buttons would win over the
// hidden attribute); each click appends the next page's rows.
import { apiPage } from '../api.js';
import { announce, focusOn, h } from '../dom.js';
import { noticeArea, reportError, type Shell } from './common.js';

export interface LoadMore<T> {
  /** The button's id (tests and labels find it by it). */
  id: string;
  /** The path of the next page (from the first page's Link header), or null. */
  next: string | null;
  rows: HTMLTableSectionElement;
  row: (item: T) => HTMLElement;
  /** What the rows are, singular: "event" -> "Loaded 3 more events". */
  noun: string;
  shell: Shell;
  /** Where focus goes when nothing was added. */
  section: HTMLElement;
  /** False once the page was reloaded meanwhile: a late answer is then dropped. */
  current?: () => boolean;
}

/** The notice area and the button's box, to place under the table. */
export function loadMore<T>(o: LoadMore<T>): [HTMLElement, HTMLElement] {
  const more = h('button', { type: 'button', class: 'secondary', id: o.id }, 'Load more');
  const moreNotice = noticeArea();
  const moreBox = h('div', { class: 'actions start' }, o.next === null ? null : more);
  let next = o.next;
  more.addEventListener('click', () => {
    if (next === null) return;
    more.disabled = true;
    apiPage<T>(next)
      .then((further) => {
        if (o.current?.() === false) return;
        const added = further.items.map(o.row);
        o.rows.append(...added);
        next = further.next;
        if (next === null) moreBox.replaceChildren();
        announce(
          `Loaded ${further.items.length} more ${o.noun}${further.items.length === 1 ? '' : 's'}` +
            (next === null ? '; that is all' : ''),
        );
        // The button stays for the next page; once it is gone, focus goes to what was added.
        if (next === null) focusOn(added[0]?.querySelector('th') ?? o.section);
      })
      .catch((err: unknown) => {
        reportError(o.shell, moreNotice, err);
      })
      .finally(() => {
        more.disabled = false;
      });
  });
  return [moreNotice, moreBox];
}
