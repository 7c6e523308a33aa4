// Types of lazy-requires.mjs, for the test that imports it.
import type { Plugin } from 'esbuild';

export interface LazyRequire {
  module: RegExp;
  importer: string;
}
export interface NarrowRequire extends LazyRequire {
  /** The file the importer gets instead (its require()s resolve from the importer's directory). */
  with: string;
}
export declare const LAZY_REQUIRES: readonly LazyRequire[];
export declare const NARROW_REQUIRES: readonly NarrowRequire[];
export declare function lazyRequires(rules?: readonly LazyRequire[], narrow?: readonly NarrowRequire[]): Plugin;
