// Wires the account domain; used by the HTTP app and the CLI alike.
import type { AuditSink } from '../audit/events.js';
import type { Store } from '../storage/types.js';
import type { VerificationCache } from '../tokens/cache.js';
import { AccountService } from './service.js';

export function createAccountService(
  store: Store,
  cache: VerificationCache,
  now?: () => number,
  audit?: AuditSink,
): AccountService {
  return new AccountService(store.accounts, {
    cache,
    ...(now !== undefined ? { now } : {}),
    ...(audit !== undefined ? { audit } : {}),
  });
}
