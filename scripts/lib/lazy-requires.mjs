import { readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';

// An esbuild plugin for scripts/bundle.mjs (tested in test/build/lazy-requires.test.ts).
//
// Modules a dependency requires at load but uses only on paths a start never takes. A
// dependency's require() of one (an importer under node_modules matching the rule) gets a
// stand-in that loads the module at its first use, so a path that does use it works as
// before. What each rule saves is measured in BENCHMARKS.md ("Start-up, session 15" and
// "Start-up, session 16").
export const LAZY_REQUIRES = [
  // Fastify's HTTP/2 and HTTPS servers and its host-name lookup (infracat serves plain
  // HTTP/1.1 and listens on an address), prom-client's Pushgateway: 8 ms and 2.5 MB of
  // every start (http2 alone 6 ms and 1.75 MB).
  { module: /^(node:)?(dns|http2|https)$/, importer: `${path.sep}node_modules${path.sep}` },
  // The YAML library, for @fastify/swagger's YAML document (/docs/yaml); the
  // catalog file module loads it for itself, also on first use (src/catalog/file.ts).
  { module: /^yaml$/, importer: `${path.sep}node_modules${path.sep}@fastify${path.sep}swagger${path.sep}` },
  // The OpenTelemetry API, for prom-client's CPU counter to label exemplars (which infracat
  // does not enable) with the active trace: its whole API surface evaluated at every start.
  { module: /^@opentelemetry\/api$/, importer: `${path.sep}node_modules${path.sep}prom-client${path.sep}` },
];

// Packages a dependency requires whole where it calls a few of their functions at start: its
// require() gets a module of ours with just those (`with`, a file beside this one). Fastify
// checks each plugin's `fastify` version range with semver's satisfies(), gt() and coerce()
// (fastify/lib/plugin-utils.js); semver's index evaluates all of its ~45 modules, and the
// check itself parses the range with a dozen of semver's patterns (fastify-semver.cjs).
export const NARROW_REQUIRES = [
  {
    module: /^semver$/,
    importer: `${path.sep}node_modules${path.sep}fastify${path.sep}lib${path.sep}plugin-utils.js`,
    with: path.join(import.meta.dirname, 'fastify-semver.cjs'),
  },
];

/**
 * The plugin for `rules` (`{ module: RegExp, importer: path fragment }`) and `narrow`
 * (the same, with `with`: the file the importer gets instead).
 */
export function lazyRequires(rules = LAZY_REQUIRES, narrow = NARROW_REQUIRES) {
  return {
    name: 'lazy-requires',
    setup(build) {
      // A rule applies to a require() call whose importer's path holds the rule's fragment.
      const onRequire = ({ module, importer }, resolved) =>
        build.onResolve({ filter: module }, (args) =>
          args.kind === 'require-call' && args.importer.includes(importer)
            ? { ...resolved(args), pluginData: { resolveDir: path.dirname(args.importer) } }
            : undefined,
        );
      // The narrowing file's own require()s resolve from its importer's directory, as the
      // package did.
      for (const rule of narrow) onRequire(rule, () => ({ path: rule.with, namespace: 'narrow-require' }));
      build.onLoad({ filter: /.*/, namespace: 'narrow-require' }, ({ path: file, pluginData }) => ({
        contents: readFileSync(file, 'utf8'),
        loader: 'js',
        resolveDir: pluginData.resolveDir,
      }));
      for (const rule of rules)
        onRequire(rule, (args) => ({
          path: isBuiltin(args.path) ? `node:${args.path.replace(/^node:/, '')}` : args.path,
          namespace: 'lazy-require',
        }));
      // The stand-in's own require() is resolved as the dependency's would have been (from its
      // directory); its importer is not under node_modules, so it gets the module itself. One
      // stand-in per module name: a rule names a module its importers all resolve alike.
      build.onLoad({ filter: /.*/, namespace: 'lazy-require' }, ({ path: name, pluginData }) => ({
        contents: `let loaded;
const load = () => (loaded ??= require(${JSON.stringify(name)}));
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
        resolveDir: pluginData.resolveDir,
      }));
    },
  };
}
