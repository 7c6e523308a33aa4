// What the console reads of the catalog management routes. The revision is the generated
// type; the document is narrowed to the lifecycle fields the badges read (lifecycle.ts
// checks each field's type, as the document is open to fields the console ignores).
import type { Json } from './api.js';

export type CatalogKind = 'images' | 'plans' | 'regions';

/** What the console reads of an entry of the catalog document: its slug and lifecycle. */
export interface CatalogEntry {
  slug: string;
  /** RFC 3339: when the entry is (or will be) deprecated. */
  deprecated_at?: string;
  /** RFC 3339: when it leaves the lists (its single-item GET then answers 410). */
  sunset_at?: string;
  /** The slug of the entry of the same kind that replaces it. */
  successor?: string;
}

/** GET /api/v1/catalog: the catalog document in the file format (only what the console reads). */
export type CatalogDocument = Record<CatalogKind, CatalogEntry[]>;

/** One item of GET /api/v1/catalog/revisions (newest first). */
export type CatalogRevision = Json<'listCatalogRevisions', 200>[number];
