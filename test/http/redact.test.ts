// The redactor (src/redact.ts) on its own: what it replaces, in which encodings, and
// what it must leave alone; and the places that rely on it (error log lines, request ids,
// problem bodies).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { AppError, toProblem } from '../../src/errors.js';
import { createLogger, requestIdFrom } from '../../src/logging.js';
import { redactDeep, redactSecrets } from '../../src/redact.js';
import { generateSecret } from '../../src/tokens/format.js';
import { LogCapture } from '../helpers/app.js';
import { secretPieceIn } from '../helpers/secrets.js';

const SECRET = 'icat_4Rk9zQ2mXc7LpW1vB8nT5yH3jD6fG0sAeKq2Zx';
const RANDOM = SECRET.slice(5);
const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(2, '0');
const escapeAll = (s: string, upper = true) => [...s].map((c) => `%${upper ? hex(c).toUpperCase() : hex(c)}`).join('');

const showsPartOf = (text: string, secret: string): boolean => secretPieceIn(text, secret) !== undefined;

describe('redactSecrets', () => {
  it('replaces the secret part of a token-shaped string, whatever precedes it', () => {
    assert.equal(redactSecrets(`/p/${SECRET}`), '/p/icat_[REDACTED]');
    assert.equal(redactSecrets(`/p/x_${SECRET}`), '/p/x_icat_[REDACTED]');
    assert.equal(redactSecrets(`/p/ICAT_${RANDOM}`), '/p/ICAT_[REDACTED]');
    assert.equal(redactSecrets(`/p/acme_${RANDOM}?x=1`), '/p/acme_[REDACTED]?x=1');
    assert.equal(
      redactSecrets('/api/v1/api-tokens/tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H'),
      '/api/v1/api-tokens/tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H',
      'ids stay readable',
    );
  });

  it('sees through percent-encoding: one escape, every character, lower-case hex, escapes of escapes', () => {
    assert.equal(redactSecrets(`/api/v1/icat%5F${RANDOM}`), '/api/v1/icat%5F[REDACTED]');
    assert.equal(redactSecrets(`/api/v1/icat%5f${RANDOM}`), '/api/v1/icat%5f[REDACTED]');
    assert.equal(redactSecrets(`/api/v1/%69cat_${RANDOM}`), '/api/v1/%69cat_[REDACTED]');
    assert.equal(redactSecrets(`/a/${escapeAll(SECRET)}/b`), `/a/${escapeAll('icat_')}[REDACTED]/b`);
    assert.equal(redactSecrets(`/a/${escapeAll(SECRET, false)}`), `/a/${escapeAll('icat_', false)}[REDACTED]`);
    assert.equal(redactSecrets(`/a/icat%255F${RANDOM}`), '/a/icat%255F[REDACTED]');
    assert.equal(
      redactSecrets(`/a/icat_${RANDOM.slice(0, 20)}%${hex(RANDOM[20]!)}${RANDOM.slice(21)}`),
      '/a/icat_[REDACTED]',
      'one escape in the middle',
    );
    assert.equal(redactSecrets('/p?%74oken=abc&x=1'), '/p?%74oken=[REDACTED]&x=1');
    assert.equal(redactSecrets('/p?q=Bearer%20abc.def'), '/p?q=Bearer%20[REDACTED]');
    for (const text of ['/a%zz%', '%', '%%%41', '/plans?type=general%20x', '/%E2%9C%93'])
      assert.equal(redactSecrets(text), text);
  });

  it('bearer and basic credentials, credential parameters, URL passwords', () => {
    assert.equal(redactSecrets('Authorization: Bearer abc.def'), 'Authorization: Bearer [REDACTED]');
    assert.equal(redactSecrets('basic\tdXNlcjpwYXNz'), 'basic\t[REDACTED]');
    assert.equal(redactSecrets('"Basic dTpwYQ=="'), '"Basic [REDACTED]"');
    assert.equal(redactSecrets('/p?q=Bearer+abc.def&x=1'), '/p?q=Bearer+[REDACTED]&x=1', '+ is a space in a query');
    assert.equal(redactSecrets('/p?token=abc&key=k&ok=1'), '/p?token=[REDACTED]&key=[REDACTED]&ok=1');
    assert.equal(redactSecrets('/p?ACCESS_TOKEN=abc'), '/p?ACCESS_TOKEN=[REDACTED]');
    assert.equal(redactSecrets('http://user:pa55@host/x'), 'http://user:[REDACTED]@host/x');
    assert.equal(
      redactSecrets(`Bearer b ${SECRET} /p?x=1&password=p`),
      'Bearer [REDACTED] icat_[REDACTED] /p?x=1&password=[REDACTED]',
    );
  });

  it('leaves placeholders and prose alone (the 401 detail read "Authorization: Bearer [REDACTED]")', () => {
    for (const text of [
      'this endpoint needs a token: Authorization: Bearer <token>',
      'use the Authorization header with the Bearer scheme',
      'send a Bearer token',
      'Bearer realm',
      'Authorization: Basic <credentials>',
      '/api/v1/plans?type=general',
      'the token is not valid (unknown or deleted)',
    ]) {
      assert.equal(redactSecrets(text), text);
    }
  });

  it(
    'property: a secret with a random prefix, escaped at random inside random text, leaves no piece in any ' +
      'decoding',
    () => {
      const secret = fc.stringMatching(/^[a-z][a-z0-9]{1,15}$/).map((prefix) => generateSecret(prefix));
      const context = fc.string({ maxLength: 20, unit: fc.constantFrom(...'ab/?&=_%+ 09AF'.split('')) });
      const how = fc.array(fc.constantFrom(0, 0, 1, 2, 3), { minLength: 1, maxLength: 60 });
      fc.assert(
        fc.property(secret, how, context, context, (s, h, before, after) => {
          const encoded = [...s].map((c, i) => {
            const e = h[i % h.length]!;
            return e === 0 ? c : e === 1 ? `%${hex(c).toUpperCase()}` : e === 2 ? `%${hex(c)}` : `%25${hex(c)}`;
          });
          const text = `${before}${encoded.join('')}${after}`;
          const out = redactSecrets(text);
          assert.ok(!showsPartOf(out, s), `${text} -> ${out}`);
        }),
        { numRuns: 2000 },
      );
    },
  );
});

