// A strict reader of the Prometheus text exposition format (0.0.4), enough to check
// that /metrics is well-formed and to read sample values.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  help: Map<string, string>;
  samples: Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(\\{(.*)\\})? (\\S+)( -?\\d+)?$`);
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;

export function parseExposition(text: string): Exposition {
  const out: Exposition = { types: new Map(), help: new Map(), samples: [] };
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline');
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      const [, name, ...rest] = line.split(' ').slice(1);
      out.help.set(name ?? '', rest.join(' '));
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type ?? ''))
        throw new Error(`line ${i + 1}: bad type ${type}`);
      out.types.set(name!, type!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (m === null) throw new Error(`line ${i + 1}: not a sample: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3] !== undefined && m[3] !== '') {
      LABEL.lastIndex = 0;
      let pos = 0;
      while (pos < m[3].length) {
        LABEL.lastIndex = pos;
        const l = LABEL.exec(m[3]);
        if (l === null) throw new Error(`line ${i + 1}: bad labels: ${m[3]}`);
        labels[l[1]!] = l[2]!;
        pos = LABEL.lastIndex;
      }
    }
    const raw = m[4]!;
    // Prometheus parses values with Go's ParseFloat: NaN and Inf in any letter case.
    const lower = raw.toLowerCase();
    const value =
      lower === '+inf' || lower === 'inf'
        ? Infinity
        : lower === '-inf'
          ? -Infinity
          : lower === 'nan'
            ? NaN
            : Number(raw);
    if (Number.isNaN(value) && lower !== 'nan') throw new Error(`line ${i + 1}: bad value ${raw}`);
    out.samples.push({ name: m[1]!, labels, value });
  }
  return out;
}

export function value(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  return e.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}
