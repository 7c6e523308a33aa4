// The read-only catalogs: plans (sortable, filterable, by region), images grouped by
// distribution, regions with availability and features; deprecated entries badged.
import { api, type Image, type Region } from '../api.js';
import type { CatalogKind } from '../catalog-wire.js';
import { announce, h, replace, type Child } from '../dom.js';
import { memory, price } from '../format.js';
import { deprecationBadge, lifecyclesOf, noLifecycles, type Lifecycles } from '../lifecycle.js';
import {
  filterPlans,
  nextSort,
  numberOrNull,
  sortPlans,
  type Plan,
  type PlanFilter,
  type Sort,
  type SortKey,
} from '../plans.js';
import { ApiError } from '../problems.js';
import { session } from '../session.js';
import { cell, loading, noticeArea, reportError, showNotice, tags, type Shell } from './common.js';

/** Fetches a catalog; on failure says why (and how to sign in when the catalog needs a token). */
async function fetchCatalog<T>(root: HTMLElement, shell: Shell, path: string, what: string): Promise<T | null> {
  replace(root, loading(what));
  try {
    return await api<T>('GET', path);
  } catch (err) {
    const notice = noticeArea();
    replace(root, notice);
    if (err instanceof ApiError && err.status === 401 && session.token() === null) {
      showNotice(notice, `This server shows its ${what} to signed-in users only.`);
      root.append(h('p', {}, h('a', { href: '#/tokens' }, 'Sign in with an API token')));
    } else reportError(shell, notice, err);
    return null;
  }
}

/**
 * The lifecycle of every entry, from the catalog document. Only a token holding
 * catalog:read may read it; any other (or none) is shown no badges, and so is a failed
 * fetch: the badges add to a list that is useful without them.
 */
async function fetchLifecycles(): Promise<Lifecycles> {
  if (!session.holds('catalog:read')) return noLifecycles();
  try {
    return lifecyclesOf(await api<unknown>('GET', '/catalog'));
  } catch {
    return noLifecycles();
  }
}

/** The "Deprecated ..." badge of an entry, or nothing. */
function badge(lifecycles: Lifecycles, kind: CatalogKind, slug: string): HTMLElement | null {
  const text = deprecationBadge(lifecycles[kind].get(slug), Date.now());
  return text === null ? null : h('span', { class: 'badge deprecated' }, text);
}

/** An inline element after a space (so the text reads "ubuntu-22-04 Deprecated ..."). */
function spaced(el: HTMLElement | null): Child {
  return el === null ? null : [' ', el];
}

// ---- plans ---------------------------------------------------------------------------

const COLUMNS: [key: SortKey, label: string][] = [
  ['slug', 'Plan'],
  ['type', 'Type'],
  ['vcpus', 'vCPUs'],
  ['memory_mb', 'Memory'],
  ['disk_gb', 'Disk'],
  ['transfer_tb', 'Transfer'],
  ['price_monthly', 'Price / month'],
];

const TYPES: [value: string, label: string][] = [
  ['', 'Any type'],
  ['general', 'General purpose'],
  ['cpu-optimized', 'CPU-optimized'],
  ['memory-optimized', 'Memory-optimized'],
];

function planCells(p: Plan, deprecation: HTMLElement | null): HTMLTableCellElement[] {
  const values: Record<SortKey, string> = {
    slug: p.slug,
    type: TYPES.find(([v]) => v === p.type)?.[1] ?? p.type,
    vcpus: String(p.vcpus),
    memory_mb: memory(p.memory_mb),
    disk_gb: `${p.disk_gb} GB`,
    transfer_tb: `${p.transfer_tb} TB`,
    price_monthly: price(p.price_monthly),
  };
  return COLUMNS.map(([key, label]) =>
    key === 'slug'
      ? h('th', { scope: 'row', 'data-label': label }, h('code', {}, values.slug), spaced(deprecation))
      : cell(label, values[key]),
  );
}

