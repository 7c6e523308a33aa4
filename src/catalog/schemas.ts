// The catalog, declared once. Each entity schema is its wire form (the spec's fields in
// the spec's order: the routes document it in OpenAPI, the snapshot writes its bytes from
// it) and, closed to unknown fields, its file form (what `catalog apply` validates). The
// in-memory types derive from the same schemas (forms.ts), and each rule's problem
// message sits beside it. Adding a field to an entity is adding it here.
import { numericText } from '../http/documented-as.js';
import { Type, type Static, type TObject, type TProperties, type TStringOptions } from 'typebox';
import { Money, MONEY_TEXT_PATTERN } from './money.js';
import { explained } from './problems.js';

// The catalog's own patterns, for any module that checks the same values.
/** A region slug: 2-6 lowercase letters and up to 2 digits (`nyc3`). */
export const REGION_SLUG_PATTERN = /^[a-z]{2,6}[0-9]{0,2}$/;
/** A lowercase word: an image type or a region feature (`extra_image_types`, `extra_region_features`). */
export const WORD_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;
/** An ISO 4217 currency code. */
export const CURRENCY_PATTERN = /^[A-Z]{3}$/;

export const DEFAULT_CURRENCY = 'USD';

// Caps on every list of a catalog document, above the largest catalogs it serves (the
// shipped one has 11 images, 15 plans, 10 regions; public clouds list tens of images and
// hundreds of plans in a few dozen regions; a platform with per-size and per-generation
// plans reaches 20,000). They bound the work of validating a document whatever it holds:
// one Ajv run over an entry looks at a bounded number of values.
/** The most entries a catalog document may list, per kind. */
export const MAX_ENTRIES = { images: 5000, plans: 25_000, regions: 1000 } as const;
/**
 * The most objects and arrays a catalog document within the caps holds: the document and
 * each entry are objects; the five lists of settings and entries and each region's
 * features, plans and images are arrays; nothing else nests.
 */
export const MAX_DOCUMENT_CONTAINERS =
  1 + MAX_ENTRIES.images + MAX_ENTRIES.plans + MAX_ENTRIES.regions + 5 + 3 * MAX_ENTRIES.regions;
/** The most features a region may list. */
export const MAX_REGION_FEATURES = 50;
/** The most words `extra_image_types` and `extra_region_features` may each list. */
export const MAX_EXTRA_WORDS = 100;

/** Free text: not blank, at most `maxLength` characters, no control characters (PostgreSQL cannot even store NUL). */
function Text(maxLength: number, options: TStringOptions = {}) {
  const schema = Type.String({
    minLength: 1,
    maxLength,
    pattern: '\\S',
    not: { type: 'string', pattern: '\\p{Cc}' },
    ...options,
  });
  return explained(schema, {
    default: 'must be a non-empty string',
    maxLength: `must be at most ${maxLength} characters`,
    not: 'must not contain control characters',
  });
}

const POSITIVE = 'must be a positive integer';
const PositiveInteger = () => explained(Type.Integer({ minimum: 1 }), POSITIVE);

const WORDS = 'must be a list of lowercase words (letters, digits, dashes)';
const Words = (description: string) =>
  explained(
    Type.Array(explained(Type.String({ pattern: WORD_PATTERN.source }), WORDS), {
      description,
      default: [],
      maxItems: MAX_EXTRA_WORDS,
    }),
    { default: WORDS, maxItems: `must list at most ${MAX_EXTRA_WORDS} words` },
  );

export const PlanType = Type.Union([
  Type.Literal('general'),
  Type.Literal('cpu-optimized'),
  Type.Literal('memory-optimized'),
]);

export const Image = Type.Object({
  slug: Text(80, { examples: ['ubuntu-24-04'] }),
  name: Text(100),
  distribution: Text(40),
  version: explained(Text(40), {
    type: (e) =>
      typeof e.data === 'number'
        ? `must be a string (quote it: "${e.data}"), so 24.10 is not read as 24.1`
        : 'must be a non-empty string',
  }),
  type: Text(40, { examples: ['base'] }),
  min_disk_gb: PositiveInteger(),
});

export const Plan = Type.Object({
  id: Text(80, { description: 'Equal to slug' }),
  slug: Text(80, { examples: ['s-1vcpu-1gb'] }),
  vcpus: PositiveInteger(),
  memory_mb: explained(Type.Integer({ minimum: 1, multipleOf: 1024 }), {
    default: POSITIVE,
    multipleOf: 'must be a multiple of 1024 (the slug states memory in whole GB)',
  }),
  disk_gb: PositiveInteger(),
  transfer_tb: PositiveInteger(),
  type: PlanType,
  price_monthly: Money('price_cents', {
    description:
      'Monthly price: a number with two fraction digits, written with exactly two (6.00, 19.99); ' +
      'a catalog file may write fewer (6), never more',
    examples: [6],
  }),
});

