// Types of bundle.mjs, for scripts/run-tests.ts.

/** Builds the command into `dir`; resolves with the launcher's path, DIR/main.js. */
export declare function bundleInto(dir: string): Promise<string>;
