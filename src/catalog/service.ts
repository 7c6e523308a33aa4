// The catalog as every instance serves it: loaded from storage into an in-memory
// snapshot, refreshed by polling the latest version (a cheap query) every
// CATALOG_REFRESH_MS, and kept as it is whenever storage cannot be reached. Applying
// a new catalog is one optimistic insert, so concurrent applies cannot interleave.
import { SYSTEM_CONTEXT, type AuditContext } from '../audit/context.js';
import { auditEvent, NO_SINK, type AuditSink } from '../audit/events.js';
import { AppError } from '../errors.js';
import { OPERATOR_ACCOUNT_ID } from '../storage/migrations.js';
import type { CatalogRevisionInfo, CatalogStore } from '../storage/types.js';
import { changeCounts, diffCatalogsInTurns, diffSummary, summaryLine, type CatalogDiff } from './diff.js';
import { KINDS, sortCatalog, type Catalog } from './model.js';
import { CatalogSettings } from './schemas.js';
import { buildSnapshot, buildSnapshotInTurns, type CatalogSnapshot } from './snapshot.js';

export interface CatalogServiceOptions {
  refreshMs: number;
  onRefreshError?: (err: unknown) => void;
  /** Told of each audit event once written (the audit log line). */
  audit?: AuditSink;
  now?: () => number;
}

/**
 * The catalog before any apply: every setting at its declared default, no entries. A stored
 * document written before a setting existed takes the setting's default from here.
 */
const settings = Object.entries(CatalogSettings.properties) as [string, { default?: unknown }][];
export const EMPTY_CATALOG = {
  ...Object.fromEntries(settings.map(([key, schema]) => [key, structuredClone(schema.default)])),
  ...Object.fromEntries(KINDS.map((kind) => [kind, []])),
} as Catalog;

/** What an apply changes, and the version it applies on top of. */
export interface CatalogPlan {
  diff: CatalogDiff;
  baseVersion: number;
}

export class CatalogService {
  private current: CatalogSnapshot = buildSnapshot(EMPTY_CATALOG, 0);
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  /** Time of the last successful check against storage (ms since epoch), for metrics. */
  lastCheckedAt = 0;
  refreshFailures = 0;

  constructor(
    private readonly store: CatalogStore,
    private readonly options: CatalogServiceOptions,
  ) {}

  /**
   * The snapshot to answer from. Past its validUntil (an entry's sunset_at) it is rebuilt
   * from the same catalog at once, without storage: sunset needs no apply.
   */
  get snapshot(): CatalogSnapshot {
    if (this.current.validUntil !== Infinity) {
      const now = this.now();
      if (now >= this.current.validUntil) this.current = buildSnapshot(this.current.catalog, this.current.version, now);
    }
    return this.current;
  }

  /** Reads the live catalog now (if newer than the snapshot). Errors propagate. */
  async load(): Promise<void> {
    const latest = await this.store.latestVersion();
    if (latest !== this.current.version) {
      const rev = await this.store.current();
      const from = this.current.version;
      if (rev !== null && rev.version !== from) {
        // A slice of entries per turn: a catalog of 20,000 plans takes a while to serialise.
        const next = await buildSnapshotInTurns(decodeCatalog(rev.document), rev.version, this.now());
        // Unless another load took in a newer version meanwhile.
        if (this.current.version === from || next.version > this.current.version) this.current = next;
      }
    }
    this.lastCheckedAt = this.now();
  }