export const Region = Type.Object({
  slug: explained(
    Type.String({ pattern: REGION_SLUG_PATTERN.source, examples: ['nyc3'] }),
    'must be a short lowercase code: 2-6 letters and up to 2 digits, e.g. nyc1',
  ),
  name: Text(100),
  available: Type.Boolean(),
  features: explained(
    Type.Array(
      explained(Type.String(), (e) => `must list feature names, not ${JSON.stringify(e.data)}`),
      { uniqueItems: true, maxItems: MAX_REGION_FEATURES },
    ),
    {
      maxItems: `must list at most ${MAX_REGION_FEATURES} features`,
      uniqueItems: (e) => `duplicate feature ${JSON.stringify((e.data as unknown[])[e.params.j as number])}`,
    },
  ),
});

/** The catalog's entity lists, by the name of the list (and of its endpoint). */
export const ENTITIES = { images: Image, plans: Plan, regions: Region };
export type Kind = keyof typeof ENTITIES;

/** A moment in a catalog file: RFC 3339, checked against the calendar in file.ts. */
const Instant = (description: string) =>
  explained(
    Type.String({ maxLength: 64, description, examples: ['2027-01-31T00:00:00Z'] }),
    'must be an RFC 3339 timestamp, e.g. 2027-01-31T00:00:00Z',
  );

const SLUGS = 'must be a non-empty list of slugs (leave the field out to offer every one)';
const SlugList = (kind: 'plans' | 'images', description: string) =>
  explained(
    Type.Array(explained(Type.String({ minLength: 1, maxLength: 100 }), 'must be a slug'), {
      minItems: 1,
      maxItems: MAX_ENTRIES[kind],
      uniqueItems: true,
      description,
    }),
    {
      default: SLUGS,
      maxItems: `must list at most ${MAX_ENTRIES[kind]} slugs (as many as the catalog may hold ${kind})`,
      uniqueItems: (e) => `lists ${JSON.stringify((e.data as unknown[])[e.params.j as number])} twice`,
    },
  );

/**
 * What the catalog file may say of any entry beyond its wire fields: its way out. It
 * never reaches the entry's JSON (the spec's fields stay exact); single-item GETs carry
 * it in the Deprecation, Sunset and Link headers, and after sunset_at the entry is gone
 * (410). The rules relating these fields (order, successor) are in file.ts.
 */
export const Lifecycle = {
  deprecated_at: Type.Optional(
    Instant('When the entry is (or will be) deprecated: its single-item GET answers a Deprecation header'),
  ),
  sunset_at: Type.Optional(
    Instant('When the entry goes: it leaves the lists and its single-item GET answers 410 Gone'),
  ),
  successor: Type.Optional(Text(100, { description: 'The slug of the entry of the same kind that replaces it' })),
};

/** What a region offers (file only: the filters ?region=, ?plan=, ?image= read it). */
export const Offer = {
  plans: Type.Optional(SlugList('plans', 'The plans deployable in this region; left out: every plan')),
  images: Type.Optional(SlugList('images', 'The images deployable in this region; left out: every image')),
};

/**
 * The file form of an entity: its wire form plus the file-only fields, closed (a misspelt
 * field is reported, not dropped).
 */
const fileForm = <T extends TObject, E extends TProperties>(entity: T, extra: E) =>
  Type.Object({ ...(entity.properties as T['properties']), ...extra }, { additionalProperties: false });

/** Each entity as the catalog file (and memory, and storage) holds it. */
export const FILE_ENTITIES = {
  images: fileForm(Image, Lifecycle),
  plans: fileForm(Plan, Lifecycle),
  regions: fileForm(Region, { ...Offer, ...Lifecycle }),
};

/** What travels with the entities in a catalog file; absent ones take their defaults. */
export const CatalogSettings = Type.Object({
  currency: Type.Optional(
    explained(
      Type.String({ pattern: CURRENCY_PATTERN.source, default: DEFAULT_CURRENCY, description: 'ISO 4217' }),
      'must be a three-letter ISO 4217 code such as USD or EUR',
    ),
  ),
  extra_image_types: Type.Optional(Words('Image types allowed beyond the built-in ones')),
  extra_region_features: Type.Optional(Words('Region features allowed beyond the built-in ones')),
});
export type CatalogSettings = Required<Static<typeof CatalogSettings>>;

