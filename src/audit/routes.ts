// GET /api/v1/audit-events: the audit trail, newest first, as a bare array; further pages
// through a `Link: <...>; rel="next"` header, as GitHub's API pages (RFC 8288). Every
// response carries Cache-Control: no-store.
//
// The link is a path-absolute reference (`</api/v1/audit-events?...>`), which RFC 8288
// resolves against the request's own URL, like the Location of a 201 here: an absolute
// URL would need this service's public origin, and the Host and X-Forwarded-* headers
// that could tell it are the client's (or only as trustworthy as TRUST_PROXY), so a
// link built from them could point a client anywhere.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../errors.js';
import { noStoreAnswers } from '../http/no-store.js';
import { callerOf } from '../http/caller.js';
import { NEXT_PAGE } from '../http/response-headers.js';
import type { App } from '../http/types.js';
import { nextPageLink, readAuditQuery } from './query.js';
import { AuditEventList, AuditQuery, PER_PAGE_DEFAULT, PER_PAGE_MAX } from './schemas.js';
import type { AuditService } from './service.js';
import { auditEventView } from './views.js';

const PATH = '/api/v1/audit-events';

// The list's wire shape with the header that pages it, for the OpenAPI document.
const Page = Type.Array(AuditEventList.items, {
  description: 'Audit events, newest first',
  headers: { Link: NEXT_PAGE },
});

export interface AuditRouteOptions {
  audit: AuditService;
}

export function auditRoutes(app: App, { audit }: AuditRouteOptions): void {
  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    noStoreAnswers(api);

    api.get(
      PATH,
      {
        config: {
          auth: { scopes: ['audit-events:read'] },
          problems: {
            403:
              'The token lacks audit-events:read, or names another account in `account_id` without being ' +
              "the operator account's (INSUFFICIENT_SCOPE)",
          },
        },
        schema: {
          tags: ['audit'],
          operationId: 'listAuditEvents',
          summary: 'List audit events (who changed which token, account or catalog, when and from where)',
          description:
            "Newest first. A token sees its own account's trail; the operator account's tokens see every " +
            "account's and may filter one with `account_id`. To any other account, a change the operator made " +
            'shows actor type `operator` (id and name null) and null ip, user_agent and request_id. ' +
            'Filters combine, each served by an index; `since` is inclusive, `until` ' +
            `exclusive. At most \`per_page\` events (default ${PER_PAGE_DEFAULT}, at most ${PER_PAGE_MAX}); ` +
            'when more follow, a `Link: <...>; rel="next"` header names the next page (follow it as it is). ' +
            'Events are kept for AUDIT_RETENTION_DAYS. No event ever holds a secret.',
          querystring: AuditQuery,
          response: { 200: Page },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request.token);
        const read = readAuditQuery(request.query);
        if ('errors' in read) {
          const names = [...new Set(read.errors.map((e) => e.pointer.replace('querystring:/', '')))].join(', ');
          throw new AppError('INVALID_QUERY', `invalid query parameter ${names}`, { errors: read.errors });
        }
        const page = await audit.list(caller.accountId, read.query);
        if (page.next !== null) reply.header('link', nextPageLink(PATH, request.query, read.query.perPage, page.next));
        return page.events.map((e) => auditEventView(e, caller.accountId));
      },
    );
  });
}
