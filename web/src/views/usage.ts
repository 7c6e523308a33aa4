// A token's usage over the last 7 days, as an inline SVG chart: one bar per hour with a
// use, valid below and refused stacked above, its counts on hover (an SVG <title>), a mark
// and a date at each UTC midnight. Built with createElementNS (no markup strings, no
// outside assets); the colours are the stylesheet's.
import { api } from '../api.js';
import { h } from '../dom.js';
import { CHART_DAYS, CHART_HOURS, usageChart, type UsageBucket, type UsageChart } from '../usage.js';
import { errorText, loading } from './common.js';

const SVG = 'http://www.w3.org/2000/svg';
const BAR = 4; // viewBox units per hour
const PLOT = 60; // height of the bars' area
const AXIS = 14; // the dates below it

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  ...children: (SVGElement | string)[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) el.append(child);
  return el;
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** The chart itself. */
export function usageSvg(chart: UsageChart, tokenName: string): SVGSVGElement {
  const { valid, refused } = chart.totals;
  const width = CHART_HOURS * BAR;
  const y = (n: number) => (n / chart.max) * PLOT;
  const root = svg('svg', {
    class: 'usage-chart',
    viewBox: `0 0 ${width} ${PLOT + AXIS}`,
    role: 'img',
    'aria-label': `Uses of ${tokenName} in the last ${CHART_DAYS} days: ${valid} valid, ${refused} refused`,
  });
  for (const d of chart.days) {
    root.append(
      svg('line', { class: 'day-mark', x1: d.slot * BAR, x2: d.slot * BAR, y1: 0, y2: PLOT }),
      svg('text', { class: 'day-label', x: d.slot * BAR + 2, y: PLOT + AXIS - 3 }, d.label),
    );
  }
  root.append(svg('line', { class: 'baseline', x1: 0, x2: width, y1: PLOT, y2: PLOT }));
  for (const bar of chart.bars) {
    const x = bar.slot * BAR + 0.5;
    const validH = y(bar.valid);
    const refusedH = y(bar.refused);
    // The hour's whole column is the hover target, so a short bar is easy to point at.
    root.append(
      svg(
        'g',
        { class: 'bar', 'data-slot': bar.slot },
        svg('title', {}, bar.label),
        svg('rect', { class: 'hover', x: bar.slot * BAR, y: 0, width: BAR, height: PLOT }),
        svg('rect', { class: 'valid', x, y: PLOT - validH, width: BAR - 1, height: validH }),
        svg('rect', { class: 'refused', x, y: PLOT - validH - refusedH, width: BAR - 1, height: refusedH }),
      ),
    );
  }
  return root;
}

/** The usage panel of one token: loads the last 7 days and draws them, with a legend and totals. */
export function usagePanel(path: string, tokenName: string): HTMLElement {
  const panel = h('div', { class: 'usage' }, loading('usage'));
  const since = new Date(Date.now() - CHART_DAYS * 86_400_000).toISOString();
  void api<UsageBucket[]>('GET', `${path}/usage?since=${encodeURIComponent(since)}`)
    .then((buckets) => {
      const chart = usageChart(buckets, Date.now());
      const { valid, refused } = chart.totals;
      panel.replaceChildren(
        h(
          'p',
          { class: 'usage-summary' },
          `Last ${CHART_DAYS} days: `,
          h('span', { class: 'legend valid' }, plural(valid, 'valid use')),
          ', ',
          h('span', { class: 'legend refused' }, `${refused} refused`),
          chart.bars.length === 0 ? ' (not used)' : '. Point at a bar for its hour.',
        ),
        usageSvg(chart, tokenName),
      );
    })
    .catch((err: unknown) => {
      panel.replaceChildren(h('p', { class: 'field-error' }, `Could not load the usage: ${errorText(err)}`));
    });
  return panel;
}
