import { PostgresStore } from '../../src/storage/postgres/store.js';
import { createTestDatabase, requirePostgres } from '../helpers/pg.js';
import { runStoreContract } from './contract.js';

// requirePostgres() throws under CI when no server is configured; outside CI it is
// always set by `npm test`.
const adminUrl = requirePostgres();
if (adminUrl !== undefined) {
  runStoreContract({
    name: 'postgres',
    async freshDatabase() {
      const db = await createTestDatabase(adminUrl);
      return {
        open: () => new PostgresStore({ url: db.url, poolMax: 5, timeoutMs: 5000 }),
        drop: () => db.drop(),
      };
    },
  });
}