export async function plansView(root: HTMLElement, shell: Shell): Promise<void> {
  // The regions only feed the selector: without them the page still lists every plan.
  const [first, regions, lifecycles] = await Promise.all([
    fetchCatalog<Plan[]>(root, shell, '/plans', 'plans'),
    api<Region[]>('GET', '/regions').catch(() => null),
    fetchLifecycles(),
  ]);
  if (first === null) return;
  let plans = first;
  const region = h(
    'select',
    { id: 'filter-region' },
    h('option', { value: '' }, 'Any region'),
    (regions ?? []).map((r) =>
      h('option', { value: r.slug }, `${r.name} (${r.slug})${r.available ? '' : ', not available'}`),
    ),
  );
  const notice = noticeArea();
  let sort: Sort | null = null;
  const type = h(
    'select',
    { id: 'filter-type' },
    TYPES.map(([v, label]) => h('option', { value: v }, label)),
  );
  const numberInput = (id: string, step: string) =>
    h('input', { id, type: 'number', min: 0, step, inputmode: 'decimal' });
  const minVcpus = numberInput('filter-vcpus', '1');
  const minMemory = numberInput('filter-memory', '1');
  const maxPrice = numberInput('filter-price', '0.01');
  const count = h('p', { class: 'muted', role: 'status', id: 'plan-count' });
  const body = h('tbody');
  const headRow = h('tr');
  const reset = h('button', { type: 'reset', class: 'secondary' }, 'Clear filters');
  const field = (id: string, label: string, input: HTMLElement) =>
    h('div', { class: 'field' }, h('label', { for: id }, label), input);
  const filters = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter plans' },
    regions === null ? null : field('filter-region', 'Region', region),
    field('filter-type', 'Type', type),
    field('filter-vcpus', 'At least vCPUs', minVcpus),
    field('filter-memory', 'At least memory (GB)', minMemory),
    field('filter-price', 'At most $ / month', maxPrice),
    reset,
  );

  const draw = (): void => {
    const filter: PlanFilter = {
      type: type.value,
      minVcpus: numberOrNull(minVcpus.value),
      minMemoryGb: numberOrNull(minMemory.value),
      maxPrice: numberOrNull(maxPrice.value),
    };
    const shown = filterPlans(plans, filter);
    const ordered = sort === null ? shown : sortPlans(shown, sort);
    replace(
      body,
      ordered.length === 0
        ? h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'muted' }, 'No plan matches these filters.'))
        : ordered.map((p) => h('tr', { 'data-plan': p.slug }, planCells(p, badge(lifecycles, 'plans', p.slug)))),
    );
    const where = regions?.find((r) => r.slug === shownRegion);
    count.textContent =
      `Showing ${ordered.length} of ${plans.length} plans` + (where === undefined ? '' : ` offered in ${where.name}`);
    replace(
      headRow,
      COLUMNS.map(([key, label]) => {
        const active = sort?.key === key ? sort.direction : null;
        const button = h(
          'button',
          { type: 'button', class: 'sort' },
          label,
          h(
            'span',
            { class: 'sort-mark', 'aria-hidden': 'true' },
            active === 'ascending' ? ' ▲' : active === 'descending' ? ' ▼' : ' ↕',
          ),
        );
        button.addEventListener('click', () => {
          sort = sort === null ? { key, direction: 'ascending' } : nextSort(sort, key);
          draw();
          headRow.querySelector<HTMLButtonElement>(`th[data-key="${key}"] button`)?.focus();
          announce(`Sorted by ${label}, ${sort.direction}`);
        });
        return h('th', { scope: 'col', 'data-key': key, 'aria-sort': active ?? false }, button);
      }),
    );
  };
  // The server knows what each region offers: a region change fetches that region's list
  // (GET /plans?region=), the other filters apply to it in the browser. An answer to an
  // earlier choice (the selector changed meanwhile) is dropped. A select fires both input
  // and change: the second finds its region already asked for.
  let shownRegion = '';
  let wanted = '';
  let asked = 0;
  const fetchRegion = (): void => {
    if (region.value === wanted) return;
    const slug = region.value;
    wanted = slug;
    const mine = ++asked;
    notice.replaceChildren();
    api<Plan[]>('GET', slug === '' ? '/plans' : `/plans?${new URLSearchParams({ region: slug }).toString()}`)
      .then((list) => {
        if (mine !== asked) return;
        plans = list;
        shownRegion = slug;
        draw();
      })
      .catch((err: unknown) => {
        if (mine === asked) reportError(shell, notice, err);
      });
  };
  const changed = (event: Event): void => {
    if (event.target === region) fetchRegion();
    else draw();
  };
  filters.addEventListener('input', changed);
  filters.addEventListener('change', changed);
  filters.addEventListener('submit', (e) => e.preventDefault());
  // The reset event fires before the inputs are cleared.
  filters.addEventListener(
    'reset',
    () =>
      void setTimeout(() => {
        draw();
        fetchRegion();
      }, 0),
  );
  draw();
  replace(
    root,
    filters,
    notice,
    count,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'responsive sortable' },
        h('caption', { class: 'visually-hidden' }, 'Instance plans; column headers sort the table'),
        h('thead', {}, headRow),
        body,
      ),
    ),
  );
}

