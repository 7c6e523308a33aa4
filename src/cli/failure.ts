// Why a command could not start, in words an operator can act on: what failed, where
// (the database with its password redacted, the file, the address), the underlying
// cause, and what to do, with a sysexits(3) exit code (docs/operations.md lists them).
import { ConfigError } from '../config-error.js';
import { DatabaseMissingError, NotSupportedError, StorageUnavailableError } from '../storage/types.js';

export const EXIT = {
  /** A setting is invalid (sysexits EX_CONFIG). */
  config: 78,
  /** The location holds no infracat database (EX_NOINPUT). */
  noInput: 66,
  /** A service (the database, the port) is not available (EX_UNAVAILABLE). */
  unavailable: 69,
  /** A file or directory cannot be created (EX_CANTCREAT). */
  cantCreate: 73,
  /** Storage is read-only or failed (EX_IOERR). */
  io: 74,
  /** Permission denied (EX_NOPERM). */
  noPerm: 77,
} as const;

export interface FailureContext {
  /** The database, described with its password redacted. */
  database: string;
  /** host:port the server was to listen on (serve only). */
  listen?: string;
}

export interface Explained {
  message: string;
  exitCode: number;
}

interface ErrnoLike {
  code?: unknown;
  errno?: unknown;
  syscall?: unknown;
  path?: unknown;
  address?: unknown;
  port?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** The error and its causes, outermost first. */
function chain(err: unknown): ErrnoLike[] {
  const out: ErrnoLike[] = [];
  let e: unknown = err;
  while (typeof e === 'object' && e !== null && out.length < 5) {
    out.push(e);
    e = (e as { cause?: unknown }).cause;
  }
  return out;
}

const text = (e: ErrnoLike | undefined): string => (typeof e?.message === 'string' ? e.message : 'unknown error');

export function explainFailure(err: unknown, ctx: FailureContext): Explained {
  if (err instanceof ConfigError) return { message: `configuration error: ${err.message}`, exitCode: EXIT.config };
  if (err instanceof DatabaseMissingError) return { message: err.message, exitCode: EXIT.noInput };
  if (err instanceof NotSupportedError) return { message: err.message, exitCode: EXIT.unavailable };
  const errors = chain(err);
  const coded = errors.find((e) => typeof e.code === 'string');
  const code = typeof coded?.code === 'string' ? coded.code : '';
  const cause = text(coded ?? errors[0]);

  // Listening.
  if (coded?.syscall === 'listen' || code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL') {
    const where = ctx.listen ?? `${String(coded?.address)}:${String(coded?.port)}`;
    if (code === 'EADDRINUSE') {
      return {
        message:
          `cannot listen on ${where}: the port is already in use (${cause}). ` +
          'Stop the other process (another infracat?) or set PORT / --port to a free port.',
        exitCode: EXIT.unavailable,
      };
    }
    if (code === 'EACCES') {
      return {
        message:
          `cannot listen on ${where}: permission denied (${cause}). ` +
          'Ports below 1024 need privileges; use a port of 1024 or more and put a proxy in front.',
        exitCode: EXIT.noPerm,
      };
    }
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
      return {
        message:
          `cannot listen on ${where}: HOST is not an address of this machine (${cause}). ` +
          'Set HOST / --host to one of its addresses, 127.0.0.1 or 0.0.0.0.',
        exitCode: EXIT.config,
      };
    }
    return { message: `cannot listen on ${where}: ${cause}`, exitCode: EXIT.unavailable };
  }

  // PostgreSQL refused us (SQLSTATE classes): credentials and names are settings to fix.
  if (/^28/.test(code)) {
    return {
      message:
        `PostgreSQL at ${ctx.database} refused the login: ${cause}. ` + 'Check the user and password in DATABASE_URL.',
      exitCode: EXIT.config,
    };
  }
  if (code === '3D000') {
    return {
      message:
        `PostgreSQL at ${ctx.database}: ${cause}. ` + 'Create it (createdb) or fix the database name in DATABASE_URL.',
      exitCode: EXIT.config,
    };
  }
  if (code === '42501') {
    return {
      message:
        `PostgreSQL at ${ctx.database}: ${cause}. ` +
        "Grant the infracat user the right to create tables in its schema, or run 'infracat migrate' as an owner.",
      exitCode: EXIT.noPerm,
    };
  }
  if (code === '25006') {
    return {
      message:
        `PostgreSQL at ${ctx.database} is read-only (${cause}): a standby or a read-only transaction default. ` +
        'Point DATABASE_URL at the primary.',
      exitCode: EXIT.io,
    };
  }

  // SQLite and the filesystem.
  if (code === 'SQLITE_READONLY' || code === 'EROFS' || /readonly database|read-only file system/i.test(cause)) {
    return {
      message:
        `the database ${ctx.database} is read-only (${cause}). ` +
        'Make the file, its -wal and -shm files and their directory writable by the user running infracat ' +
        `(uid ${process.getuid?.() ?? '?'}), or move it to a writable filesystem.`,
      exitCode: EXIT.io,
    };
  }
  if (
    coded?.syscall === 'mkdir' ||
    coded?.syscall === 'open' ||
    code === 'SQLITE_CANTOPEN' ||
    code === 'EACCES' ||
    code === 'ENOTDIR'
  ) {
    const file = typeof coded?.path === 'string' ? coded.path : ctx.database;
    const codePrefix = code !== '' && !cause.includes(code) ? `${code}: ` : '';
    return {
      message:
        `cannot create or open ${file} for the database ${ctx.database} (${codePrefix}${cause}). ` +
        'Check that its directory exists or can be created, ' +
        `and that the user running infracat (uid ${process.getuid?.() ?? '?'}) may write there.`,
      exitCode: EXIT.cantCreate,
    };
  }
  if (/^SQLITE_(IOERR|FULL|CORRUPT|NOTADB)/.test(code)) {
    return {
      message:
        `the database ${ctx.database} cannot be used (${code}: ${cause}). ` +
        'Check the disk (space, errors); restore from a backup if the file is damaged.',
      exitCode: EXIT.io,
    };
  }

  // Unreachable database server.
  if (err instanceof StorageUnavailableError || errors.some((e) => e instanceof StorageUnavailableError)) {
    const hint =
      code === 'ENOTFOUND' || code === 'EAI_AGAIN'
        ? 'the host name does not resolve; check the host in DATABASE_URL'
        : code === 'ECONNREFUSED'
          ? 'nothing accepts connections there; check that PostgreSQL runs and listens on that host and port'
          : 'check that PostgreSQL runs, is reachable from here, and that DATABASE_TIMEOUT_MS is long enough';
    return {
      message: `cannot reach the database ${ctx.database}: ${cause}. ${hint[0]!.toUpperCase()}${hint.slice(1)}.`,
      exitCode: EXIT.unavailable,
    };
  }
  return { message: cause, exitCode: 1 };
}
