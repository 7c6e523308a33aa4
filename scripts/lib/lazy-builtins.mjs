import path from 'node:path';

// An esbuild plugin for scripts/bundle.mjs (tested in test/build/lazy-builtins.test.ts).
//
// Node modules a dependency requires at load but uses only on paths infracat never takes:
// Fastify's HTTP/2 and HTTPS servers and its host-name lookup (infracat serves plain
// HTTP/1.1 and listens on an address), prom-client's Pushgateway. Loading them was 8 ms and
// 2.5 MB of every start (http2 alone 6 ms and 1.75 MB; BENCHMARKS.md "Start-up, session
// 15"). A dependency's require() of one gets a stand-in that loads the module at its first
// use, so a path that does use it works as before.
export const LAZY_BUILTIN = /^(node:)?(dns|http2|https)$/;
export const lazyBuiltins = {
  name: 'lazy-builtins',
  setup(build) {
    build.onResolve({ filter: LAZY_BUILTIN }, (args) =>
      args.kind === 'require-call' && args.importer.includes(`${path.sep}node_modules${path.sep}`)
        ? { path: args.path.replace(/^node:/, ''), namespace: 'lazy-builtin' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, ({ path: name }) => ({
      contents: `let loaded;
const load = () => (loaded ??= require('node:${name}'));
module.exports = new Proxy({}, {
  get: (_, key) => load()[key],
  has: (_, key) => key in load(),
  ownKeys: () => Reflect.ownKeys(load()),
  getOwnPropertyDescriptor: (_, key) => {
    const own = Reflect.getOwnPropertyDescriptor(load(), key);
    return own && { ...own, configurable: true };
  },
});`,
      loader: 'js',
    }));
  },
};
