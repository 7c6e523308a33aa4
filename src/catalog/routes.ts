// GET /api/v1/{images,plans,regions}[/{slug}]: bare arrays (or one object) straight from
// the in-memory snapshot's bytes, with a strong ETag per snapshot and 304 on a match.
// Storage is never touched here.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static, type TSchema } from 'typebox';
import { AppError } from '../errors.js';
import { matchesIfNoneMatch } from '../http/conditional.js';
import { refuseOverLimit } from '../http/rate-limit.js';
import type { App } from '../http/types.js';
import type { Image, Kind, Plan, Region } from './model.js';
import { parseMoney } from './money.js';
import { ENTITIES, ImageQuery, PlanQuery, RegionQuery, SlugParams } from './schemas.js';
import type { CatalogService } from './service.js';
import { joinEntries } from './snapshot.js';

export interface CatalogRouteOptions {
  catalog: CatalogService;
  access: 'public' | 'token';
  /** Cache-Control value; '' picks one from the access mode. */
  cacheControl: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';

function notAmount(text: string): never {
  const detail = `invalid query parameter max_price_monthly: ${JSON.stringify(text)} is not an amount such as 24.50`;
  throw new AppError('INVALID_QUERY', detail);
}

// Each kind's filters, typed by its query schema (which Fastify has already checked).
const PREDICATES = {
  images: (f: Static<typeof ImageQuery>) => {
    if (f.distribution === undefined && f.type === undefined) return null;
    const dist = f.distribution?.toLowerCase();
    return (i: Image) =>
      (dist === undefined || i.distribution.toLowerCase() === dist) && (f.type === undefined || i.type === f.type);
  },
  plans: (f: Static<typeof PlanQuery>) => {
    if (
      f.type === undefined &&
      f.min_vcpus === undefined &&
      f.min_memory_mb === undefined &&
      f.max_price_monthly === undefined
    )
      return null;
    // The schema's pattern is parseMoney's, so this converts exactly; were it ever to
    // refuse, the filter is refused rather than dropped.
    const maxPrice = f.max_price_monthly;
    const maxCents = maxPrice === undefined ? undefined : (parseMoney(maxPrice) ?? notAmount(maxPrice));
    // Digits only (the schema's pattern): Number() reads them exactly.
    const minVcpus = f.min_vcpus === undefined ? undefined : Number(f.min_vcpus);
    const minMemory = f.min_memory_mb === undefined ? undefined : Number(f.min_memory_mb);
    return (p: Plan) =>
      (f.type === undefined || p.type === f.type) &&
      (minVcpus === undefined || p.vcpus >= minVcpus) &&
      (minMemory === undefined || p.memory_mb >= minMemory) &&
      (maxCents === undefined || p.price_cents <= maxCents);
  },
  regions: (f: Static<typeof RegionQuery>) => {
    if (f.available === undefined && f.feature === undefined) return null;
    return (r: Region) =>
      (f.available === undefined || r.available === f.available) &&
      (f.feature ?? []).every((x) => r.features.includes(x));
  },
} satisfies Record<Kind, (f: never) => ((value: never) => boolean) | null>;

const SCHEMAS: Record<Kind, { item: TSchema; query: TSchema; noun: string }> = {
  images: { item: ENTITIES.images, query: ImageQuery, noun: 'image' },
  plans: { item: ENTITIES.plans, query: PlanQuery, noun: 'plan' },
  regions: { item: ENTITIES.regions, query: RegionQuery, noun: 'region' },
};

const ORDER_NOTES: Record<Kind, string> = {
  images:
    'Ordered by distribution (A-Z), newest version first. Served from memory with a strong ETag per catalog version.',
  plans:
    'Ordered by monthly price, then vCPUs, memory and slug. ' +
    '`price_monthly` is written with exactly two decimals, ' +
    'in the catalog currency (USD unless the operator set another).',
  regions: 'Ordered by slug.',
};

export function catalogRoutes(app: App, options: CatalogRouteOptions): void {
  const { catalog, access } = options;
  const cacheControl =
    options.cacheControl !== '' ? options.cacheControl : `${access === 'public' ? 'public' : 'private'}, max-age=60`;

  /**
   * Answers 304 and returns true when the client's copy is current; otherwise sets the
   * validators and returns false, unless the request is over the rate limit (then only a
   * revalidation is answered: this throws its 429).
   */
  function notModified(request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
    const current = matchesIfNoneMatch(request.headers['if-none-match'], etag);
    if (!current) refuseOverLimit(request);
    reply.header('etag', etag).header('cache-control', cacheControl);
    if (!current) return false;
    void reply.code(304).send();
    return true;
  }

  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    for (const kind of ['images', 'plans', 'regions'] as const) {
      const { item, query, noun } = SCHEMAS[kind];
      // revalidates: over the rate limit, a current If-None-Match still gets its 304.
      const config = {
        auth: access === 'public' ? ('optional' as const) : { scopes: [`${kind}:read`] },
        revalidates: true,
      };

      const notModifiedDoc = {
        304: { type: 'null', description: 'Not modified: the If-None-Match ETag is current' },
      } as const;
      api.get(
        `/api/v1/${kind}`,
        {
          config,
          schema: {
            tags: ['catalogs'],
            operationId: `list${noun[0]!.toUpperCase()}${noun.slice(1)}s`,
            summary: `List ${kind} (a bare array, in the documented order)`,
            description: ORDER_NOTES[kind],
            querystring: query,
            response: { 200: Type.Array(item), ...notModifiedDoc },
          },
        },
        // Synchronous (nothing here waits): no promise between the request and its bytes.
        (request, reply) => {
          const snap = catalog.snapshot;
          if (notModified(request, reply, snap.etag)) return;
          const predicate = PREDICATES[kind](request.query as never) as ((v: unknown) => boolean) | null;
          const entries: { value: unknown; json: string }[] = snap.entries[kind];
          const body = predicate === null ? snap.lists[kind] : joinEntries(entries.filter((e) => predicate(e.value)));
          // Pre-serialised bytes: the response schema documents their shape, and Fastify
          // passes Buffers through without serialising them again.
          void reply.type(JSON_TYPE).send(body as never);
        },
      );

      api.get(
        `/api/v1/${kind}/:slug`,
        {
          config,
          schema: {
            tags: ['catalogs'],
            operationId: `get${noun[0]!.toUpperCase()}${noun.slice(1)}`,
            summary: `One ${noun} by slug`,
            params: SlugParams,
            response: { 200: item, ...notModifiedDoc },
          },
        },
        (request, reply) => {
          const snap = catalog.snapshot;
          const item = snap.bySlug[kind].get(request.params.slug);
          if (item === undefined) {
            refuseOverLimit(request);
            throw new AppError('NOT_FOUND', `no ${noun} with slug ${request.params.slug}`);
          }
          if (item.gone) {
            refuseOverLimit(request);
            throw new AppError('GONE', `the ${noun} ${request.params.slug} was sunset on ${item.headers.sunset}`, {
              headers: item.headers,
            });
          }
          // Deprecation, Sunset, Link: also on a 304 (they describe the entry, not the bytes).
          void reply.headers(item.headers);
          if (notModified(request, reply, snap.etag)) return;
          void reply.type(JSON_TYPE).send(item.body);
        },
      );
    }
  });
}
