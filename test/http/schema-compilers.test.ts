// The app's schema compilers (src/http/validation.ts, src/http/serialization.ts), given to
// Fastify's schema controller: bodies strict, every route's schemas compiled on first use,
// and Fastify's own default Ajv compiler never loaded (a start's cost for nothing).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { build, mintToken } from '../helpers/app.js';

const loadedModules = (): string[] => Object.keys(createRequire(import.meta.url).cache);

describe('schema compilers', () => {
  it("validate bodies strictly through infracat's Ajv; Fastify's default compiler is never loaded", async (t) => {
    const { app } = await build(t);
    const admin = await mintToken(app, ['api-tokens:write', 'apps:read']);
    const wrongType = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: admin.auth,
      payload: { name: 123, scopes: ['apps:read'] },
    });
    assert.equal(wrongType.statusCode, 422, 'a number is not coerced into a name');
    assert.equal(wrongType.json<{ code: string }>().code, 'VALIDATION_FAILED');
    const ok = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: admin.auth,
      payload: { name: 'n', scopes: ['apps:read'] },
    });
    assert.equal(ok.statusCode, 201);
    assert.ok(
      loadedModules().some((m) => m.includes('/node_modules/fastify/')),
      'Fastify itself is in the module cache this test reads',
    );
    assert.deepEqual(
      loadedModules().filter((m) => m.includes('/node_modules/@fastify/ajv-compiler/')),
      [],
    );
  });
});