  /** One poll; failures keep the last snapshot and are reported, never thrown. */
  refresh(): Promise<void> {
    this.refreshing ??= this.load()
      .catch((err: unknown) => {
        this.refreshFailures += 1;
        this.options.onRefreshError?.(err);
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** What applying `next` would change, against the live catalog in storage. */
  async plan(next: Catalog): Promise<CatalogPlan> {
    const rev = await this.store.current();
    const before = rev === null ? null : decodeCatalog(rev.document);
    return { diff: await diffCatalogsInTurns(before, sortCatalog(next)), baseVersion: rev?.version ?? 0 };
  }

  /**
   * The plan of a rollback: revision `to`'s document against the live one. NOT_FOUND when
   * no such revision exists.
   */
  async planRollback(to: number): Promise<CatalogPlan & { catalog: Catalog }> {
    const rev = await this.store.revision(to);
    if (rev === null) throw new AppError('NOT_FOUND', `no catalog revision ${to}`);
    const catalog = decodeCatalog(rev.document);
    return { catalog, ...(await this.plan(catalog)) };
  }

  /** Applied revisions without their documents, newest first. */
  revisions(limit: number, before?: number): Promise<CatalogRevisionInfo[]> {
    return this.store.revisions(limit, before);
  }

  /**
   * Applies `next` atomically on top of `baseVersion`, audited as `catalog.applied` (in
   * the operator account's trail) with what it changes against that version; 409 if
   * another apply came first. `rollbackOf`: the revision whose document `next` is.
   */
  async apply(next: Catalog, baseVersion: number, context: AuditContext, rollbackOf?: number): Promise<number> {
    const [prefix, details] =
      rollbackOf === undefined ? ['', {}] : [`rollback to version ${rollbackOf}: `, { rollback_of: rollbackOf }];
    if (!(await this.storeApply(next, baseVersion, context, prefix, details)))
      throw new AppError(
        'CONFLICT',
        'the catalog was changed by someone else meanwhile; review the new diff and apply again',
      );
    // Served at once from what was stored, not read back: a document of 20,000 plans is
    // megabytes of JSON to parse in one turn. (Decoded, the stored document is this.)
    const version = baseVersion + 1;
    const snapshot = await buildSnapshotInTurns(sortCatalog({ ...EMPTY_CATALOG, ...next }), version, this.now());
    if (this.current.version < version) this.current = snapshot;
    return version;
  }

  /** Stores `next` as version baseVersion + 1 with its summary and event; false if that version exists. */
  private async storeApply(
    next: Catalog,
    baseVersion: number,
    context: AuditContext,
    summaryPrefix: string,
    details: Record<string, unknown>,
  ): Promise<boolean> {
    const base = baseVersion === 0 ? null : await this.store.revision(baseVersion);
    if (baseVersion !== 0 && base === null) return false;
    const diff = await diffCatalogsInTurns(base === null ? null : decodeCatalog(base.document), sortCatalog(next));
    const now = this.now();
    const version = baseVersion + 1;
    const event = auditEvent({
      action: 'catalog.applied',
      target: { type: 'catalog', id: String(version), name: null },
      accountId: OPERATOR_ACCOUNT_ID,
      context,
      now,
      details: { version, ...details, ...diffSummary(diff) },
    });
    const revision = {
      document: encodeCatalog(next),
      appliedAt: now,
      appliedBy: context.actor,
      summary: summaryPrefix + summaryLine(diff),
      changes: changeCounts(diff),
    };
    const ok = await this.store.apply(revision, baseVersion, event);
    if (ok) (this.options.audit ?? NO_SINK)(event);
    return ok;
  }

  /**
   * First start: stores the initial catalog only if none was ever applied. `initial` is
   * called only then (parsing the shipped YAML is not free at every start).
   */
  async seedIfEmpty(initial: () => Catalog | Promise<Catalog>): Promise<boolean> {
    if ((await this.store.latestVersion()) !== 0) return false;
    return this.storeApply(await initial(), 0, SYSTEM_CONTEXT, 'initial catalog: ', { seed: true });
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

// The stored document is the internal model (prices in cents) as JSON.
export function encodeCatalog(c: Catalog): string {
  return JSON.stringify(sortCatalog(c));
}

export function decodeCatalog(document: string): Catalog {
  const c = JSON.parse(document) as Catalog;
  return sortCatalog({ ...EMPTY_CATALOG, ...c });
}
