// The read-only catalogs: plans (sortable, filterable), images grouped by distribution,
// regions with availability and features.
import { api, type Image, type Region } from '../api.js';
import { announce, h, replace } from '../dom.js';
import { memory, price } from '../format.js';
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

function planCells(p: Plan): HTMLTableCellElement[] {
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
      ? h('th', { scope: 'row', 'data-label': label }, h('code', {}, values.slug))
      : cell(label, values[key]),
  );
}

export async function plansView(root: HTMLElement, shell: Shell): Promise<void> {
  const plans = await fetchCatalog<Plan[]>(root, shell, '/plans', 'plans');
  if (plans === null) return;
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
        : ordered.map((p) => h('tr', { 'data-plan': p.slug }, planCells(p))),
    );
    count.textContent = `Showing ${ordered.length} of ${plans.length} plans`;
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
  filters.addEventListener('input', draw);
  filters.addEventListener('change', draw);
  filters.addEventListener('submit', (e) => e.preventDefault());
  // The reset event fires before the inputs are cleared.
  filters.addEventListener('reset', () => setTimeout(draw, 0));
  draw();
  replace(
    root,
    filters,
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
  const images = await fetchCatalog<Image[]>(root, shell, '/images', 'images');
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
            ),
          ),
        ),
      ),
    ),
  );
}

// ---- regions -------------------------------------------------------------------------

export async function regionsView(root: HTMLElement, shell: Shell): Promise<void> {
  const regions = await fetchCatalog<Region[]>(root, shell, '/regions', 'regions');
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
          h('th', { scope: 'row', 'data-label': 'Region' }, r.name),
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
