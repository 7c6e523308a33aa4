import { readFileSync } from 'node:fs';

/**
 * The nearest package.json above this module: one level up from src/version.ts, two
 * from dist/cli/infracat.cjs, the bundle this module is built into (scripts/bundle.mjs).
 */
function readPackageJson(): string {
  for (let dir = new URL('.', import.meta.url); ; dir = new URL('..', dir)) {
    try {
      return readFileSync(new URL('package.json', dir), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dir.pathname === '/') throw err;
    }
  }
}

/** The package version. */
export const VERSION = (JSON.parse(readPackageJson()) as { version: string }).version;
