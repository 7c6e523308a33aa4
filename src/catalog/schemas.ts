// Wire shapes of the catalog endpoints (documentation and OpenAPI; the bytes themselves
// come pre-serialised from the snapshot) and their query filters.
import { Type } from 'typebox';

export const Image = Type.Object({
  slug: Type.String({ examples: ['ubuntu-24-04'] }),
  name: Type.String(),
  distribution: Type.String(),
  version: Type.String(),
  type: Type.String({ examples: ['base'] }),
  min_disk_gb: Type.Integer(),
});

export const Plan = Type.Object({
  id: Type.String({ description: 'Equal to slug' }),
  slug: Type.String({ examples: ['s-1vcpu-1gb'] }),
  vcpus: Type.Integer(),
  memory_mb: Type.Integer(),
  disk_gb: Type.Integer(),
  transfer_tb: Type.Integer(),
  type: Type.Union([Type.Literal('general'), Type.Literal('cpu-optimized'), Type.Literal('memory-optimized')]),
  price_monthly: Type.Number({ description: 'Monthly price, written with exactly two fraction digits (6.00)', examples: [6] }),
});

export const Region = Type.Object({
  slug: Type.String({ examples: ['nyc3'] }),
  name: Type.String(),
  available: Type.Boolean(),
  features: Type.Array(Type.String()),
});

const strict = { additionalProperties: false } as const;

// Whole numbers in a query are text with a pattern, converted in the route: typed as
// integers, Ajv's coercion would read them as JavaScript does (0x10 is 16, 1e3 is 1000,
// ' 5 ', '+5' and '5.0' are 5). Plain decimal digits, no sign, no leading zero.
const wholeNumber = (maxDigits: number, description: string, example: string) =>
  Type.String({ pattern: `^[1-9][0-9]{0,${maxDigits - 1}}$`, description: `${description}: a whole number from 1, in plain decimal digits`, examples: [example] });

export const ImageQuery = Type.Object(
  {
    distribution: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'Distribution name, case-insensitive' })),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
  },
  strict,
);

export const PlanQuery = Type.Object(
  {
    type: Type.Optional(Type.Union([Type.Literal('general'), Type.Literal('cpu-optimized'), Type.Literal('memory-optimized')])),
    min_vcpus: Type.Optional(wholeNumber(6, 'At least this many vCPUs', '4')),
    min_memory_mb: Type.Optional(wholeNumber(9, 'At least this much memory, in MB', '8192')),
    max_price_monthly: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}(\\.[0-9]{1,2})?$', description: 'e.g. 24 or 24.50' })),
  },
  strict,
);

export const RegionQuery = Type.Object(
  {
    available: Type.Optional(Type.Boolean()),
    feature: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 40 }), { maxItems: 10, description: 'Repeat to require several' })),
  },
  strict,
);

export const SlugParams = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 100 }) });
