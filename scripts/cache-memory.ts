// `node --expose-gc --import tsx scripts/cache-memory.ts`: heap bytes per entry of the
// verification cache (src/tokens/cache.ts), filled the way the service fills it: tokens
// stored in a SQLite file, each loaded by the SHA-256 of its secret through the store's
// findByHash (a miss of TokenService.verify). What TOKEN_CACHE_MAX's maximum is set from
// (src/config.ts).
//
//   CACHE_MEMORY_ENTRIES=100000   tokens cached
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { OPERATOR_ACCOUNT_ID } from '../src/storage/migrations.js';
import { SqliteStore } from '../src/storage/sqlite/store.js';
import { API_TOKENS } from '../src/storage/tables.js';
import type { TokenRecord } from '../src/storage/types.js';
import { VerificationCache } from '../src/tokens/cache.js';
import { generateSecret, hashSecret } from '../src/tokens/format.js';
import { newId } from '../src/tokens/ids.js';
import { openDatabase } from '../src/storage/sqlite/driver.js';

const ENTRIES = Number(process.env.CACHE_MEMORY_ENTRIES ?? 100_000);
// Scopes as tokens hold them: a few each (the bootstrap admin token holds 12).
const SCOPE_SETS = [['apps:read'], ['images:read', 'plans:read', 'regions:read'], ['api-tokens:write', 'apps:write']];

async function heapAfterGc(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

const dir = mkdtempSync(path.join(tmpdir(), 'infracat-cache-'));
const file = path.join(dir, 'cache.sqlite');
const store = new SqliteStore({ path: file, busyTimeoutMs: 5000 });
try {
  await store.migrate();
  const now = Date.now();
  const secrets: string[] = [];
  const raw = openDatabase(file);
  const insert = raw.prepare(`INSERT INTO api_tokens (${API_TOKENS.columns}) VALUES (${API_TOKENS.placeholders})`);
  raw.transaction(() => {
    for (let i = 0; i < ENTRIES; i++) {
      const secret = generateSecret('icat');
      secrets.push(secret);
      const token: TokenRecord = {
        id: newId('tok', now - i),
        name: `ci deploy ${i}`,
        scopes: SCOPE_SETS[i % SCOPE_SETS.length]!,
        secretHash: hashSecret(secret),
        createdAt: now - i,
        expiresAt: i % 2 === 0 ? null : now + 86_400_000,
        lastUsedAt: i % 3 === 0 ? null : now - 1000,
        lastUsedIp: null,
        accountId: OPERATOR_ACCOUNT_ID,
        previousSecretHash: null,
        previousExpiresAt: null,
        allowedCidrs: null,
        notBefore: null,
        enabled: true,
      };
      insert.run(...API_TOKENS.params(token));
    }
  })();
  raw.close();

  const cache = new VerificationCache(ENTRIES, 600_000, (hash) => store.tokens.findByHash(hash));
  // Warm: the statement prepared, the code compiled; then emptied.
  await cache.load(hashSecret(secrets[0]!));
  cache.clear();
  const before = await heapAfterGc();
  for (const secret of secrets) {
    if ((await cache.load(hashSecret(secret))) === null) throw new Error('a stored token was not found');
  }
  const after = await heapAfterGc();
  if (cache.size !== ENTRIES) throw new Error(`cached ${cache.size} of ${ENTRIES}`);
  const perEntry = (after - before) / ENTRIES;
  console.log(
    `${ENTRIES} entries: heap +${((after - before) / 2 ** 20).toFixed(1)} MiB, ${perEntry.toFixed(0)} bytes per entry`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
