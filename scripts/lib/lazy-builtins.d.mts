// Types of lazy-builtins.mjs, for the test that imports it.
import type { Plugin } from 'esbuild';

export declare const LAZY_BUILTIN: RegExp;
export declare const lazyBuiltins: Plugin;
