// The bundle as scripts/lib/bundle.mjs builds it (the same function the build and the tests'
// command use).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { bundleInto } from '../../scripts/lib/bundle.mjs';
import { tempDir } from '../helpers/sqlite.js';

describe('the bundle (scripts/lib/bundle.mjs)', () => {
  it('is ASCII: every byte below 0x80, so V8 holds its source at one byte a character', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const bytes = readFileSync(await bundleInto(tmp.file('cli')));
    assert.ok(bytes.length > 1_000_000, `the whole program, not a stub (${bytes.length} bytes)`);
    const at = bytes.findIndex((b) => b >= 0x80);
    assert.equal(
      at,
      -1,
      `a byte over 0x7f at offset ${at}: ${JSON.stringify(bytes.subarray(Math.max(0, at - 40), at + 40).toString())}`,
    );
  });
});
