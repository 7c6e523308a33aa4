// Catalog management over the API: GET /api/v1/catalog (the document, ETag = its version),
// PUT /api/v1/catalog (replace it, If-Match required), POST /api/v1/catalog/diff (the
// PUT's dry run) and GET /api/v1/catalog/revisions (the history). The same rules as
// `infracat catalog apply`: validateCatalog, the diff, the removal guard, one optimistic
// insert. Every response carries Cache-Control: no-store.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Transform } from 'node:stream';
import type { FastifySchemaCompiler, preParsingHookHandler } from 'fastify';
import { Type } from 'typebox';
import { isOperatorAccount } from '../accounts/ids.js';
import { auditContext } from '../audit/context.js';
import { AppError, MAX_FIELD_ERRORS } from '../errors.js';
import { matchesIfNoneMatch, matchIfMatch } from '../http/conditional.js';
import { noStoreAnswers } from '../http/no-store.js';
import { NoQuery } from '../http/no-query.js';
import { JSON_TYPE } from '../http/headers.js';
import { JsonContainerCount } from '../http/json-body.js';
import { NEXT_PAGE, responseHeader } from '../http/response-headers.js';
import type { App } from '../http/types.js';
import { validatorCompiler } from '../http/validation.js';
import { isEmptyDiff, removedCount, type CatalogDiff as Diff } from './diff.js';
import {
  CatalogRevision,
  DiffResult,
  PutQuery,
  PutResult,
  RevisionQuery,
  REVISIONS_PER_PAGE_MAX,
} from './manage-schemas.js';
import { formatCatalog, validateCatalogInTurns } from './file.js';
import { KINDS, type Catalog } from './model.js';
import { CatalogFile, MAX_DOCUMENT_CONTAINERS } from './schemas.js';
import { revisionView } from './revision-view.js';
import type { CatalogService } from './service.js';

const PATH = '/api/v1/catalog';

/** The catalog document's version as its ETag. */
const CATALOG_VERSION = responseHeader(
  'CatalogVersion',
  'The version of the catalog document, e.g. `"7"`: send it as If-Match with a PUT, or as If-None-Match',
);
const tags = ['catalog management'];

// validateCatalog checks the document (every problem, each with a JSON pointer, as the
// CLI reports them): the body's schema is declared for the OpenAPI document only, not run
// twice. The query and headers are validated as everywhere else.
const documentOnly: FastifySchemaCompiler<unknown> = (route) =>
  route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route);

// A whole, valid document (one entry of each kind), for the OpenAPI document's example body.
const EXAMPLE_DOCUMENT = {
  currency: 'USD',
  images: [
    {
      slug: 'ubuntu-24-04',
      name: 'Ubuntu 24.04 LTS',
      distribution: 'Ubuntu',
      version: '24.04',
      type: 'base',
      min_disk_gb: 10,
    },
  ],
  plans: [
    {
      id: 's-1vcpu-1gb',
      slug: 's-1vcpu-1gb',
      vcpus: 1,
      memory_mb: 1024,
      disk_gb: 25,
      transfer_tb: 1,
      type: 'general',
      price_monthly: 6,
    },
  ],
  regions: [{ slug: 'nyc3', name: 'New York 3', available: true, features: ['backups', 'ipv6'] }],
};
const DocumentBody = { ...CatalogFile, examples: [EXAMPLE_DOCUMENT] };

const etagOf = (version: number): string => `"${version}"`;

export interface CatalogManageRouteOptions {
  catalog: CatalogService;
  /**
   * The body limit of the PUT and the diff (CATALOG_BODY_LIMIT_BYTES), above the app's
   * 16 KiB for every other body: a catalog document of 20,000 plans is about 5 MiB of JSON.
   * Only the operator account's catalog:write tokens get as far as reading a body (both
   * checks run before it is read); validation is linear in the document, a slice of entries
   * per event-loop turn, and stops after MAX_FIELD_ERRORS problems.
   */
  bodyLimit: number;
  /** The app's clock: which entries are already sunset (a successor must not be). */
  now: () => number;
}

/**
 * 403 unless the token belongs to the operator account: only it may change the catalog. A
 * preParsing hook: it runs after the onRequest hooks (authentication and the scope check)
 * and before the body is read, so that no other client makes an instance take in a body of
 * CATALOG_BODY_LIMIT_BYTES.
 */
const operatorOnly: preParsingHookHandler = (request, _reply, payload, done) => {
  const token = request.token;
  if (token !== null && !isOperatorAccount(token.accountId)) {
    done(new AppError('INSUFFICIENT_SCOPE', 'only tokens of the operator account may change the catalog'));
    return;
  }
  done(null, payload);
};

/**
 * The body as a catalog, or 422 with a JSON pointer per problem (validation stops after
 * MAX_FIELD_ERRORS of them, and says so with errors_truncated).
 */