describe('what relies on it', () => {
  it('an error log line is redacted in every field, not only message and stack', () => {
    const logs = new LogCapture();
    const log = createLogger('info', logs);
    const err = Object.assign(new Error(`lookup failed for ${SECRET}`), {
      validation: [{ instancePath: '', params: { additionalProperty: SECRET } }],
      extras: { members: { [`icat%5F${RANDOM}`]: [`Bearer ${RANDOM}`] } },
    });
    log.error({ err }, 'unhandled error');
    assert.equal(logs.lines.length, 1);
    assert.ok(!showsPartOf(logs.text, SECRET), logs.text);
    assert.match(logs.text, /additionalProperty":"icat_\[REDACTED\]"/);
  });

  it('redactDeep copies what it is given, bounded', () => {
    const cyclic: Record<string, unknown> = { s: SECRET };
    cyclic.self = cyclic;
    const out = redactDeep<Record<string, unknown>>(cyclic);
    assert.equal(out.s, 'icat_[REDACTED]');
    assert.match(JSON.stringify(out), /\[OMITTED\]/);
    assert.equal(cyclic.s, SECRET, 'the input is not changed');
  });

  it('a secret-shaped X-Request-Id is not taken (it would be echoed and logged with every line)', () => {
    assert.notEqual(requestIdFrom(SECRET), SECRET);
    assert.notEqual(requestIdFrom(`x-${SECRET}`), `x-${SECRET}`);
    assert.equal(requestIdFrom('lb-7f3a.42:9_x'), 'lb-7f3a.42:9_x');
  });

  it('toProblem redacts every string in the problem and bounds its size', () => {
    const errors = Array.from({ length: 45 }, (_, i) => ({ pointer: `/${SECRET}/${i}`, detail: `is not ${SECRET}` }));
    const problem = toProblem(
      new AppError('VALIDATION_FAILED', `bad ${SECRET} ${'x'.repeat(600)}`, {
        errors,
        members: { valid: [{ hint: `icat%5F${RANDOM}` }] },
      }),
      `/api/v1/icat%5F${RANDOM}`,
      'req-1',
    );
    assert.ok(!showsPartOf(JSON.stringify(problem), SECRET), JSON.stringify(problem));
    assert.equal(problem.errors?.length, 20);
    assert.equal(problem.errors_omitted, 25);
    assert.equal(problem.detail.length, 500);
    assert.ok(problem.detail.startsWith('bad icat_[REDACTED] xxx'));
    assert.equal(problem.instance, '/api/v1/icat%5F[REDACTED]');
    // A cut never splits a surrogate pair.
    for (const pad of [497, 498, 499]) {
      const detail = toProblem(new AppError('BAD_REQUEST', `${'a'.repeat(pad)}${'\u{1f4a5}'.repeat(10)}`)).detail;
      assert.ok(
        detail.isWellFormed() && detail.length <= 500 && detail.endsWith('\u2026'),
        `${pad}: ${detail.slice(-4)}`,
      );
    }
    assert.equal(toProblem(new AppError('BAD_REQUEST', 'short')).errors_omitted, undefined);
  });
});