/** A list of a catalog file's entries, at most MAX_ENTRIES of them. */
const Entries = <K extends Kind>(kind: K) =>
  explained(
    Type.Array(FILE_ENTITIES[kind], {
      maxItems: MAX_ENTRIES[kind],
      description: `At most ${MAX_ENTRIES[kind]}`,
    }),
    { maxItems: `must list at most ${MAX_ENTRIES[kind]} ${kind}` },
  );

/** A catalog file (YAML or JSON): the settings and every entity list. */
export const CatalogFile = explained(
  Type.Object(
    {
      ...CatalogSettings.properties,
      images: Entries('images'),
      plans: Entries('plans'),
      regions: Entries('regions'),
    },
    { additionalProperties: false },
  ),
  {
    type: 'the catalog must be a mapping with images, plans and regions',
    additionalProperties: 'unknown top-level field',
  },
);

const strict = { additionalProperties: false } as const;

// Whole numbers in a query are text with a pattern, converted in the route: typed as
// integers, Ajv's coercion would read them as JavaScript does (0x10 is 16, 1e3 is 1000,
// ' 5 ', '+5' and '5.0' are 5). Plain decimal digits, no sign, no leading zero.
// The OpenAPI document states them as the integers they are (src/http/documented-as.ts).
const wholeNumber = (maxDigits: number, description: string, example: string) =>
  numericText(
    Type.String({
      pattern: `^[1-9][0-9]{0,${maxDigits - 1}}$`,
      description: `${description}: a whole number from 1, in plain decimal digits`,
      examples: [example],
    }),
    { type: 'integer', minimum: 1, maximum: 10 ** maxDigits - 1, examples: [Number(example)] },
  );

// A filter naming a catalog entry by slug (?region=, ?plan=, ?image=): any text here; the
// route refuses a slug the live catalog does not hold, naming parameter and value.
const SlugFilter = (description: string, example: string) =>
  Type.String({ minLength: 1, maxLength: 100, description, examples: [example] });

export const ImageQuery = Type.Object(
  {
    distribution: Type.Optional(
      Type.String({ minLength: 1, maxLength: 40, description: 'Distribution name, case-insensitive' }),
    ),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    region: Type.Optional(
      SlugFilter('Only images offered in this region (a region slug; unknown or sunset: 400)', 'fra1'),
    ),
  },
  strict,
);

export const PlanQuery = Type.Object(
  {
    type: Type.Optional(PlanType),
    min_vcpus: Type.Optional(wholeNumber(6, 'At least this many vCPUs', '4')),
    min_memory_mb: Type.Optional(wholeNumber(9, 'At least this much memory, in MB', '8192')),
    max_price_monthly: Type.Optional(
      numericText(
        Type.String({
          pattern: MONEY_TEXT_PATTERN.source,
          description: 'At most this monthly price: a number with at most two fraction digits, e.g. 24 or 24.50',
        }),
        { type: 'number', minimum: 0, maximum: 999_999_999.99, examples: [24.5] },
      ),
    ),
    region: Type.Optional(
      SlugFilter('Only plans offered in this region (a region slug; unknown or sunset: 400)', 'fra1'),
    ),
    image: Type.Optional(
      SlugFilter(
        "Only plans this image can be deployed on: disk_gb at least the image's min_disk_gb, " +
          'and offered in at least one region that offers the image (an image slug; unknown or sunset: 400)',
        'ubuntu-24-04',
      ),
    ),
  },
  strict,
);

export const RegionQuery = Type.Object(
  {
    available: Type.Optional(Type.Boolean()),
    feature: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 40 }), {
        maxItems: 10,
        description: 'Repeat to require several',
      }),
    ),
    plan: Type.Optional(
      SlugFilter('Only regions offering this plan (a plan slug; unknown or sunset: 400)', 's-2vcpu-4gb'),
    ),
    image: Type.Optional(
      SlugFilter('Only regions offering this image (an image slug; unknown or sunset: 400)', 'ubuntu-24-04'),
    ),
  },
  strict,
);

export const SlugParams = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 100 }) });

/** The catalog entities by their names in the OpenAPI document's components.schemas. */
export const CATALOG_SCHEMAS = {
  Image: ENTITIES.images,
  Plan: ENTITIES.plans,
  Region: ENTITIES.regions,
  CatalogDocument: CatalogFile,
};
