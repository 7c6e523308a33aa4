// Which better-sqlite3 build to load, by Node.js major version:
// - Node 22+: better-sqlite3 13 (installed under the alias `better-sqlite3-napi`), a
//   Node-API addon with prebuilt binaries inside the npm package. better-sqlite3 12
//   compiled against Node >= 24.19 headers aborts the process when a Statement is
//   garbage-collected (node::ObjectWrap cleanup-hook assertion; seen in CI here).
// - Node 20: better-sqlite3 12, built from source at install. 13 segfaults on Node 20.
// Both expose the same API; this module is the only place that knows there are two.
//
// better-sqlite3 12's JavaScript is imported, so the build bundles it (scripts/lib/bundle.mjs)
// like every other dependency, and the bundle is one file to ship. Its addon is named to it by
// path: the package's own way to find it (the `bindings` helper) starts from the calling
// file's name, which in the bundle is not in the package. On Node 22+ that JavaScript is
// loaded but never used, and 13 is required from node_modules at run time.
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import Sqlite12 from 'better-sqlite3';

const require = createRequire(import.meta.url);
const major = Number(process.versions.node.split('.')[0]);

const driver: { Database: typeof BetterSqlite3; options: BetterSqlite3.Options } =
  major >= 22
    ? // require(): only this runtime's package may be loaded (the other one's native binary
      // would not work here).
      { Database: require('better-sqlite3-napi') as typeof BetterSqlite3, options: {} }
    : {
        Database: Sqlite12,
        options: { nativeBinding: require.resolve('better-sqlite3/build/Release/better_sqlite3.node') },
      };

/** Opens a SQLite database through the driver this runtime uses. */
export function openDatabase(file: string, options: BetterSqlite3.Options = {}): BetterSqlite3.Database {
  return new driver.Database(file, { ...options, ...driver.options });
}

export type { Database as SqliteDatabase, Statement as SqliteStatement } from 'better-sqlite3';
