// The Catalog page (#/catalog), for operators: the catalog's revision history, newest
// first (GET /catalog/revisions), paged with "Load more" through its `Link: rel="next"`
// header. Offered in the nav only to a token holding catalog:read.
import { actorOf } from '../audit.js';
import { apiPage } from '../api.js';
import type { CatalogRevision } from '../catalog-wire.js';
import { h, replace, type Child } from '../dom.js';
import { exactTime, relativeTime, revisionChanges, revisionNote } from '../format.js';
import { party } from './audit.js';
import { cell, loading, noticeArea, reportError, type Shell, refusePage } from './common.js';
import { loadMore } from './load-more.js';

/** Shows why the signed-in token (or no token) cannot use the page; false when it can. */
function refusal(root: HTMLElement): boolean {
  return refusePage(root, 'catalog:read', {
    signedOut: "The catalog's history is for operators. Sign in first.",
    lacking: "The catalog's history needs a token holding catalog:read. This token lacks it.",
  });
}

export async function catalogView(root: HTMLElement, shell: Shell): Promise<void> {
  if (refusal(root)) return;
  const notice = noticeArea();
  const section = h('section', { class: 'card', 'aria-labelledby': 'revisions-heading' });
  replace(root, notice, section);
  replace(section, h('h2', { id: 'revisions-heading' }, 'Revisions'), loading('catalog revisions'));
  let page: { items: CatalogRevision[]; next: string | null };
  try {
    page = await apiPage<CatalogRevision>('/catalog/revisions');
  } catch (err) {
    section.remove();
    reportError(shell, notice, err);
    return;
  }
  const heading = h('h2', { id: 'revisions-heading' }, 'Revisions');
  if (page.items.length === 0) {
    replace(section, heading, h('p', { class: 'muted' }, 'No catalog has been applied yet.'));
    return;
  }
  const rows = h('tbody', {}, page.items.map(revisionRow));
  const [moreNotice, moreBox] = loadMore({
    id: 'revisions-more',
    next: page.next,
    rows,
    row: revisionRow,
    noun: 'revision',
    shell,
    section,
  });
  replace(
    section,
    heading,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'responsive revisions' },
        h('caption', { class: 'visually-hidden' }, 'Catalog revisions, newest first; times are UTC'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Version', 'Applied', 'Applied by', 'Changes'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        rows,
      ),
    ),
    moreNotice,
    moreBox,
  );
}

function revisionRow(r: CatalogRevision): HTMLTableRowElement {
  return h(
    'tr',
    { 'data-version': r.version },
    h('th', { scope: 'row', 'data-label': 'Version' }, String(r.version)),
    cell(
      'Applied',
      h('time', { datetime: r.applied_at, title: relativeTime(r.applied_at, Date.now()) }, exactTime(r.applied_at)),
    ),
    cell(
      'Applied by',
      // Revisions applied before the applier was recorded (migration 6) have none.
      r.applied_by === null
        ? h('span', { class: 'muted' }, 'not recorded')
        : party(actorOf({ actor: r.applied_by }), 'actor'),
    ),
    cell('Changes', changesOf(r)),
  );
}

/**
 * What the revision changed, counted ("+2 plans, -1 image, 3 changed"), after what else its
 * summary says ("rollback to version 3"); older revisions have their summary alone, or
 * nothing recorded.
 */
function changesOf(r: CatalogRevision): Child {
  if (r.changes === null)
    return r.summary === null
      ? h('span', { class: 'muted' }, 'not recorded')
      : h('span', { class: 'summary' }, r.summary);
  const note = revisionNote(r.summary);
  return [
    note === null ? null : [h('span', { class: 'muted revision-note' }, note), ' · '],
    h('span', { class: 'revision-changes' }, revisionChanges(r.changes)),
  ];
}
