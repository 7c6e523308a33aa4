// The catalog file format operators keep in version control (YAML or JSON; JSON is
// YAML too). Parsing collects every problem with its location instead of stopping at
// the first, so one `infracat catalog validate` run shows everything to fix.
//
//   currency: USD                      # ISO 4217, default USD
//   extra_image_types: [application]   # optional: allowed beyond `base`
//   extra_region_features: [gpu]       # optional: allowed beyond backups, ipv6, storage
//   images:  [{slug, name, distribution, version, type, min_disk_gb}]
//   plans:   [{id, slug, vcpus, memory_mb, disk_gb, transfer_tb, type, price_monthly}]
//   regions: [{slug, name, available, features}]
import { parseDocument, stringify } from 'yaml';
import {
  BUILTIN_IMAGE_TYPES,
  BUILTIN_REGION_FEATURES,
  centsToDecimal,
  DEFAULT_CURRENCY,
  imageSlug,
  PLAN_TYPES,
  planSlug,
  sortCatalog,
  type Catalog,
  type Image,
  type Plan,
  type PlanType,
  type Region,
} from './model.js';

export interface CatalogProblem {
  /** e.g. `plans[3] (s-1vcpu-1gb)`, or `file` for the whole document. */
  entry: string;
  /** The field, when the problem is one field's. */
  field?: string;
  message: string;
}

export type ParseResult = { ok: true; catalog: Catalog } | { ok: false; problems: CatalogProblem[] };

const IMAGE_FIELDS = ['slug', 'name', 'distribution', 'version', 'type', 'min_disk_gb'];
const PLAN_FIELDS = ['id', 'slug', 'vcpus', 'memory_mb', 'disk_gb', 'transfer_tb', 'type', 'price_monthly'];
const REGION_FIELDS = ['slug', 'name', 'available', 'features'];
const TOP_FIELDS = ['currency', 'extra_image_types', 'extra_region_features', 'images', 'plans', 'regions'];
const REGION_SLUG = /^[a-z]{2,6}[0-9]{0,2}$/;
const TOKEN_WORD = /^[a-z][a-z0-9-]{0,39}$/;

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads YAML or JSON text into a validated catalog, or every problem found. */
export function parseCatalogText(text: string): ParseResult {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // The whole message: with prettyErrors it ends in the offending line and a caret under the spot.
    return { ok: false, problems: doc.errors.map((e) => ({ entry: 'file', message: e.message.trimEnd() })) };
  }
  return validateCatalog(doc.toJS() as unknown);
}

