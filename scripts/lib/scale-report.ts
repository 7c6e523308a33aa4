// The scale bench's figures (scripts/bench-scale.ts), its markdown tables and its goals.
// Growth is the figure at the largest size measured over the one at the smallest (with
// the default sizes, 1M over 1k).

/** One endpoint measured at one size. */
export interface Figure {
  /** Latency percentiles, ms. */
  p50: number;
  p99: number;
  /** Requests per second: under wrk's load, or one after the other (`sequential`). */
  rps: number;
  requests: number;
  how: 'wrk' | 'sequential';
  /** Non-2xx answers and socket errors. */
  failed: number;
  /**
   * p99 of the requests made in turn (every endpoint has them): growth compares these
   * when wrk measured one of the two sizes only.
   */
  inTurnP99: number;
}

/** What one size of one backend measured. */
export interface SizeResult {
  seedSeconds: number;
  figures: Record<string, Figure>;
  /** Server RSS, MB: 1 s after its start, and after the runs. */
  idleRssMb: number;
  loadedRssMb: number;
  /** Spawn to the first 200 from /healthz, medians, ms. */
  emptyStartMs: number;
  backlogStartMs: number;
  /** Starts that had not answered when the bench stopped waiting (counted at that wait in the medians). */
  unanswered: { empty: number; backlog: number };
}

export type CatalogResult = { plans: Figure; region: Figure } | { refused: string };

/** One large catalog applied in turn, alternating with a variant that changes every plan. */
export interface ApplyResult {
  entries: { plans: number; images: number; regions: number };
  /** The document's JSON, bytes. */
  bytes: number;
  /** Over the API, each round: POST /api/v1/catalog/diff, then PUT /api/v1/catalog, ms. */
  api: { diffMs: number; putMs: number }[];
  /** `infracat catalog apply FILE`, spawn to exit, each round, ms. */
  cliMs: number[];
}

export interface BackendResult {
  name: string;
  sizes: Map<number, SizeResult>;
  catalog: Map<number, CatalogResult>;
  apply?: ApplyResult;
}

/** What an apply of the large catalog must take at most, through the API (diff and PUT) or the CLI. */
export const APPLY_GOAL_MS = 2000;

export interface Endpoint {
  key: string;
  label: string;
  /** A paged list or a filter: held to the 3x goal. */
  list: boolean;
}

export interface Goal {
  backend: string;
  goal: string;
  /** null: not measured (a refused catalog, say). */
  pass: boolean | null;
  detail: string;
}

/** 1000 -> 1k, 1000000 -> 1M. */
export function sizeLabel(n: number): string {
  if (n >= 1e6 && n % 1e6 === 0) return `${n / 1e6}M`;
  if (n >= 1e3 && n % 1e3 === 0) return `${n / 1e3}k`;
  return String(n);
}

export function ms(value: number): string {
  return `${value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : value.toFixed(0)} ms`;
}

const rate = (rps: number): string => `${Math.round(rps).toLocaleString('en-US')}/s`;

/** p99, and the rate where wrk measured it (a sequential run says how many requests it made). */
export function cell(f: Figure): string {
  return f.how === 'wrk' ? `${ms(f.p99)}, ${rate(f.rps)}` : `${ms(f.p99)} (${f.requests} in turn)`;
}

const growth = (first: number | undefined, last: number | undefined): string =>
  first === undefined || last === undefined || first === 0 ? '—' : `x${(last / first).toFixed(2)}`;

/**
 * The growth of an endpoint's p99 from `first` to `last`: of wrk's p99 when wrk measured
 * both; else of the p99 of the requests made in turn (under wrk's connections a request
 * waits for the others, one at a time it does not, so the two are not compared).
 */
export function p99Growth(first: Figure, last: Figure): { ratio: number; inTurn: boolean } {
  const inTurn = first.how !== 'wrk' || last.how !== 'wrk';
  return inTurn ? { ratio: last.inTurnP99 / first.inTurnP99, inTurn } : { ratio: last.p99 / first.p99, inTurn };
}

const growthCell = (first: Figure | undefined, last: Figure | undefined): string => {
  if (first === undefined || last === undefined) return '—';
  const g = p99Growth(first, last);
  return `x${g.ratio.toFixed(2)}${g.inTurn && (first.how === 'wrk' || last.how === 'wrk') ? ' (in turn)' : ''}`;
};

