// GET /api/v1/{images,plans,regions}[/{slug}]: bare arrays (or one object) straight from
// the in-memory snapshot's bytes, with a strong ETag per snapshot and 304 on a match.
// Storage is never touched here.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static, type TSchema } from 'typebox';
import { AppError } from '../errors.js';
import { matchesIfNoneMatch } from '../http/conditional.js';
import { refuseOverLimit } from '../http/rate-limit.js';
import { JSON_TYPE } from '../http/headers.js';
import { NoQuery } from '../http/no-query.js';
import { responseHeader } from '../http/response-headers.js';
import type { App } from '../http/types.js';
import type { Image, Kind, Plan, Region } from './model.js';
import { parseMoney } from './money.js';
import { ENTITIES, ImageQuery, PlanQuery, RegionQuery, SlugParams } from './schemas.js';
import type { CatalogService } from './service.js';
import { joinEntries, offeredIn, offeredInAny, regionsOffering, type CatalogSnapshot } from './snapshot.js';

export interface CatalogRouteOptions {
  catalog: CatalogService;
  access: 'public' | 'token';
  /** Cache-Control value; '' picks one from the access mode. */
  cacheControl: string;
}

function notAmount(text: string): never {
  const detail = `invalid query parameter max_price_monthly: ${JSON.stringify(text)} is not an amount such as 24.50`;
  throw new AppError('INVALID_QUERY', detail);
}

/** An entry a filter names (?region=, ?plan=, ?image=): live in this snapshot, or 400 naming parameter and value. */
function named<K extends Kind>(
  snap: CatalogSnapshot,
  kind: K,
  param: string,
  slug: string,
): CatalogSnapshot['entries'][K][number]['value'] {
  const item = snap.bySlug[kind].get(slug);
  if (item !== undefined && !item.gone) return item.value;
  const noun = kind.slice(0, -1);
  const why =
    item === undefined
      ? `is not ${noun === 'image' ? 'an' : 'a'} ${noun} of the catalog`
      : `was sunset on ${item.headers.sunset ?? 'its sunset_at'}`;
  const detail = `${JSON.stringify(slug)} ${why}`;
  throw new AppError('INVALID_QUERY', `invalid query parameter ${param}: ${detail}`, {
    errors: [{ pointer: `querystring:/${param}`, detail }],
  });
}

/**
 * A list's filter: `key`, its values normalised (what makes two queries ask for the same
 * list: `24` and `24.00`, `Ubuntu` and `ubuntu`, features in any order), names the list in
 * the snapshot's memo; `matches` is made only when the list is not kept there.
 */
interface Filter<T> {
  key: string;
  matches: () => (value: T) => boolean;
}

/**
 * Whether a plan is offered in a region that offers the image: the plans of the image's
 * regions, gathered once for the list (as much work as those regions' lists are long).
 */
function offeredWith(snap: CatalogSnapshot, image: string): (plan: string) => boolean {
  const regions = regionsOffering(snap, 'images', image);
  const plans = regions.size === 0 ? new Set<string>() : offeredInAny(snap, 'plans', regions);
  return plans === null ? () => true : (plan) => plans.has(plan);
}

const keyOf = (kind: Kind, values: unknown[]): string => JSON.stringify([kind, ...values]);

// Each kind's filters, typed by its query schema (which Fastify has already checked); null
// when the query sets none. Slugs named by a filter are resolved first, so a bad one is
// refused before anything else.
const FILTERS = {
  images: (f: Static<typeof ImageQuery>, snap: CatalogSnapshot): Filter<Image> | null => {
    if (f.distribution === undefined && f.type === undefined && f.region === undefined) return null;
    const dist = f.distribution?.toLowerCase();
    const region = f.region === undefined ? undefined : named(snap, 'regions', 'region', f.region).slug;
    return {
      key: keyOf('images', [dist, f.type, region]),
      matches: () => (i) =>
        (dist === undefined || i.distribution.toLowerCase() === dist) &&
        (f.type === undefined || i.type === f.type) &&
        (region === undefined || offeredIn(snap, 'images', region, i.slug)),
    };
  },
  plans: (f: Static<typeof PlanQuery>, snap: CatalogSnapshot): Filter<Plan> | null => {
    if (
      f.type === undefined &&
      f.min_vcpus === undefined &&
      f.min_memory_mb === undefined &&
      f.max_price_monthly === undefined &&
      f.region === undefined &&
      f.image === undefined
    )
      return null;
    const region = f.region === undefined ? undefined : named(snap, 'regions', 'region', f.region).slug;
    const image = f.image === undefined ? undefined : named(snap, 'images', 'image', f.image);
    // The schema's pattern is parseMoney's, so this converts exactly; were it ever to
    // refuse, the filter is refused rather than dropped.
    const maxPrice = f.max_price_monthly;
    const maxCents = maxPrice === undefined ? undefined : (parseMoney(maxPrice) ?? notAmount(maxPrice));
    // Digits only (the schema's pattern): Number() reads them exactly.
    const minVcpus = f.min_vcpus === undefined ? undefined : Number(f.min_vcpus);
    const minMemory = f.min_memory_mb === undefined ? undefined : Number(f.min_memory_mb);
    return {
      key: keyOf('plans', [f.type, minVcpus, minMemory, maxCents, region, image?.slug]),
      matches: () => {
        const withImage = image === undefined ? undefined : offeredWith(snap, image.slug);
        return (p) =>
          (f.type === undefined || p.type === f.type) &&
          (minVcpus === undefined || p.vcpus >= minVcpus) &&
          (minMemory === undefined || p.memory_mb >= minMemory) &&
          (maxCents === undefined || p.price_cents <= maxCents) &&
          (region === undefined || offeredIn(snap, 'plans', region, p.slug)) &&
          // Deployable together: the disk holds the image, somewhere both are offered.
          (image === undefined || (p.disk_gb >= image.min_disk_gb && withImage!(p.slug)));
      },
    };
  },
  regions: (f: Static<typeof RegionQuery>, snap: CatalogSnapshot): Filter<Region> | null => {
    if (f.available === undefined && f.feature === undefined && f.plan === undefined && f.image === undefined)
      return null;
    const plan = f.plan === undefined ? undefined : named(snap, 'plans', 'plan', f.plan).slug;
    const image = f.image === undefined ? undefined : named(snap, 'images', 'image', f.image).slug;
    const features = f.feature === undefined ? undefined : [...new Set(f.feature)].sort();
    return {
      key: keyOf('regions', [f.available, features, plan, image]),
      matches: () => (r) =>
        (f.available === undefined || r.available === f.available) &&
        (features ?? []).every((x) => r.features.includes(x)) &&
        (plan === undefined || offeredIn(snap, 'plans', r.slug, plan)) &&
        (image === undefined || offeredIn(snap, 'images', r.slug, image)),
    };
  },
} satisfies Record<Kind, (f: never, snap: CatalogSnapshot) => Filter<never> | null>;

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

