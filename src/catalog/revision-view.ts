// A catalog revision as GET /api/v1/catalog/revisions and `infracat catalog history --json`
// show it (the shape: CatalogRevision in manage-schemas.ts).
import type { CatalogRevisionInfo } from '../storage/types.js';
import type { CatalogRevision } from './manage-schemas.js';

export function revisionView(r: CatalogRevisionInfo): CatalogRevision {
  return {
    version: r.version,
    applied_at: new Date(r.appliedAt).toISOString(),
    applied_by: r.appliedBy,
    summary: r.summary,
  };
}