export function markdown(rows: string[][]): string {
  const [head, ...body] = rows;
  const line = (r: string[]) => `| ${r.join(' | ')} |`;
  return [line(head!), `|${head!.map(() => '---').join('|')}|`, ...body.map(line)].join('\n');
}

const start = (median: number, unanswered: number): string =>
  `${ms(median)}${unanswered > 0 ? ` (${unanswered} without an answer in time)` : ''}`;

/** The endpoint x size table of one backend: p99 (and rate), memory, starts, growth. */
export function sizeTable(r: BackendResult, endpoints: readonly Endpoint[]): string {
  const sizes = [...r.sizes.keys()];
  const first = r.sizes.get(sizes[0]!);
  const last = r.sizes.get(sizes.at(-1)!);
  const rows = [
    ['endpoint', ...sizes.map(sizeLabel), `growth (${sizeLabel(sizes.at(-1)!)} / ${sizeLabel(sizes[0]!)})`],
  ];
  for (const e of endpoints) {
    const f = (s: SizeResult | undefined) => s?.figures[e.key];
    rows.push([
      e.label,
      ...sizes.map((n) => {
        const x = f(r.sizes.get(n));
        return x === undefined ? '—' : cell(x);
      }),
      growthCell(f(first), f(last)),
    ]);
  }
  const other: [string, (s: SizeResult) => string, (s: SizeResult) => number][] = [
    ['RSS 1 s after start', (s) => `${s.idleRssMb.toFixed(0)} MB`, (s) => s.idleRssMb],
    ['RSS after the runs', (s) => `${s.loadedRssMb.toFixed(0)} MB`, (s) => s.loadedRssMb],
    ['start, empty database (median)', (s) => start(s.emptyStartMs, s.unanswered.empty), (s) => s.emptyStartMs],
    [
      'start, backlog of expired tokens of the size (median)',
      (s) => start(s.backlogStartMs, s.unanswered.backlog),
      (s) => s.backlogStartMs,
    ],
    ['seeding (s)', (s) => s.seedSeconds.toFixed(1), (s) => s.seedSeconds],
  ];
  for (const [label, show, value] of other)
    rows.push([label, ...sizes.map((n) => show(r.sizes.get(n)!)), growth(first && value(first), last && value(last))]);
  return markdown(rows);
}

/** The catalog lists at each catalog size (plans in the document). */
export function catalogTable(r: BackendResult): string {
  const sizes = [...r.catalog.keys()];
  const applied = sizes.filter((n) => !('refused' in r.catalog.get(n)!));
  const figure = (n: number | undefined, which: 'plans' | 'region'): Figure | undefined => {
    const c = n === undefined ? undefined : r.catalog.get(n);
    return c === undefined || 'refused' in c ? undefined : c[which];
  };
  const span = applied.length > 1 ? `${sizeLabel(applied.at(-1)!)} / ${sizeLabel(applied[0]!)}` : '—';
  const rows = [['catalog list', ...sizes.map((n) => `${sizeLabel(n)} plans`), `growth (${span})`]];
  for (const [label, which] of [
    ['GET /api/v1/plans', 'plans'],
    ['GET /api/v1/plans?region= (half the plans)', 'region'],
  ] as const) {
    const cells = sizes.map((n) => {
      const f = figure(n, which);
      return f === undefined ? 'refused' : cell(f);
    });
    const grew = applied.length > 1 ? growthCell(figure(applied[0], which), figure(applied.at(-1), which)) : '—';
    rows.push([label, ...cells, grew]);
  }
  return markdown(rows);
}

const sortedMs = (xs: number[]) => [...xs].sort((a, b) => a - b);
const medianMs = (xs: number[]) => sortedMs(xs)[Math.floor((xs.length - 1) / 2)]!;