/** Validates a parsed document (YAML/JSON data) against every catalog rule. */
export function validateCatalog(data: unknown): ParseResult {
  const problems: CatalogProblem[] = [];
  const at = (entry: string, field: string | undefined, message: string): void => {
    problems.push(field === undefined ? { entry, message } : { entry, field, message });
  };
  if (!isObject(data)) return { ok: false, problems: [{ entry: 'file', message: 'the catalog must be a mapping with images, plans and regions' }] };
  for (const key of Object.keys(data)) if (!TOP_FIELDS.includes(key)) at('file', key, 'unknown top-level field');

  let currency = DEFAULT_CURRENCY;
  if (data.currency !== undefined) {
    if (typeof data.currency === 'string' && /^[A-Z]{3}$/.test(data.currency)) currency = data.currency;
    else at('file', 'currency', 'must be a three-letter ISO 4217 code such as USD or EUR');
  }
  const words = (field: string): string[] => {
    const v = data[field];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || !TOKEN_WORD.test(x))) {
      at('file', field, 'must be a list of lowercase words (letters, digits, dashes)');
      return [];
    }
    return [...new Set(v as string[])];
  };
  const extraImageTypes = words('extra_image_types');
  const extraRegionFeatures = words('extra_region_features');
  const imageTypes = new Set([...BUILTIN_IMAGE_TYPES, ...extraImageTypes]);
  const regionFeatures = new Set([...BUILTIN_REGION_FEATURES, ...extraRegionFeatures]);

  const list = (field: string): Raw[] => {
    const v = data[field];
    if (v === undefined) {
      at('file', field, 'is required (use [] for none)');
      return [];
    }
    if (!Array.isArray(v)) {
      at('file', field, 'must be a list');
      return [];
    }
    return v.map((x, i) => {
      if (isObject(x)) return x;
      at(`${field}[${i}]`, undefined, 'must be a mapping');
      return {};
    });
  };

  const label = (kind: string, i: number, raw: Raw): string =>
    typeof raw.slug === 'string' && raw.slug !== '' ? `${kind}[${i}] (${raw.slug})` : `${kind}[${i}]`;

  function fields(entry: string, raw: Raw, allowed: string[]): void {
    for (const key of Object.keys(raw)) if (!allowed.includes(key)) at(entry, key, 'unknown field');
  }
  function text(entry: string, raw: Raw, field: string, max = 100): string {
    const v = raw[field];
    if (typeof v !== 'string' || v.trim() === '') {
      at(entry, field, v === undefined ? 'is required' : 'must be a non-empty string');
      return '';
    }
    if (v.length > max) at(entry, field, `must be at most ${max} characters`);
    if (/\p{Cc}/u.test(v)) at(entry, field, 'must not contain control characters');
    return v;
  }
  function positiveInt(entry: string, raw: Raw, field: string): number {
    const v = raw[field];
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
      at(entry, field, v === undefined ? 'is required' : 'must be a positive integer');
      return 0;
    }
    return v;
  }
  function unique(kind: string, entries: { slug: string; entry: string }[]): void {
    const seen = new Map<string, string>();
    for (const { slug, entry } of entries) {
      if (slug === '') continue;
      const first = seen.get(slug);
      if (first !== undefined) at(entry, 'slug', `duplicate ${kind} slug "${slug}" (first at ${first})`);
      else seen.set(slug, entry);
    }
  }

  const images: Image[] = list('images').map((raw, i) => {
    const entry = label('images', i, raw);
    fields(entry, raw, IMAGE_FIELDS);
    const distribution = text(entry, raw, 'distribution', 40);
    const version = typeof raw.version === 'number' ? String(raw.version) : text(entry, raw, 'version', 40);
    if (typeof raw.version === 'number') at(entry, 'version', `must be a string (quote it: "${String(raw.version)}"), so 24.10 is not read as 24.1`);
    const slug = text(entry, raw, 'slug', 80);
    if (distribution !== '' && version !== '' && slug !== '' && slug !== imageSlug(distribution, version)) {
      at(entry, 'slug', `must be "${imageSlug(distribution, version)}" (lowercase distribution-version)`);
    }
    const type = text(entry, raw, 'type', 40);
    if (type !== '' && !imageTypes.has(type)) at(entry, 'type', `must be one of ${[...imageTypes].join(', ')} (extend with extra_image_types)`);
    return { slug, name: text(entry, raw, 'name'), distribution, version, type, min_disk_gb: positiveInt(entry, raw, 'min_disk_gb') };
  });
  unique('image', images.map((img, i) => ({ slug: img.slug, entry: label('images', i, img as unknown as Raw) })));

  const plans: Plan[] = list('plans').map((raw, i) => {
    const entry = label('plans', i, raw);
    fields(entry, raw, PLAN_FIELDS);
    const slug = text(entry, raw, 'slug', 80);
    const id = text(entry, raw, 'id', 80);
    if (id !== '' && slug !== '' && id !== slug) at(entry, 'id', `must equal slug "${slug}"`);
    const vcpus = positiveInt(entry, raw, 'vcpus');
    const memory = positiveInt(entry, raw, 'memory_mb');
    if (memory > 0 && memory % 1024 !== 0) at(entry, 'memory_mb', 'must be a multiple of 1024 (the slug states memory in whole GB)');
    let type = '' as PlanType;
    if (typeof raw.type === 'string' && raw.type in PLAN_TYPES) type = raw.type as PlanType;
    else at(entry, 'type', `must be one of ${Object.keys(PLAN_TYPES).join(', ')}`);
    if (type !== ('' as PlanType) && vcpus > 0 && memory > 0 && memory % 1024 === 0 && slug !== '' && slug !== planSlug(type, vcpus, memory)) {
      at(entry, 'slug', `must be "${planSlug(type, vcpus, memory)}" (<${PLAN_TYPES[type]}>-<vcpus>vcpu-<memory GB>gb for type ${type})`);
    }
    return {
      id,
      slug,
      vcpus,
      memory_mb: memory,
      disk_gb: positiveInt(entry, raw, 'disk_gb'),
      transfer_tb: positiveInt(entry, raw, 'transfer_tb'),
      type,
      price_cents: price(entry, raw.price_monthly, (m) => at(entry, 'price_monthly', m)),
    };
  });
  unique('plan', plans.map((p, i) => ({ slug: p.slug, entry: label('plans', i, p as unknown as Raw) })));

  const regions: Region[] = list('regions').map((raw, i) => {
    const entry = label('regions', i, raw);
    fields(entry, raw, REGION_FIELDS);
    const slug = text(entry, raw, 'slug', 8);
    if (slug !== '' && !REGION_SLUG.test(slug)) at(entry, 'slug', 'must be a short lowercase code: 2-6 letters and up to 2 digits, e.g. nyc1');
    if (typeof raw.available !== 'boolean') at(entry, 'available', raw.available === undefined ? 'is required' : 'must be true or false');
    const features: string[] = [];
    if (!Array.isArray(raw.features)) at(entry, 'features', raw.features === undefined ? 'is required (use [] for none)' : 'must be a list');
    else {
      for (const f of raw.features as unknown[]) {
        if (typeof f !== 'string' || !regionFeatures.has(f)) at(entry, 'features', `unknown feature ${JSON.stringify(f)}; known: ${[...regionFeatures].join(', ')} (extend with extra_region_features)`);
        else if (features.includes(f)) at(entry, 'features', `duplicate feature "${f}"`);
        else features.push(f);
      }
    }
    return { slug, name: text(entry, raw, 'name'), available: raw.available === true, features };
  });
  unique('region', regions.map((r, i) => ({ slug: r.slug, entry: label('regions', i, r as unknown as Raw) })));

  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    catalog: sortCatalog({ currency, extra_image_types: extraImageTypes, extra_region_features: extraRegionFeatures, images, plans, regions }),
  };
}

