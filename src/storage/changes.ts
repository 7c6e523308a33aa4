// What one instance tells the others when it changes something they may hold in memory
// (a cached token verification, the catalog snapshot), and the wire form of that message.
//
// PostgreSQL carries it as a NOTIFY payload, sent inside the transaction of the change:
// delivered when (and only if) it commits, in commit order. SQLite has no such channel;
// other processes on the file notice that something changed (PRAGMA data_version) and
// learn only that: the `resync` change. A payload that is not exactly a change this
// release knows is read as `resync` too (fail closed: drop what may be stale).
import type { Change } from './types.js';

/** The NOTIFY channel (PostgreSQL). One per database: schemas sharing a database share it. */
export const CHANGE_CHANNEL = 'infracat_changes';

/** Everything may have changed: drop every cached verification, recheck the catalog. */
export const RESYNC: Change = { kind: 'resync' };

// Short keys: the message travels once per change to every instance (NOTIFY payloads are
// limited to 8000 bytes; these are about 80).
type Wire = { k: 'token'; a: string; i: string } | { k: 'account'; a: string } | { k: 'catalog'; v: number };

export function encodeChange(change: Change): string {
  let wire: Wire | { k: 'resync' };
  switch (change.kind) {
    case 'token':
      wire = { k: 'token', a: change.accountId, i: change.id };
      break;
    case 'account':
      wire = { k: 'account', a: change.accountId };
      break;
    case 'catalog':
      wire = { k: 'catalog', v: change.version };
      break;
    case 'resync':
      wire = { k: 'resync' };
      break;
  }
  return JSON.stringify(wire);
}

// As the services accept ids (tokens/service.ts, accounts/service.ts).
const ID = /^[A-Za-z0-9_-]{1,100}$/;

/** The change a payload announces; RESYNC when it is not exactly one this release knows. */
export function decodeChange(payload: string | undefined): Change {
  let wire: unknown;
  try {
    wire = JSON.parse(payload ?? '');
  } catch {
    return RESYNC;
  }
  if (typeof wire !== 'object' || wire === null) return RESYNC;
  const w = wire as Record<string, unknown>;
  const keys = Object.keys(w).sort().join(',');
  if (w.k === 'token' && keys === 'a,i,k' && isId(w.a) && isId(w.i)) return { kind: 'token', accountId: w.a, id: w.i };
  if (w.k === 'account' && keys === 'a,k' && isId(w.a)) return { kind: 'account', accountId: w.a };
  if (w.k === 'catalog' && keys === 'k,v' && Number.isSafeInteger(w.v) && (w.v as number) > 0)
    return { kind: 'catalog', version: w.v as number };
  return RESYNC;
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && ID.test(value);
}
