// When a token's expiry notices fall due: 7 days before its expiry (api_token.expiring,
// `within: 7d`), 1 day before (`within: 1d`), and at it (api_token.expired). The store
// keeps each token's next one in api_tokens.next_notice_at; the scan (notices.ts) sends
// what is due and moves it on. A token created or rotated inside a window is due at once:
// it gets that window's notice (only the latest: one created 12 hours before its expiry
// gets the 1-day notice, not both).
import type { NoticeKind } from './events.js';

const DAY = 86_400_000;
/** How long before the expiry each advance notice falls due, earliest first. */
export const NOTICE_LEADS_MS = [7 * DAY, DAY] as const;

/** The first notice time of a token expiring at `expiresAt` (null: it never expires, no notice). */
export function firstNoticeAt(expiresAt: number | null): number | null {
  return expiresAt === null ? null : expiresAt - NOTICE_LEADS_MS[0];
}

/**
 * The notice due at `now` for a token expiring at `expiresAt`, and when the one after it
 * falls due (null: none left).
 */
export function dueNotice(expiresAt: number, now: number): { kind: NoticeKind | null; next: number | null } {
  if (now >= expiresAt) return { kind: 'expired', next: null };
  if (now >= expiresAt - NOTICE_LEADS_MS[1]) return { kind: '1d', next: expiresAt };
  if (now >= expiresAt - NOTICE_LEADS_MS[0]) return { kind: '7d', next: expiresAt - NOTICE_LEADS_MS[1] };
  // Not due yet (a clock that stepped back since it was due): due at its first notice time.
  return { kind: null, next: expiresAt - NOTICE_LEADS_MS[0] };
}
