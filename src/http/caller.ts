// The authenticated token of a request as the domain's caller: what every route that acts
// for a token (tokens, accounts, the audit trail) hands its service.
import { AppError } from '../errors.js';
import type { TokenRecord } from '../storage/types.js';
import type { Caller } from '../tokens/rules.js';
import { bearerChallenge } from './auth.js';

/** The authenticated token as the domain's caller. These routes all require a token; without one, refuse. */
export function callerOf(token: TokenRecord | null): Caller & { accountId: string } {
  if (token === null) {
    throw new AppError('UNAUTHORIZED', 'this endpoint needs a token: Authorization: Bearer <token>', {
      headers: { 'www-authenticate': bearerChallenge() },
    });
  }
  return {
    scopes: token.scopes,
    expiresAt: token.expiresAt,
    allowedCidrs: token.allowedCidrs,
    notBefore: token.notBefore,
    accountId: token.accountId,
  };
}
