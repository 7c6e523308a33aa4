// The wire shapes of catalog management over the API (src/catalog/manage-routes.ts),
// declared once: the diff (CatalogDiff of diff.ts as it is), a revision of the history,
// and the queries. The document itself is CatalogFile (schemas.ts), the file format.
import { numericText } from '../http/documented-as.js';
import { Type, type Static, type TSchema } from 'typebox';
import { AuditActor } from '../audit/schemas.js';
import { Timestamp } from '../tokens/schemas.js';
import type { CatalogDiff as DiffModel } from './diff.js';

const Value = Type.Unknown({
  description: 'The value as the catalog file shows it (prices as "6.00" strings, lists as arrays); null when absent',
});

export const FieldChange = Type.Object({
  field: Type.String({ examples: ['price_monthly'] }),
  from: Value,
  to: Value,
});

const perKind = <T extends TSchema>(item: T, description: string) =>
  Type.Object({ images: Type.Array(item), plans: Type.Array(item), regions: Type.Array(item) }, { description });

const Slug = Type.String({ examples: ['s-1vcpu-1gb'] });

export const CatalogDiff = Type.Object(
  {
    settings: Type.Array(FieldChange, { description: 'Catalog settings changed (currency, extra_image_types, ...)' }),
    added: perKind(Slug, 'Slugs of the entries added, per kind'),
    removed: perKind(Slug, 'Slugs of the entries removed, per kind'),
    changed: perKind(
      Type.Object({ slug: Slug, changes: Type.Array(FieldChange) }),
      'Entries changed, per kind, field by field (the file-only fields too)',
    ),
  },
  { description: 'What the document changes against the live catalog; entries are matched by slug' },
);
// The schema and the model must agree: this fails to compile if they drift apart.
export type CatalogDiffWire = Static<typeof CatalogDiff>;
const sameShape: (d: DiffModel) => CatalogDiffWire = (d) => d;
void sameShape;

const KindCounts = (what: string) =>
  Type.Object(
    {
      images: Type.Integer({ minimum: 0 }),
      plans: Type.Integer({ minimum: 0 }),
      regions: Type.Integer({ minimum: 0 }),
    },
    { description: `Entries ${what}, per kind` },
  );
const RevisionChanges = Type.Object({
  settings: Type.Integer({ minimum: 0, description: 'Catalog settings changed' }),
  added: KindCounts('added'),
  removed: KindCounts('removed'),
  changed: KindCounts('changed (any field)'),
});

export const CatalogRevision = Type.Object({
  version: Type.Integer({ minimum: 1, examples: [7] }),
  applied_at: Timestamp,
  applied_by: Type.Union([AuditActor, Type.Null()], {
    description: 'Who applied it (the audit actor); null for revisions applied before infracat recorded it',
  }),
  summary: Type.Union([Type.String(), Type.Null()], {
    description:
      'What it changed in one line, e.g. `2 added, 1 changed, 0 removed` or `rollback to version 3: ...`; ' +
      'null for revisions applied before infracat recorded it',
    examples: ['2 added, 1 changed, 0 removed'],
  }),
  changes: Type.Union([RevisionChanges, Type.Null()], {
    description:
      'What it changed, counted: settings changed, and entries added, removed and changed per kind; ' +
      'null for revisions applied before infracat recorded it',
  }),
});
export type CatalogRevision = Static<typeof CatalogRevision>;

export const REVISIONS_PER_PAGE_MAX = 100;

export const RevisionQuery = Type.Object(
  {
    per_page: Type.Optional(
      numericText(
        Type.String({
          pattern: `^(?:[1-9][0-9]?|${REVISIONS_PER_PAGE_MAX})$`,
          description: `Revisions per page: 1 to ${REVISIONS_PER_PAGE_MAX} (default ${REVISIONS_PER_PAGE_MAX})`,
          examples: ['20'],
        }),
        {
          type: 'integer',
          minimum: 1,
          maximum: REVISIONS_PER_PAGE_MAX,
          default: REVISIONS_PER_PAGE_MAX,
          examples: [20],
        },
      ),
    ),
    before: Type.Optional(
      numericText(
        Type.String({
          pattern: '^[1-9][0-9]{0,8}$',
          description: 'Only versions below this one (the cursor of the `Link: rel="next"` header)',
          examples: ['42'],
        }),
        { type: 'integer', minimum: 1, maximum: 999_999_999, examples: [42] },
      ),
    ),
  },
  { additionalProperties: false },
);

export const PutQuery = Type.Object(
  {
    allow_removals: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: '`true` allows a document that removes entries (409 CONFLICT otherwise)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const PutResult = Type.Object({
  version: Type.Integer({ description: 'The live version now (unchanged when the diff is empty)', examples: [8] }),
  diff: CatalogDiff,
});

export const DiffResult = Type.Object({
  base_version: Type.Integer({ description: 'The live version the diff is against', examples: [7] }),
  diff: CatalogDiff,
  removals_need_allow: Type.Boolean({
    description: 'Whether a PUT of this document needs `?allow_removals=true` (it removes entries)',
  }),
});

/** The catalog management shapes by their names in the OpenAPI document's components.schemas. */
export const CATALOG_MANAGE_SCHEMAS = {
  CatalogDiff,
  CatalogRevision,
  CatalogApplied: PutResult,
  CatalogDiffResult: DiffResult,
};
