// Prints where a V8 .cpuprofile (node --cpu-prof) spent its time: self time by function
// and by package, and inclusive time by function (a sample counts once for every function
// on its stack), for BENCHMARKS.md's evidence.
//   node scripts/cpuprofile-top.mjs .bench/prof/CPU.*.cpuprofile [N]
import { readFileSync } from 'node:fs';

const [file, n = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map();
const dt = profile.timeDeltas;
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (dt[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fns = new Map();
function keyOf({ functionName, url, lineNumber }) {
  const where = url
    .replace(/^file:\/\//, '')
    .replace(/.*node_modules\//, 'node_modules/')
    .replace(/.*\/(dist|src)\//, '$1/');
  return `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
}
const pkgs = new Map();
for (const [id, us] of self) {
  const { url } = byId.get(id).callFrame;
  const key = keyOf(byId.get(id).callFrame);
  fns.set(key, (fns.get(key) ?? 0) + us);
  const pkg =
    url === ''
      ? '(native/V8)'
      : url.startsWith('node:')
        ? 'node core'
        : (/node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? 'infracat');
  pkgs.set(pkg, (pkgs.get(pkg) ?? 0) + us);
}
const pct = (us) => `${((us / total) * 100).toFixed(1)}%`.padStart(6);
console.log(`total ${(total / 1e6).toFixed(2)} s sampled\n\nby package:`);
for (const [k, v] of [...pkgs].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${pct(v)}  ${k}`);
console.log('\nby function (self time):');
for (const [k, v] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, Number(n))) console.log(`${pct(v)}  ${k}`);

const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const inclusive = new Map();
profile.samples.forEach((id, i) => {
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const key = keyOf(byId.get(at).callFrame);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + (dt[i] ?? 0));
  }
});
console.log('\nby function (inclusive time):');
for (const [k, v] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(n))) console.log(`${pct(v)}  ${k}`);
