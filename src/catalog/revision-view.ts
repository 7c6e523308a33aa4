// A catalog revision as GET /api/v1/catalog/revisions and `infracat catalog history --json`
// show it (the shape: CatalogRevision in manage-schemas.ts), to the account that reads it:
// customers see that the operator applied it, not with which token (audit/views.ts).
import { appliedByView } from '../audit/views.js';
import type { CatalogRevisionInfo } from '../storage/types.js';
import type { CatalogRevision } from './manage-schemas.js';

/** `r` as the account `readerAccountId` sees it (null: no account's token, seen as a customer sees it). */
export function revisionView(r: CatalogRevisionInfo, readerAccountId: string | null): CatalogRevision {
  return {
    version: r.version,
    applied_at: new Date(r.appliedAt).toISOString(),
    applied_by: appliedByView(r.appliedBy, readerAccountId),
    summary: r.summary,
    changes: r.changes,
  };
}
