// The bundle as scripts/lib/bundle.mjs builds it (the same function the build and the tests'
// command use), checked for what the launcher relies on: it reads the bundle as Latin-1
// (scripts/launcher.cjs), which reads the same text as UTF-8 only for ASCII.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { bundleInto } from '../../scripts/lib/bundle.mjs';
import { tempDir } from '../helpers/sqlite.js';

describe('the bundle (scripts/lib/bundle.mjs)', () => {
  it('is ASCII: every byte below 0x80, so the launcher reads it exactly as Latin-1', async (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const launcher = await bundleInto(path.join(tmp.dir, 'cli'));
    const bytes = readFileSync(path.join(path.dirname(launcher), 'infracat.cjs'));
    assert.ok(bytes.length > 1_000_000, `the whole program, not a stub (${bytes.length} bytes)`);
    const at = bytes.findIndex((b) => b >= 0x80);
    assert.equal(
      at,
      -1,
      `a byte over 0x7f at offset ${at}: ${JSON.stringify(bytes.subarray(Math.max(0, at - 40), at + 40).toString())}`,
    );
    // Its text as the launcher reads it is the text as UTF-8 reads it.
    assert.equal(bytes.toString('latin1'), bytes.toString('utf8'));
  });
});
