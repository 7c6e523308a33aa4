// Types of lazy-requires.mjs, for the test that imports it.
import type { Plugin } from 'esbuild';

export interface LazyRequire {
  module: RegExp;
  importer: string;
}
export interface NarrowRequire extends LazyRequire {
  /** Each name the importer uses, and the module (a path within the package) that is it. */
  exports: Readonly<Record<string, string>>;
}
export declare const LAZY_REQUIRES: readonly LazyRequire[];
export declare const NARROW_REQUIRES: readonly NarrowRequire[];
export declare function lazyRequires(rules?: readonly LazyRequire[], narrow?: readonly NarrowRequire[]): Plugin;