/** The large catalog's applies: each round's time, the median and the slowest. */
export function applyTable(a: ApplyResult): string {
  const total = a.api.map((x) => x.diffMs + x.putMs);
  const rows = [
    [
      `apply of ${a.entries.plans} plans, ${a.entries.images} images, ${a.entries.regions} regions ` +
        `(${(a.bytes / 2 ** 20).toFixed(1)} MiB)`,
      'each round',
      'median',
      'slowest',
    ],
    ['API: diff + PUT', total.map(ms).join(', '), ms(medianMs(total)), ms(Math.max(...total))],
    [
      'of which the diff',
      a.api.map((x) => ms(x.diffMs)).join(', '),
      ms(medianMs(a.api.map((x) => x.diffMs))),
      ms(Math.max(...a.api.map((x) => x.diffMs))),
    ],
    ['`infracat catalog apply`', a.cliMs.map(ms).join(', '), ms(medianMs(a.cliMs)), ms(Math.max(...a.cliMs))],
  ];
  return markdown(rows);
}

/** The goals of the scale bench, judged for one backend: those of the parts it measured. */
export function goals(r: BackendResult, endpoints: readonly Endpoint[]): Goal[] {
  const out: Goal[] = [];
  if (r.sizes.size > 0) out.push(...sizeGoals(r, endpoints));
  if (r.catalog.size > 0) out.push(catalogGoal(r));
  if (r.apply !== undefined) {
    const { api, cliMs } = r.apply;
    const total = api.map((x) => x.diffMs + x.putMs);
    const slowest = Math.max(...total, ...cliMs);
    out.push({
      backend: r.name,
      goal: `the ${r.apply.entries.plans}-plan catalog applies in under ${APPLY_GOAL_MS / 1000} s, every round`,
      pass: slowest < APPLY_GOAL_MS,
      detail:
        `API diff + PUT ${ms(medianMs(total))} (slowest ${ms(Math.max(...total))}); ` +
        `CLI ${ms(medianMs(cliMs))} (slowest ${ms(Math.max(...cliMs))})`,
    });
  }
  return out;
}

function sizeGoals(r: BackendResult, endpoints: readonly Endpoint[]): Goal[] {
  const sizes = [...r.sizes.keys()];
  const [lo, hi] = [sizes[0]!, sizes.at(-1)!];
  const first = r.sizes.get(lo)!;
  const last = r.sizes.get(hi)!;
  const ratio = (key: string) => p99Growth(first.figures[key]!, last.figures[key]!).ratio;
  const at = `at ${sizeLabel(hi)} rows against ${sizeLabel(lo)}`;
  const out: Goal[] = [];

  const lists = endpoints.filter((e) => e.list).map((e) => ({ e, x: ratio(e.key) }));
  const over = lists.filter(({ x }) => x > 3);
  const worst = lists.reduce((a, b) => (b.x > a.x ? b : a));
  out.push({
    backend: r.name,
    goal: `every paged list and filter within 3x of its p99 ${at}`,
    pass: over.length === 0,
    detail:
      over.length === 0
        ? `worst: ${worst.e.label} x${worst.x.toFixed(2)}`
        : over.map(({ e, x }) => `${e.label} x${x.toFixed(2)}`).join('; '),
  });

  const cold = ratio('check_cold');
  out.push({
    backend: r.name,
    goal: `verification p99 with a cold cache within 2x ${at}`,
    pass: cold <= 2,
    detail: `x${cold.toFixed(2)} (${ms(first.figures.check_cold!.p99)} -> ${ms(last.figures.check_cold!.p99)})`,
  });

  const start = last.backlogStartMs / last.emptyStartMs;
  out.push({
    backend: r.name,
    goal: `start with ${sizeLabel(hi)} expired tokens to purge within 2x of an empty start`,
    pass: start <= 2,
    detail: `x${start.toFixed(2)} (${ms(last.backlogStartMs)} against ${ms(last.emptyStartMs)})`,
  });
  return out;
}

function catalogGoal(r: BackendResult): Goal {
  const applied = [...r.catalog].flatMap(([n, c]) => ('refused' in c ? [] : [{ n, x: c.region.rps / c.plans.rps }]));
  const refused = [...r.catalog].filter(([, c]) => 'refused' in c).map(([n]) => `${sizeLabel(n)} plans refused`);
  return {
    backend: r.name,
    goal: '?region= at least half the rate of the unfiltered plan list',
    pass: applied.length === 0 ? null : applied.every(({ x }) => x >= 0.5),
    detail: [...applied.map(({ n, x }) => `${sizeLabel(n)} plans: x${x.toFixed(2)}`), ...refused].join('; '),
  };
}