// ---- images --------------------------------------------------------------------------

export async function imagesView(root: HTMLElement, shell: Shell): Promise<void> {
  const [images, lifecycles] = await Promise.all([
    fetchCatalog<Image[]>(root, shell, '/images', 'images'),
    fetchLifecycles(),
  ]);
  if (images === null) return;
  const groups = new Map<string, Image[]>();
  for (const image of images) groups.set(image.distribution, [...(groups.get(image.distribution) ?? []), image]);
  replace(
    root,
    h('p', { class: 'muted' }, `${images.length} images from ${groups.size} distributions`),
    [...groups].map(([distribution, list], i) =>
      h(
        'section',
        { class: 'card group', 'aria-labelledby': `dist-${i}`, 'data-distribution': distribution },
        h('h2', { id: `dist-${i}` }, distribution, h('span', { class: 'count' }, ` (${list.length})`)),
        h(
          'ul',
          { class: 'image-list' },
          list.map((image) =>
            h(
              'li',
              { 'data-image': image.slug },
              h('span', { class: 'image-name' }, image.name),
              h(
                'span',
                { class: 'muted' },
                ` version ${image.version} · `,
                h('code', {}, image.slug),
                ` · ${image.type} · at least ${image.min_disk_gb} GB disk`,
              ),
              spaced(badge(lifecycles, 'images', image.slug)),
            ),
          ),
        ),
      ),
    ),
  );
}

// ---- regions -------------------------------------------------------------------------

export async function regionsView(root: HTMLElement, shell: Shell): Promise<void> {
  const [regions, lifecycles] = await Promise.all([
    fetchCatalog<Region[]>(root, shell, '/regions', 'regions'),
    fetchLifecycles(),
  ]);
  if (regions === null) return;
  const onlyAvailable = h('input', { type: 'checkbox', id: 'only-available' });
  const body = h('tbody');
  const count = h('p', { class: 'muted', role: 'status' });
  const draw = (): void => {
    const shown = onlyAvailable.checked ? regions.filter((r) => r.available) : regions;
    count.textContent = `Showing ${shown.length} of ${regions.length} regions`;
    replace(
      body,
      shown.map((r) =>
        h(
          'tr',
          { 'data-region': r.slug },
          h('th', { scope: 'row', 'data-label': 'Region' }, r.name, spaced(badge(lifecycles, 'regions', r.slug))),
          cell('Slug', h('code', {}, r.slug)),
          cell(
            'Availability',
            h('span', { class: r.available ? 'status ok' : 'status off' }, r.available ? 'Available' : 'Not available'),
          ),
          cell(
            'Features',
            r.features.length > 0 ? tags(r.features, `Features of ${r.name}`) : h('span', { class: 'muted' }, 'None'),
          ),
        ),
      ),
    );
  };
  onlyAvailable.addEventListener('change', draw);
  draw();
  replace(
    root,
    h(
      'div',
      { class: 'filters' },
      h(
        'div',
        { class: 'check' },
        onlyAvailable,
        h('label', { for: 'only-available' }, 'Only regions taking new resources'),
      ),
    ),
    count,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'responsive' },
        h('caption', { class: 'visually-hidden' }, 'Regions'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Region', 'Slug', 'Availability', 'Features'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        body,
      ),
    ),
  );
}
