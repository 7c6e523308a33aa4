// The catalog that ships with the package (catalog/default.yaml), applied on the first
// start of an empty database.
import { readFileSync } from 'node:fs';
import { parseCatalogText } from './file.js';
import type { Catalog } from './model.js';

export const DEFAULT_CATALOG_FILE = new URL('../../catalog/default.yaml', import.meta.url);

export function loadDefaultCatalog(): Catalog {
  const result = parseCatalogText(readFileSync(DEFAULT_CATALOG_FILE, 'utf8'));
  if (!result.ok) throw new Error(`the shipped default catalog is invalid: ${JSON.stringify(result.problems[0])}`);
  return result.catalog;
}
