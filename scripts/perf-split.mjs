// Splits a server's CPU per request into what it was spent on, kernel included, from
// `perf script` output of a server started with `node --perf-basic-prof` (so JavaScript
// frames have names) and recorded with `perf record -g` while saturated under load:
//   perf script -i perf.data | node scripts/perf-split.mjs US_PER_REQUEST
// US_PER_REQUEST is the server's CPU time per answer in the same run (saturated: 1e6 / rate).
// Each sample goes to the first part whose frame is anywhere on its stack, else to the
// innermost frame's owner (Node's HTTP, the app's code, the event loop). The app's parts
// are found by the bundle's function names (dist/cli/main.js): the access line's write(),
// the metrics' record(), the rate limiter's take().
import { createInterface } from 'node:readline';

const usPerRequest = Number(process.argv[2]);
if (!(usPerRequest > 0)) throw new Error('usage: perf script | node scripts/perf-split.mjs US_PER_REQUEST');

/** [part, test of one frame]: the first that matches any frame of a sample takes it. */
const ANYWHERE = [
  ['waking the client (loopback: the sender pays it)', (f) => f.includes('sock_def_readable')],
  ['the access line', (f) => /^JS:\W?write .*main\.js/.test(f)],
  ['metrics', (f) => /^JS:\W?record .*main\.js/.test(f)],
  ['sending the answer (end, writev)', (f) => f.includes('end node:_http_outgoing')],
  ['headers to text (writeHead)', (f) => f.includes('writeHead node:_http_server')],
  ['a child logger per request', (f) => f.includes('defaultChildLoggerFactory')],
  ['request id', (f) => f.includes('randomUUID')],
  ['rate limit', (f) => /^JS:\W?take .*main\.js/.test(f)],
  ['garbage collection', (f) => f.includes('Heap::')],
];
/** Otherwise the innermost frame that one of these claims. */
const INNERMOST = [
  ["the app's code and Fastify", (f) => f.startsWith('JS:') && !f.includes(' node:')],
  ["Node's HTTP (parser, streams)", (f) => f.includes(' node:') || f.includes('llhttp')],
  ['event loop', (f) => f.includes('uv_run') || f.includes('uv__io_poll')],
];

/** The part that a whole stack (innermost frame first) belongs to. */
function partOf(stack) {
  for (const [part, test] of ANYWHERE) if (stack.some(test)) return part;
  for (const frame of stack) for (const [part, test] of INNERMOST) if (test(frame)) return part;
  return 'other';
}

const counts = new Map();
let samples = 0;
let stack = [];
const take = () => {
  if (stack.length === 0) return;
  const part = partOf(stack);
  counts.set(part, (counts.get(part) ?? 0) + 1);
  samples += 1;
  stack = [];
};
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') take();
  else if (/^\s/.test(line)) {
    // "\t    7f... symbol+0x12 (dso)": the symbol, without its offset and object file.
    const symbol = line
      .trim()
      .replace(/^[0-9a-f]+\s+/, '')
      .replace(/\s+\(.*\)$/, '')
      .replace(/\+0x[0-9a-f]+$/, '');
    stack.push(symbol);
  }
}
take();
console.log(`${samples} samples, ${usPerRequest} us per request`);
for (const [part, n] of [...counts].sort((a, b) => b[1] - a[1])) {
  const us = ((n / samples) * usPerRequest).toFixed(1).padStart(6);
  console.log(`${us} us  ${((n / samples) * 100).toFixed(1).padStart(5)}%  ${part}`);
}
