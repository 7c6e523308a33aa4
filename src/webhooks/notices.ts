// The expiry notices of tokens: every NOTICE_SCAN_MS each instance sends the notices that
// fell due (notice-times.ts), in batches of an index range (api_tokens.next_notice_at),
// each batch in one transaction that moves each token's next notice time on and puts its
// message in the outbox; a notice another instance sent meanwhile is not sent again.
import { inBatches } from '../periodic.js';
import type { NoticeDecision, NoticeDue, TokenStore } from '../storage/types.js';
import { noticeMessage } from './events.js';
import { dueNotice } from './notice-times.js';

/** How often the due notices are sent: a token created inside a window gets its notice within this. */
export const NOTICE_SCAN_MS = 30_000;
// Tokens per transaction; a turn of the event loop between batches (src/periodic.ts).
const NOTICE_BATCH = 100;

/** What to do about one due notice at `now`. */
export function decideNotice(token: NoticeDue, now: number): NoticeDecision {
  if (token.expiresAt === null) return { nextNoticeAt: null, message: null };
  const { kind, next } = dueNotice(token.expiresAt, now);
  return {
    nextNoticeAt: next,
    message: kind === null ? null : noticeMessage({ ...token, expiresAt: token.expiresAt }, kind, now),
  };
}

/** Sends every notice due at the clock's now; resolves to how many tokens were due. */
export function sendDueNotices(store: TokenStore, now: () => number): Promise<number> {
  return inBatches(NOTICE_BATCH, () => {
    const at = now();
    return store.notices(at, NOTICE_BATCH, (token) => decideNotice(token, at));
  });
}
