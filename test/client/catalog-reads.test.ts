// The availability filters and the lifecycle answers through a typed client generated
// from the served document: the query parameters exist in it (npm run typecheck), and
// each answer, 400 and 410 included, matches the schema it documents.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import createClient from 'openapi-fetch';
import type { paths } from '../../packages/client/src/openapi.js';
import { build } from '../helpers/app.js';

describe('catalog reads through openapi-fetch', () => {
  it('filters by region, plan and image; 400 for an unknown slug; 410 past sunset', async (t) => {
    let now = Date.parse('2027-01-01T00:00:00Z');
    const { app } = await build(t, { now: () => now });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const baseUrl = `http://127.0.0.1:${port}`;
    const doc = (await (await fetch(`${baseUrl}/api/v1/openapi.json`)).json()) as Record<string, unknown>;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema(doc, 'openapi');
    const check = (path: string, status: number, res: Response, body: unknown) => {
      const type = res.headers.get('content-type')!.split(';')[0]!;
      const p = (s: string) => s.replaceAll('~', '~0').replaceAll('/', '~1');
      const validate = ajv.compile({
        $ref: `openapi#/paths/${p(path)}/get/responses/${status}/content/${p(type)}/schema`,
      });
      assert.ok(validate(body), `${path} ${status}: ${ajv.errorsText(validate.errors)}`);
    };
    const client = createClient<paths>({ baseUrl });

    const plans = await client.GET('/api/v1/plans', { params: { query: { region: 'nyc1', type: 'general' } } });
    assert.equal(plans.response.status, 200);
    check('/api/v1/plans', 200, plans.response, plans.data);
    assert.ok(plans.data!.length > 0 && plans.data!.every((p) => p.type === 'general'));
    const fits = await client.GET('/api/v1/plans', { params: { query: { image: 'ubuntu-24-04' } } });
    check('/api/v1/plans', 200, fits.response, fits.data);
    const images = await client.GET('/api/v1/images', { params: { query: { region: 'syd1' } } });
    check('/api/v1/images', 200, images.response, images.data);
    const regions = await client.GET('/api/v1/regions', {
      params: { query: { plan: 's-1vcpu-1gb', image: 'ubuntu-26-04', available: true } },
    });
    check('/api/v1/regions', 200, regions.response, regions.data);
    assert.ok(regions.data!.every((r) => r.available));

    const unknown = await client.GET('/api/v1/plans', { params: { query: { region: 'mars1' } } });
    assert.equal(unknown.response.status, 400);
    check('/api/v1/plans', 400, unknown.response, unknown.error);

    const deprecated = await client.GET('/api/v1/images/{slug}', { params: { path: { slug: 'ubuntu-22-04' } } });
    assert.equal(deprecated.response.headers.get('link'), '</api/v1/images/ubuntu-24-04>; rel="successor-version"');
    check('/api/v1/images/{slug}', 200, deprecated.response, deprecated.data);
    now = Date.parse('2027-06-01T00:00:00Z');
    const gone = await client.GET('/api/v1/images/{slug}', { params: { path: { slug: 'ubuntu-22-04' } } });
    assert.equal(gone.response.status, 410);
    check('/api/v1/images/{slug}', 410, gone.response, gone.error);
  });
});