const LIFECYCLE_NOTE =
  'A deprecated entry (the catalog file sets `deprecated_at`) answers, beside its unchanged body, ' +
  'the headers `Deprecation: @<unix seconds>` (RFC 9745), `Sunset: <HTTP-date>` (RFC 8594) when it has a ' +
  '`sunset_at`, and `Link: </api/v1/<kind>/<successor>>; rel="successor-version"` when it has a successor. ' +
  'Past `sunset_at` it leaves the lists and this GET answers 410 Gone with the same headers. ' +
  "Lists carry no such headers; `GET /api/v1/catalog` (catalog:read) shows every entry's dates at once.";

// The headers of the answers, for the OpenAPI document.
const VALIDATORS = {
  ETag: responseHeader('CatalogETag', 'The catalog version these bytes belong to (strong): send it in If-None-Match'),
  'Cache-Control': responseHeader(
    'CatalogCacheControl',
    'CATALOG_CACHE_CONTROL; by default `public, max-age=60` (`private, max-age=60` with CATALOG_ACCESS=token)',
  ),
};
const LIFECYCLE = {
  Deprecation: responseHeader('Deprecation', 'Only for a deprecated entry: `@<unix seconds>` (RFC 9745)'),
  Sunset: responseHeader('Sunset', 'Only for an entry with a sunset date: an HTTP-date (RFC 8594)'),
  Link: responseHeader(
    'SuccessorLink',
    'Only for an entry with a successor: `</api/v1/<kind>/<successor>>; rel="successor-version"`',
  ),
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
      const required = access === 'public' ? null : [`${kind}:read`];
      // revalidates: over the rate limit, a current If-None-Match still gets its 304.
      const config = {
        auth: required === null ? ('optional' as const) : { scopes: required },
        revalidates: true,
      };
      const notModified304 = (headers: Record<string, unknown>) => ({
        304: { type: 'null', description: 'Not modified: the If-None-Match ETag is current', headers },
      });
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
            response: { 200: Type.Array(item, { headers: VALIDATORS }), ...notModified304(VALIDATORS) },
          },
        },
        // Synchronous (nothing here waits): no promise between the request and its bytes.
        (request, reply) => {
          const snap = catalog.snapshot;
          // Read the filters first: a slug this snapshot does not hold is a 400 whatever the
          // client's copy (over the rate limit, the 429 comes first as for any refusal).
          let filter: Filter<unknown> | null;
          try {
            filter = FILTERS[kind](request.query as never, snap) as Filter<unknown> | null;
          } catch (err) {
            refuseOverLimit(request);
            throw err;
          }
          if (notModified(request, reply, snap.etag)) return;
          const entries: { value: unknown; json: string }[] = snap.entries[kind];
          // A filtered list is made once per snapshot and filter, then served from its memo.
          const body =
            filter === null
              ? snap.lists[kind]
              : snap.filtered.get(filter.key, () => {
                  const matches = filter.matches();
                  return joinEntries(entries.filter((e) => matches(e.value)));
                });
          // Pre-serialised bytes: the response schema documents their shape, and Fastify
          // passes Buffers through without serialising them again.
          void reply.type(JSON_TYPE).send(body);
        },
      );

      api.get(
        `/api/v1/${kind}/:slug`,
        {
          config: {
            ...config,
            problems: {
              410: {
                description:
                  `The ${noun} is past its sunset date (GONE); ` +
                  'the Deprecation, Sunset and successor Link headers come along',
                headers: LIFECYCLE,
              },
            },
          },
          schema: {
            tags: ['catalogs'],
            operationId: `get${noun[0]!.toUpperCase()}${noun.slice(1)}`,
            summary: `One ${noun} by slug`,
            description: LIFECYCLE_NOTE,
            params: SlugParams,
            querystring: NoQuery,
            response: {
              200: { ...item, headers: { ...VALIDATORS, ...LIFECYCLE } },
              ...notModified304({ ...VALIDATORS, ...LIFECYCLE }),
            },
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
