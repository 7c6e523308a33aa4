// The audit trail's query, as a client writes it (GET /api/v1/audit-events, `infracat
// audit list`) and as the domain reads it: timestamps to milliseconds, the page cursor to
// the event id it stands for, and back again for the next page's link. The schema
// (schemas.ts AuditQuery) has already checked each parameter's form; what it cannot say
// (a real date, a well-formed cursor, since before until) is checked here, and anything
// that cannot be read exactly is refused.
import type { FieldError } from '../errors.js';
import {
  CURSOR_ERROR,
  decodeCursor as decodeCursorText,
  encodeCursor as encodeCursorText,
  nextPageLink as linkTo,
} from '../paging.js';
import { ULID_PATTERN_SOURCE } from '../tokens/ids.js';
import { parseTimestamp } from '../tokens/rules.js';
import type { AuditAction } from './events.js';
import { PER_PAGE_DEFAULT, type AuditQuery } from './schemas.js';

const EVENT_ID_PATTERN = new RegExp(`^evt_${ULID_PATTERN_SOURCE}$`);

/** The domain's reading of a query: every field optional but the page size. */
export interface AuditListQuery {
  accountId?: string | undefined;
  action?: AuditAction | undefined;
  targetId?: string | undefined;
  /** occurred_at >= since (ms). */
  since?: number | undefined;
  /** occurred_at < until (ms). */
  until?: number | undefined;
  /** Only events older than this event id (the decoded cursor). */
  before?: string | undefined;
  perPage: number;
}

/**
 * The cursor of the page after the event `id`: opaque to clients (base64url of the id, so
 * nobody builds on its form), and only a position: the filters travel beside it, so a
 * crafted cursor can show nothing its holder could not page to anyway.
 */
export function encodeCursor(id: string): string {
  return encodeCursorText(id);
}

/** The event id a cursor stands for, or null when it is not one this service made. */
export function decodeCursor(cursor: string): string | null {
  return decodeCursorText(cursor, EVENT_ID_PATTERN);
}

/** The query, or the problem with each parameter that cannot be read (pointers as `querystring:/name`). */
export function readAuditQuery(query: AuditQuery): { query: AuditListQuery } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const instant = (name: 'since' | 'until'): number | undefined => {
    const text = query[name];
    if (text === undefined) return undefined;
    const parsed = parseTimestamp(text);
    if ('at' in parsed) return parsed.at;
    errors.push({ pointer: `querystring:/${name}`, detail: parsed.error });
    return undefined;
  };
  const since = instant('since');
  const until = instant('until');
  if (since !== undefined && until !== undefined && until <= since)
    errors.push({ pointer: 'querystring:/until', detail: 'must be after since (since is inclusive, until exclusive)' });
  let before: string | undefined;
  if (query.cursor !== undefined) {
    const id = decodeCursor(query.cursor);
    if (id === null) errors.push(CURSOR_ERROR);
    else before = id;
  }
  if (errors.length > 0) return { errors };
  return {
    query: {
      accountId: query.account_id,
      action: query.action,
      targetId: query.target_id,
      since,
      until,
      before,
      // The schema's pattern: 1-100 in plain digits, so Number() reads it exactly.
      perPage: query.per_page === undefined ? PER_PAGE_DEFAULT : Number(query.per_page),
    },
  };
}

/** The `Link` header naming the page after `lastId` of the trail at `path`, with this page's filters. */
export function nextPageLink(path: string, wire: AuditQuery, perPage: number, lastId: string): string {
  const { account_id, action, target_id, since, until } = wire;
  return linkTo(path, { account_id, action, target_id, since, until }, perPage, encodeCursor(lastId));
}
