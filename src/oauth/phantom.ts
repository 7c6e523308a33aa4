// Phantom tokens: the signed access token forward auth hands the gateway with each allowed
// check (`X-Token-Jwt`, AUTH_CHECK_JWT), so the upstream gets a token it can verify offline
// instead of the client's opaque secret.
//
// Signing on every check would cost more than the check itself (BENCHMARKS.md), so each
// token's signed token is kept in memory and handed out again until a fifth of its life is
// left (then a new one is signed, by the first check past that point; the others share
// it). A kept one is handed out only after the check verified the token, and only for the
// same token id, scopes and end as it was signed for (the token's expiry; for its previous
// secret, the grace period's end too): a token whose scopes or expiry changed gets a new
// one at its next check, and a token that no longer verifies gets none. It is kept per
// token id, bounded like the verification cache (least recently used go first), and
// dropped with the token's entries there (VerificationCache.onEvict): a deleted, rotated,
// edited or suspended token's signed token is forgotten on every instance as soon as its
// verification is. A resync (anything may have changed: after a reconnect,
// or on SQLite at every write of another process) drops verifications, not these: the
// next check verifies the token again, which is what decides. What is already out stays
// valid until its `exp` (docs/signed-tokens.md).
import { LRUCache } from 'lru-cache';
import { countBound } from '../bounded.js';
import type { TokenRecord } from '../storage/types.js';
import type { AccessTokenSigner } from './signer.js';

interface Kept {
  /** What it was signed for: the end it may not pass, and the scopes. */
  variant: string;
  jwt: string;
  /** When to sign a new one (ms), and when this one expires. */
  renewAt: number;
  expiresAt: number;
}

interface Entry {
  accountId: string;
  /** At most VARIANTS, the most recently made last. */
  kept: Kept[];
  /** The signings in flight, by variant, shared by the checks that wait for them. */
  pending: Map<string, Promise<string>>;
}

/** The fraction of a signed token's life it is handed out for before a new one is signed. */
const REUSE_FRACTION = 0.8;
/**
 * Signed tokens kept per token: during a grace period after a rotation, checks with the
 * current secret and with the previous one (whose signed tokens end with the grace period)
 * alternate without a signature each.
 */
const VARIANTS = 2;

export class PhantomTokens {
  hits = 0;
  private readonly lru: LRUCache<string, Entry>;
  private readonly now: () => number;

  constructor(
    private readonly signer: AccessTokenSigner,
    options: { max: number; now?: () => number },
  ) {
    this.lru = new LRUCache<string, Entry>(countBound(options.max));
    this.now = options.now ?? Date.now;
  }

  /**
   * The signed token for a token verified just now, which may not outlive `notAfter` (ms:
   * the token's expiry, or a previous secret's grace period's end; null: nothing), in a kept
   * one (synchronously) or a new one.
   */
  jwtFor(token: TokenRecord, notAfter: number | null): string | Promise<string> {
    const variant = `${notAfter ?? ''}\u0000${token.scopes.join(' ')}`;
    const now = this.now();
    let entry = this.lru.get(token.id);
    const kept = entry?.kept.find((k) => k.variant === variant);
    // Still fresh, or a new one would not last longer (the end caps both).
    if (
      kept !== undefined &&
      now < kept.expiresAt &&
      (now < kept.renewAt || this.signer.expiryFrom(now, notAfter) <= kept.expiresAt)
    ) {
      this.hits += 1;
      return kept.jwt;
    }
    if (entry === undefined) {
      entry = { accountId: token.accountId, kept: [], pending: new Map() };
      this.lru.set(token.id, entry);
    }
    const inFlight = entry.pending.get(variant);
    if (inFlight !== undefined) return inFlight;
    const target = entry;
    const promise = this.signer
      .sign({ tokenId: token.id, accountId: token.accountId, scopes: token.scopes, notAfter }, 'forward_auth')
      .then(
        (signed) => {
          // Kept only if the entry is still this token's (not forgotten meanwhile).
          if (this.lru.peek(token.id) === target && target.pending.get(variant) === promise) {
            const life = signed.expiresAt - signed.issuedAt;
            target.kept = [
              ...target.kept.filter((k) => k.variant !== variant),
              {
                variant,
                jwt: signed.jwt,
                renewAt: signed.issuedAt + Math.floor(life * REUSE_FRACTION),
                expiresAt: signed.expiresAt,
              },
            ].slice(-VARIANTS);
          }
          if (target.pending.get(variant) === promise) target.pending.delete(variant);
          return signed.jwt;
        },
        (err: unknown) => {
          if (target.pending.get(variant) === promise) target.pending.delete(variant);
          throw err;
        },
      );
    target.pending.set(variant, promise);
    return promise;
  }

  /** Forgets a token's signed token (it was deleted or changed). */
  forget(id: string): void {
    this.lru.delete(id);
  }

  /** Forgets the signed tokens of an account's tokens (its status changed, or it was deleted). */
  forgetAccount(accountId: string): void {
    for (const [id, entry] of this.lru.entries()) if (entry.accountId === accountId) this.lru.delete(id);
  }

  get size(): number {
    return this.lru.size;
  }
}
