// Wire shapes of the catalog management routes (GET /api/v1/catalog and
// GET /api/v1/catalog/revisions), typed here by hand until web/src/openapi.d.ts is
// regenerated from a server that serves them (`npm run gen:client`); then these become
// aliases of the generated types, as in api.ts.
import type { AuditEvent } from './api.js';

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
export interface CatalogRevision {
  version: number;
  /** RFC 3339. */
  applied_at: string;
  /** The audit actor who applied it; null for revisions applied before this was recorded. */
  applied_by: AuditEvent['actor'] | null;
  /** "2 added, 1 changed, 0 removed", "rollback to version 3: ..."; null when not recorded. */
  summary: string | null;
}
