import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { tempDir } from '../helpers/sqlite.js';
import { runStoreContract } from './contract.js';

runStoreContract({
  name: 'sqlite',
  freshDatabase() {
    const tmp = tempDir();
    const file = tmp.file('nested/dir/infracat.sqlite');
    return Promise.resolve({
      open: () => new SqliteStore({ path: file, busyTimeoutMs: 5000 }),
      drop: () => Promise.resolve(tmp.remove()),
    });
  },
});
