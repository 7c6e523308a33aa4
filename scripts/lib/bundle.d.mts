// Types of bundle.mjs, for scripts/run-tests.ts.

/** Builds the command into `dir`; resolves with its path, DIR/main.js. */
export declare function bundleInto(dir: string): Promise<string>;
