// Types of lazy-requires.mjs, for the test that imports it.
import type { Plugin } from 'esbuild';

export interface LazyRequire {
  module: RegExp;
  importer: string;
}
export declare const LAZY_REQUIRES: readonly LazyRequire[];
export declare function lazyRequires(rules?: readonly LazyRequire[]): Plugin;
