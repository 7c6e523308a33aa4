// Following the changes other instances make (src/storage/changes.ts): what this instance
// holds in memory is dropped as soon as storage announces it changed, so a deleted,
// rotated or narrowed token, a suspended or deleted account and a newly applied catalog
// take effect here within about a second instead of TOKEN_CACHE_TTL_MS / CATALOG_REFRESH_MS.
// Those two bounds remain the fallback while the instance cannot hear (the listening
// connection is down): a missed change still takes effect within them.
import type { CatalogService } from '../catalog/service.js';
import type { Change, ChangeHandlers } from '../storage/types.js';
import type { VerificationCache } from '../tokens/cache.js';

export interface ChangeFollowerOptions {
  cache: VerificationCache;
  catalog: CatalogService;
  onConnected?: () => void;
  onDisconnected?: (err: unknown) => void;
}

/** The handlers a store's watch() calls, and what they saw (for metrics). */
export class ChangeFollower implements ChangeHandlers {
  /** Changes heard, by kind. */
  readonly heard: Record<Change['kind'], number> = { token: 0, account: 0, catalog: 0, resync: 0 };
  /** Times the watch lost its connection. */
  disconnects = 0;
  /** Whether changes are being heard right now. */
  listening = false;
  /**
   * Settles once the first attempt to hear changes has ended: connected, with the resync
   * that follows taken in (cache dropped, catalog read), or failed (the watch retries on
   * its own; the TTL and the catalog poll cover the meantime).
   */
  readonly firstAttempt: Promise<void>;
  #settle!: () => void;

  constructor(private readonly options: ChangeFollowerOptions) {
    this.firstAttempt = new Promise((resolve) => (this.#settle = resolve));
  }

  change(change: Change): void {
    this.heard[change.kind] += 1;
    const { cache, catalog } = this.options;
    switch (change.kind) {
      case 'token':
        cache.evictChanged(change.id, change.accountId);
        return;
      case 'account':
        cache.evictAccount(change.accountId);
        return;
      case 'catalog':
        // The snapshot may already be that version (this instance applied it): load() then
        // costs one cheap read. refresh() shares a load in flight and never throws.
        if (catalog.snapshot.version < change.version) void catalog.refresh();
        return;
      case 'resync':
        cache.clear();
        void catalog.refresh().then(this.#settle);
        return;
    }
  }

  connected(): void {
    this.listening = true;
    this.options.onConnected?.();
  }

  disconnected(err: unknown): void {
    this.#settle();
    this.listening = false;
    this.disconnects += 1;
    this.options.onDisconnected?.(err);
  }
}