async function readDocument(body: unknown, now: number): Promise<Catalog> {
  // A slice of entries per event-loop turn: the instance answers other requests meanwhile.
  const result = await validateCatalogInTurns(body, now);
  if (result.ok) return result.catalog;
  const n = result.problems.length;
  const count =
    result.more === true ? `${n} problem${n === 1 ? '' : 's'} and more` : `${n} problem${n === 1 ? '' : 's'}`;
  throw new AppError('VALIDATION_FAILED', `the catalog document has ${count}; see errors`, {
    errors: result.problems.map((p) => ({ pointer: p.pointer, detail: p.message })),
    errorsTruncated: result.more === true,
  });
}

function removalConflict(diff: Diff): AppError {
  const named = KINDS.filter((k) => diff.removed[k].length > 0)
    .map((k) => `${k} ${diff.removed[k].join(', ')}`)
    .join('; ');
  return new AppError(
    'CONFLICT',
    `this document removes entries (${named}); nothing applied. Repeat with ?allow_removals=true if that is intended`,
    { members: { removals: diff.removed } },
  );
}

const stale = (current: number) =>
  new AppError(
    'PRECONDITION_FAILED',
    `the catalog is at version ${current} (ETag ${etagOf(current)}): it changed since the one this document was ` +
      'made from; GET it again, review the diff and retry',
  );

// 413 (over the route's body limit) is documented from the route's bodyLimit, as for every route.
const DOCUMENT_PROBLEMS = {
  422:
    'The document breaks a catalog rule; `errors` has a JSON pointer into the document per problem ' +
    `(VALIDATION_FAILED). Validation stops after ${MAX_FIELD_ERRORS} problems: \`errors_truncated: true\` ` +
    'says more were cut',
};

/**
 * Refuses, as it arrives, a body that opens more objects and arrays than any catalog within
 * the caps holds: millions of `{}` fit in CATALOG_BODY_LIMIT_BYTES, and parsing them would
 * hold the instance for seconds. The rest of such a body is read and dropped, never held.
 */
const catalogShaped: preParsingHookHandler = (_request, _reply, payload, done) => {
  const count = new JsonContainerCount();
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, next) {
      if (count.add(chunk) <= MAX_DOCUMENT_CONTAINERS) {
        next(null, chunk);
        return;
      }
      payload.unpipe(counted);
      payload.resume();
      const detail =
        `opens more than ${MAX_DOCUMENT_CONTAINERS} objects and arrays: more than any catalog within the ` +
        'limits holds (one object per entry; see the caps of each list)';
      next(
        new AppError('VALIDATION_FAILED', `the catalog document ${detail}`, {
          errors: [{ pointer: '', detail }],
          errorsTruncated: true,
        }),
      );
    },
  });
  done(null, payload.pipe(counted));
};

