import { readFileSync } from 'node:fs';

/**
 * The version in the nearest package.json above this module that has one: one level up
 * from src/version.ts, two from dist/cli/main.js, the bundle this module is built into
 * (scripts/lib/bundle.mjs), whose own dist/cli/package.json only says it is CommonJS.
 */
function packageVersion(): string {
  for (let dir = new URL('.', import.meta.url); ; dir = new URL('..', dir)) {
    try {
      const { version } = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { version?: unknown };
      if (typeof version === 'string') return version;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (dir.pathname === '/') throw new Error('no package.json with a version above this module');
  }
}

/** The package version. */
export const VERSION = packageVersion();
