// Starting and stopping the app's background work: the timers of the domain objects, the
// catalog's first load, the change feed (other instances' changes, heard as they commit:
// src/fleet/changes.ts) and this instance's place in the fleet. The app owns its store:
// on close it flushes pending last-used times, then closes it.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import { loadDefaultCatalog } from './catalog/default.js';
import { ChangeFollower } from './fleet/changes.js';
import type { ChangeWatch, Store } from './storage/types.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** What this instance hears of other instances' changes. */
    changeFeed: ChangeFollower;
  }
}

export interface LifecycleOptions {
  store: Store;
  /** Told about every lost connection of the change feed (metrics). */
  onStorageError: () => void;
}

export const lifecycle = fp<LifecycleOptions, RawServerDefault, TypeBoxTypeProvider>(
  (app, { store, onStorageError }, done) => {
    const { tokens, catalog, purger, auditPruner, usagePruner, fleet, limits, webhooks, notices, deliveryPruner } =
      app.infracat;
    const changes = new ChangeFollower({
      cache: tokens.cache,
      catalog,
      onConnected: () => app.log.info('hearing changes made by other instances'),
      onDisconnected: (err) => {
        onStorageError();
        app.log.warn(
          { err },
          'lost the connection that hears changes made by other instances; reconnecting ' +
            '(meanwhile they take effect here within TOKEN_CACHE_TTL_MS and CATALOG_REFRESH_MS)',
        );
      },
    });
    app.decorate('changeFeed', changes);
    let watch: ChangeWatch | undefined;

    // An instance of the fleet is one that serves: it registers once it listens, so a start
    // that fails before (its port taken, its storage or catalog not ready) never counts and
    // never shrinks the others' shares of the rate limits. An app that never listens (one
    // tested through inject()) is no instance. startServer() awaits the same first heartbeat
    // before it says it is listening (src/server.ts); onClose deregisters.
    app.addHook('onListen', async () => {
      // The purges' first runs, not awaited, once the instance serves: a start never waits
      // for them, and a backlog (a million expired tokens) is worked off while requests are
      // served, each batch on a later turn of the event loop (src/periodic.ts). An app that
      // never listens (one tested through inject()) purges only when asked (run()).
      purger.start();
      auditPruner.start();
      usagePruner.start();
      deliveryPruner.start();
      // Deliveries and expiry notices are an instance's work too: each one that serves
      // takes its share (claims are exclusive; a notice is sent once).
      webhooks.worker.start();
      notices.start();
      await fleet.start();
      limits.start();
      if (fleet.stats.beats > 0) app.log.info({ instance: fleet.id, instances: fleet.count }, 'instance registered');
    });
    app.addHook('onReady', async () => {
      tokens.lastUsed.start();
      tokens.usage.start();
      // First start of an empty database gets the shipped catalog; then load what is live.
      // If storage is down now, catalogs start empty and fill in at the next refresh.
      try {
        if (await catalog.seedIfEmpty(loadDefaultCatalog))
          app.log.info('applied the default catalog to an empty database');
        await catalog.load();
      } catch (err) {
        app.log.warn({ err }, 'could not load the catalog at start; will retry');
      }
      catalog.start();
      watch = store.watch(changes);
      // Serve once this instance hears other instances' changes (or knows it cannot yet: a
      // failed attempt is bounded by DATABASE_TIMEOUT_MS). What changed before it listened is
      // taken in by the resync that follows the connection, at start rather than later.
      await changes.firstAttempt;
    });
    app.addHook('onClose', async () => {
      // In-flight requests are done by now: leave the fleet (the others take over this
      // instance's share at their next heartbeat), write the last uses, let go of storage.
      await limits.stop();
      await webhooks.worker.stop();
      await notices.stop();
      await fleet.stop();
      await watch?.stop();
      catalog.stop();
      await purger.stop();
      await auditPruner.stop();
      await usagePruner.stop();
      await deliveryPruner.stop();
      await tokens.lastUsed.stop();
      await tokens.usage.stop();
      await store.close();
    });
    done();
  },
  { name: 'infracat-lifecycle', dependencies: ['infracat-services'] },
);
