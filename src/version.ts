import { readFileSync } from 'node:fs';

/** The package version (package.json is two levels up from both src/ and dist/). */
export const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
