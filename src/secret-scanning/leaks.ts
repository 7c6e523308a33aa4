// A report's entries labelled as GitHub's partner program expects: each entry's string
// is revoked when it is a live secret of this service (true_positive), and answered by
// its SHA-256 only, so the answer never carries the secret.
import { hashSecret } from '../tokens/format.js';
import type { LeakReport } from '../tokens/service.js';
import type { LeakLabel, ReportedLeaks } from './schemas.js';

/** Revokes what `secret` opens (TokenService.revokeLeaked); true when something was revoked. */
export type Revoke = (secret: string, leak: LeakReport) => Promise<boolean>;

/**
 * The labels of a report's entries, in order. One string reported twice is revoked once
 * and labelled alike both times (the second sighting is as real as the first). Entries
 * are taken one after the other: a report is small, and each revocation is one transaction.
 */
export async function labelLeaks(report: ReportedLeaks, revoke: Revoke): Promise<LeakLabel[]> {
  const revoked = new Map<string, boolean>();
  const labels: LeakLabel[] = [];
  for (const entry of report) {
    const hash = hashSecret(entry.token);
    let hit = revoked.get(hash);
    if (hit === undefined) {
      hit = await revoke(entry.token, { type: entry.type, url: entry.url ?? null, source: entry.source ?? null });
      revoked.set(hash, hit);
    }
    labels.push({ token_hash: hash, token_type: entry.type, label: hit ? 'true_positive' : 'false_positive' });
  }
  return labels;
}
