// DATABASE_URL: which backend and where, read strictly (a slip is refused with what to write
// instead), and shown only with its password replaced.
import path from 'node:path';

export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export const DEFAULT_SQLITE_PATH = './data/infracat.sqlite';

/**
 * Reads a database URL; '' is the default SQLite file. Throws an Error whose message says
 * what was expected; the message never holds the password.
 */
export function parseDatabaseUrl(raw: string): DatabaseConfig {
  const value = raw.trim();
  if (value === '') return { kind: 'sqlite', path: path.resolve(DEFAULT_SQLITE_PATH) };
  if (value.startsWith('sqlite:')) {
    // sqlite:PATH, also tolerating sqlite://PATH for people used to URL forms.
    const file = value.slice('sqlite:'.length).replace(/^\/\/(?=\/|\.)/, '');
    if (file === '' || file === '//') throw new Error('sqlite: needs a file path, e.g. sqlite:./data/infracat.sqlite');
    if (file === ':memory:') throw new Error('an in-memory database would lose every write; give a file path');
    return { kind: 'sqlite', path: path.resolve(file) };
  }
  if (value.startsWith('postgres://') || value.startsWith('postgresql://')) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new Error('not a valid postgres:// URL');
    }
    if (url.hostname === '' && !url.searchParams.has('host')) throw new Error('the postgres URL has no host');
    return { kind: 'postgres', url: value };
  }
  // A bare file path is the likeliest slip: say exactly what to write instead.
  if (/^(\/|\.{1,2}\/|~\/)|\.(sqlite3?|db)$/i.test(value) && !value.includes('://')) {
    throw new Error(`a bare path is not a database URL; for a SQLite file write sqlite:${value}`);
  }
  throw new Error('expected unset, sqlite:PATH, postgres://... or postgresql://...');
}

/** A database URL fit for logs and messages: the password is replaced. */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return raw.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
  }
}

/**
 * DATABASE_URL as a message about it shows it: the password of a server URL replaced; any
 * other value (sqlite:PATH, a bare path) as written, since it cannot carry credentials.
 */
export function shownDatabaseUrl(raw: string): string {
  return raw.includes('://') && !raw.trim().startsWith('sqlite:') ? redactUrl(raw) : raw;
}

export function describeDatabase(db: DatabaseConfig): string {
  return db.kind === 'sqlite' ? `sqlite:${db.path}` : redactUrl(db.url);
}