export function catalogManageRoutes(app: App, { catalog, now, bodyLimit }: CatalogManageRouteOptions): void {
  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    noStoreAnswers(api);

    api.get(
      PATH,
      {
        config: { auth: { scopes: ['catalog:read'] } },
        schema: {
          tags,
          operationId: 'getCatalog',
          summary: 'The whole catalog document (the file format, as JSON)',
          description:
            'What `infracat catalog export --format json` writes: settings, images, plans and regions with the ' +
            'file-only fields (deprecation, what each region offers). `ETag` is its version: send it as ' +
            '`If-Match` with a PUT. `If-None-Match` answers 304 when unchanged.',
          querystring: NoQuery,
          response: {
            200: { ...CatalogFile, headers: { ETag: CATALOG_VERSION } },
            304: {
              type: 'null',
              description: 'Not modified (If-None-Match matched)',
              headers: { ETag: CATALOG_VERSION },
            } as const,
          },
        },
      },
      async (request, reply) => {
        const snap = catalog.snapshot;
        const etag = etagOf(snap.version);
        reply.header('etag', etag);
        // No body and no Content-Type, as the catalog reads' 304: `send(null)` would say application/json.
        if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send(undefined as never);
        // Already JSON text (prices with two decimals): sent as it is, not serialized again.
        return reply.type(JSON_TYPE).send(formatCatalog(snap.catalog, 'json') as never);
      },
    );

    api.put(
      PATH,
      {
        bodyLimit,
        validatorCompiler: documentOnly,
        // After authentication, before the body is read; then the body as it arrives.
        preParsing: [operatorOnly, catalogShaped],
        config: {
          auth: { scopes: ['catalog:write'] },
          problems: {
            ...DOCUMENT_PROBLEMS,
            403:
              "The token lacks catalog:write, or is not the operator account's (INSUFFICIENT_SCOPE); or the " +
              "token's previous secret, in its grace period after a rotation, was presented " +
              '(PREVIOUS_SECRET_READ_ONLY)',
            409: 'The document removes entries and `allow_removals=true` is absent; `removals` names them (CONFLICT)',
            412: 'The If-Match ETag is not the live version: the catalog changed meanwhile (PRECONDITION_FAILED)',
            428: 'No If-Match header (PRECONDITION_REQUIRED)',
          },
        },
        schema: {
          tags,
          operationId: 'replaceCatalog',
          summary: 'Replace the catalog document (a new revision)',
          description:
            'Optimistic concurrency: `If-Match` must carry the ETag of `GET /api/v1/catalog` (or `*`). The ' +
            'document is validated as `infracat catalog apply` does; a document that removes entries needs ' +
            '`?allow_removals=true`. 200 with the new version and the diff (an empty diff stores nothing and ' +
            'answers the live version). Every instance serves it within CATALOG_REFRESH_MS; audited as ' +
            '`catalog.applied`.',
          headers: Type.Object({
            'if-match': Type.Optional(Type.String({ description: 'The ETag the document was made from, or `*`' })),
          }),
          querystring: PutQuery,
          body: DocumentBody,
          response: {
            200: { ...PutResult, headers: { ETag: CATALOG_VERSION } },
          },
        },
      },
      async (request, reply) => {
        // The document first: its problems are worth knowing whatever the precondition.
        const next = await readDocument(request.body, now());
        const ifMatch = request.headers['if-match'];
        if (ifMatch === undefined)
          throw new AppError(
            'PRECONDITION_REQUIRED',
            'send If-Match with the ETag of the catalog this document was made from (GET /api/v1/catalog), or *',
          );
        const { diff, baseVersion } = await catalog.plan(next);
        const match = matchIfMatch(ifMatch, etagOf(baseVersion));
        if (match === 'malformed')
          throw new AppError('PRECONDITION_FAILED', 'If-Match is not * or a list of entity-tags such as "7"');
        if (match === 'no-match') throw stale(baseVersion);
        if (isEmptyDiff(diff)) {
          reply.header('etag', etagOf(baseVersion));
          return { version: baseVersion, diff };
        }
        if (removedCount(diff) > 0 && request.query.allow_removals !== 'true') throw removalConflict(diff);
        let version: number;
        try {
          version = await catalog.apply(next, baseVersion, auditContext(request));
        } catch (err) {
          // Another apply stored the next version between the check above and this insert.
          // Refreshed first, so that this instance serves the winner and the detail names its version.
          if (err instanceof AppError && err.code === 'CONFLICT') {
            await catalog.refresh();
            throw stale(catalog.snapshot.version);
          }
          throw err;
        }
        reply.header('etag', etagOf(version));
        return { version, diff };
      },
    );

    api.post(
      `${PATH}/diff`,
      {
        bodyLimit,
        validatorCompiler: documentOnly,
        // The PUT's dry run, for the PUT's users: after authentication, before the body is read.
        preParsing: [operatorOnly, catalogShaped],
        config: {
          auth: { scopes: ['catalog:write'] },
          problems: {
            ...DOCUMENT_PROBLEMS,
            403: "The token lacks catalog:write, or is not the operator account's (INSUFFICIENT_SCOPE)",
          },
        },
        schema: {
          tags,
          operationId: 'diffCatalog',
          summary: 'What a PUT of this document would change (nothing is stored)',
          description:
            'The dry run of `PUT /api/v1/catalog`, with the same scope (`catalog:write`, operator account only): ' +
            'the same validation (422 with JSON pointers), and the diff against the live version ' +
            '(`base_version`: send it as `If-Match: "<base_version>"` with the PUT).',
          body: DocumentBody,
          response: { 200: DiffResult },
        },
      },
      async (request) => {
        const { diff, baseVersion } = await catalog.plan(await readDocument(request.body, now()));
        return { base_version: baseVersion, diff, removals_need_allow: removedCount(diff) > 0 };
      },
    );

    api.get(
      `${PATH}/revisions`,
      {
        config: { auth: { scopes: ['catalog:read'] } },
        schema: {
          tags,
          operationId: 'listCatalogRevisions',
          summary: 'The catalog history: applied revisions, newest first',
          description:
            `At most \`per_page\` (default ${REVISIONS_PER_PAGE_MAX}); when more follow, a ` +
            '`Link: </api/v1/catalog/revisions?before=N&per_page=M>; rel="next"` header names the next page.',
          querystring: RevisionQuery,
          response: {
            200: Type.Array(CatalogRevision, {
              description: 'Revisions, newest first',
              headers: { Link: NEXT_PAGE },
            }),
          },
        },
      },
      async (request, reply) => {
        // Both are digits only (the schema's patterns): Number() reads them exactly.
        const perPage = request.query.per_page === undefined ? REVISIONS_PER_PAGE_MAX : Number(request.query.per_page);
        const before = request.query.before === undefined ? undefined : Number(request.query.before);
        // One more than the page: whether another page follows, without a count.
        const rows = await catalog.revisions(perPage + 1, before);
        const page = rows.slice(0, perPage);
        if (rows.length > perPage)
          reply.header(
            'link',
            `<${PATH}/revisions?before=${page[page.length - 1]!.version}&per_page=${perPage}>; rel="next"`,
          );
        // The route needs a token; were it ever read without one, that reader is no operator.
        return page.map((r) => revisionView(r, request.token?.accountId ?? null));
      },
    );
  });
}
