// Which better-sqlite3 build to load, by Node.js major version:
// - Node 22+: better-sqlite3 13 (installed under the alias `better-sqlite3-napi`), a
//   Node-API addon with prebuilt binaries inside the npm package. better-sqlite3 12
//   compiled against Node >= 24.19 headers aborts the process when a Statement is
//   garbage-collected (node::ObjectWrap cleanup-hook assertion; seen in CI here).
// - Node 20: better-sqlite3 12, built from source at install. 13 segfaults on Node 20.
// Both expose the same API; this module is the only place that knows there are two.
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);
const major = Number(process.versions.node.split('.')[0]);

const DRIVER_PACKAGE = major >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3';

// require(): both packages are CommonJS, and only the chosen one may be loaded (the
// other one's native binary would not work on this runtime).
const Database = require(DRIVER_PACKAGE) as typeof BetterSqlite3;

export default Database;
export type { Database as SqliteDatabase, Statement as SqliteStatement } from 'better-sqlite3';