function price(_entry: string, v: unknown, report: (m: string) => void): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    report(v === undefined ? 'is required' : 'must be a number such as 6.00');
    return 0;
  }
  if (v < 0) report('must be >= 0');
  const cents = Math.round(v * 100);
  if (Math.abs(cents - v * 100) > 1e-6) report(`must have at most two decimals (got ${v})`);
  return cents;
}

/** The file format of a catalog: what `catalog export` writes and `catalog apply` reads. */
export function catalogToFileData(c: Catalog): Record<string, unknown> {
  const out: Record<string, unknown> = { currency: c.currency };
  if (c.extra_image_types.length > 0) out.extra_image_types = c.extra_image_types;
  if (c.extra_region_features.length > 0) out.extra_region_features = c.extra_region_features;
  out.images = c.images.map((i) => ({ ...i }));
  out.plans = c.plans.map(({ price_cents, ...p }) => ({ ...p, price_monthly: price_cents / 100 }));
  out.regions = c.regions.map((r) => ({ ...r, features: [...r.features] }));
  return out;
}

export function formatCatalog(c: Catalog, format: 'yaml' | 'json'): string {
  const data = catalogToFileData(c);
  if (format === 'json') {
    // Prices keep two fraction digits in JSON text too, as on the wire.
    const json = JSON.stringify(data, (key, value: unknown) => (key === 'price_monthly' ? `\u0000${centsToDecimal(Math.round(Number(value) * 100))}` : value), 2);
    return `${json.replace(/"\\u0000([-0-9.]+)"/g, '$1')}\n`;
  }
  const yaml = stringify(data, { lineWidth: 0 });
  // YAML would write 6 for 6.00; keep the decimals an operator expects to read.
  return yaml.replace(/^(\s*price_monthly: )(-?\d+(?:\.\d+)?)$/gm, (_m, head: string, num: string) => `${head}${centsToDecimal(Math.round(Number(num) * 100))}`);
}
