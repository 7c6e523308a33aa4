// Names that could pass for other names: a default-ignorable code point (Unicode's
// Default_Ignorable_Code_Point: shown as nothing, so `admin` + U+034F reads as `admin`)
// is refused anywhere in a token or account name, on creation and rename alike, with
// the code point named as U+XXXX; ordinary names in any script, with accents or emoji,
// are still taken as sent.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { validateName } from '../../src/tokens/rules.js';
import { backends } from '../helpers/backends.js';
import { build, mintToken } from '../helpers/app.js';

const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
const hex = (cp: number) => `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;

/** Every code point with the Default_Ignorable_Code_Point property, as the regex engine knows it. */
function ignorables(): number[] {
  const found: number[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (IGNORABLE.test(String.fromCodePoint(cp))) found.push(cp);
  }
  return found;
}

// The ones named in reports of look-alike names, and one of each kind: a combining
// grapheme joiner, Khmer inherent vowels, variation selectors (of the BMP, the
// supplementary plane, Mongolian), the Mongolian vowel separator, Hangul fillers, an
// unassigned code point of the property, tag-plane code points.
const SAMPLES = [
  0x034f, 0x17b4, 0x17b5, 0xe0100, 0xe01ef, 0x180e, 0x180b, 0x180f, 0xfe00, 0xfe0e, 0x115f, 0xffa0, 0x2065, 0xe0fff,
  0x1d173,
];

// Names in many scripts, with accents (precomposed and combining), CJK, emoji (with and
// without the emoji presentation selector, a keycap, skin tones), which must still pass.
const ORDINARY = [
  'déploiement',
  'cafe\u0301',
  'Ärger über Öl',
  '生产 トークン',
  '한국어 토큰',
  'نشر التطبيقات',
  'deploy 🚀',
  'ops ❤️',
  '☁️ sync',
  'release #️⃣1',
  '👍🏽 reviews',
  'Ἀθῆναι',
];

describe('validateName: default-ignorable code points', () => {
  it('every code point of the property is refused inside, at the end and at the start, named as U+XXXX', () => {
    const all = ignorables();
    assert.ok(all.length > 4000, `the property has ${all.length} code points`);
    for (const cp of SAMPLES) assert.ok(all.includes(cp), `${hex(cp)} is in the property`);
    for (const cp of all) {
      const c = String.fromCodePoint(cp);
      // After ❤ (an emoji drawn as text by default), U+FE0F is the emoji form: the next test.
      for (const raw of [`ad${c}min`, `admin${c}`, `${c}admin`, ...(cp === 0xfe0f ? [] : [`❤${c}`])]) {
        const checked = validateName(raw);
        assert.ok('error' in checked, `${hex(cp)} in ${JSON.stringify(raw)} was accepted`);
        assert.equal(checked.error.pointer, '/name');
        assert.ok(checked.error.detail.includes(hex(cp)), `${hex(cp)}: ${checked.error.detail}`);
      }
    }
  });

  it('U+FE0F only where it turns a text-style emoji into its emoji form; nowhere it shows nothing', () => {
    for (const name of ['ops ❤️', '☁️', '✈️ deploy', '#️⃣', 'a 1️⃣ b', '©️ 2027']) {
      assert.deepEqual(validateName(name), { name }, JSON.stringify(name));
    }
    for (const name of [
      'admin\ufe0f',
      'ad\ufe0fmin',
      '🚀\ufe0f',
      '❤\ufe0f\ufe0f',
      'admin1\ufe0f',
      '#\ufe0f',
      '\ufe0f❤',
      'ops ❤\ufe0e',
      '❤\u{e0100}',
    ]) {
      const checked = validateName(name);
      assert.ok('error' in checked, `${JSON.stringify(name)} was accepted`);
      assert.match(checked.error.detail, /U\+(FE0F|FE0E|E0100)/, JSON.stringify(name));
    }
  });

  it('ordinary names are taken as sent', () => {
    for (const name of ORDINARY) assert.deepEqual(validateName(name), { name }, JSON.stringify(name));
  });
});

for (const backend of backends()) {
  describe(`default-ignorable code points in names, over HTTP (${backend.name})`, () => {
    async function setup(t: TestContext) {
      const db = await backend.fresh(t);
      const built = await build(t, { store: db.open(), env: { DATABASE_URL: db.url } });
      const operator = await mintToken(built.app, ['accounts:write', 'api-tokens:write', 'apps:read'], 'operator');
      return { ...built, operator };
    }

    function assertRefused(res: { statusCode: number; body: string }, cp: number, what: string): void {
      assert.equal(res.statusCode, 422, `${what}: ${res.body}`);
      const body = JSON.parse(res.body) as { code: string; errors: { pointer: string; detail: string }[] };
      assert.equal(body.code, 'VALIDATION_FAILED');
      assert.equal(body.errors[0]!.pointer, '/name');
      assert.ok(body.errors[0]!.detail.includes(hex(cp)), `${what}: ${body.errors[0]!.detail}`);
      assert.ok(!res.body.includes(String.fromCodePoint(cp)), `${what}: the character itself is not echoed`);
    }

    it('tokens: refused on create and on rename; ordinary names are kept as sent', async (t) => {
      const { app, operator } = await setup(t);
      const create = (name: string) =>
        app.inject({
          method: 'POST',
          url: '/api/v1/api-tokens',
          headers: operator.auth,
          payload: { name, scopes: ['apps:read'] },
        });
      const target = (await create('target')).json<{ id: string }>().id;
      const rename = (name: string) =>
        app.inject({
          method: 'PATCH',
          url: `/api/v1/api-tokens/${target}`,
          headers: { ...operator.auth, 'content-type': 'application/merge-patch+json' },
          payload: JSON.stringify({ name }),
        });
      for (const cp of SAMPLES) {
        const c = String.fromCodePoint(cp);
        assertRefused(await create(`admin${c}`), cp, `create admin+${hex(cp)}`);
        assertRefused(await create(`ad${c}min`), cp, `create ad+${hex(cp)}+min`);
        assertRefused(await rename(`admin${c}`), cp, `rename admin+${hex(cp)}`);
      }
      const list = await app.inject({ method: 'GET', url: '/api/v1/api-tokens', headers: operator.auth });
      assert.deepEqual(
        list
          .json<{ name: string }[]>()
          .map((tok) => tok.name)
          .sort(),
        ['operator', 'target'],
        'nothing refused was stored or renamed',
      );
      for (const name of ORDINARY) {
        const created = await create(name);
        assert.equal(created.statusCode, 201, `${JSON.stringify(name)}: ${created.body}`);
        assert.equal(created.json<{ name: string }>().name, name);
        const renamed = await rename(name);
        assert.equal(renamed.statusCode, 200, `${JSON.stringify(name)}: ${renamed.body}`);
        assert.equal(renamed.json<{ name: string }>().name, name);
      }
    });

    it('accounts: refused on create and on rename; ordinary names are kept as sent', async (t) => {
      const { app, operator } = await setup(t);
      const create = (name: string) =>
        app.inject({ method: 'POST', url: '/api/v1/accounts', headers: operator.auth, payload: { name } });
      const target = (await create('Acme')).json<{ id: string }>().id;
      const rename = (name: string) =>
        app.inject({
          method: 'PATCH',
          url: `/api/v1/accounts/${target}`,
          headers: { ...operator.auth, 'content-type': 'application/merge-patch+json' },
          payload: JSON.stringify({ name }),
        });
      for (const cp of SAMPLES) {
        const c = String.fromCodePoint(cp);
        assertRefused(await create(`Acme${c}`), cp, `create Acme+${hex(cp)}`);
        assertRefused(await create(`Ac${c}me`), cp, `create Ac+${hex(cp)}+me`);
        assertRefused(await rename(`Acme${c}`), cp, `rename Acme+${hex(cp)}`);
      }
      const account = await app.inject({ method: 'GET', url: `/api/v1/accounts/${target}`, headers: operator.auth });
      assert.equal(account.json<{ name: string }>().name, 'Acme', 'not renamed');
      for (const name of ORDINARY) {
        const created = await create(name);
        assert.equal(created.statusCode, 201, `${JSON.stringify(name)}: ${created.body}`);
        assert.equal(created.json<{ name: string }>().name, name);
        const renamed = await rename(name);
        assert.equal(renamed.statusCode, 200, `${JSON.stringify(name)}: ${renamed.body}`);
        assert.equal(renamed.json<{ name: string }>().name, name);
      }
    });
  });
}
