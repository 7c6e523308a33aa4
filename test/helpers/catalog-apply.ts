// Applies a catalog document (file form, as a test writes it) on top of an app's live catalog.
import assert from 'node:assert/strict';
import { validateCatalog } from '../../src/catalog/file.js';
import type { App } from '../../src/http/types.js';
import { TEST_CONTEXT } from './audit.js';

export async function applyDocument(app: App, document: unknown): Promise<number> {
  const parsed = validateCatalog(document);
  assert.ok(parsed.ok, JSON.stringify(parsed.ok ? null : parsed.problems));
  const { baseVersion } = await app.infracat.catalog.plan(parsed.catalog);
  return app.infracat.catalog.apply(parsed.catalog, baseVersion, TEST_CONTEXT);
}
