// `npm run soak` itself, briefly (the long run is npm run test:reliability): it must
// pass on a healthy build, reporting errors, percentiles and heap after GC.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../helpers/sqlite.js';

describe('soak', () => {
  it('a short soak passes and reports', { timeout: 120_000 }, (t) => {
    const tmp = tempDir();
    t.after(() => tmp.remove());
    const json = tmp.file('soak.json');
    const root = path.resolve(import.meta.dirname, '../..');
    const res = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', 'scripts/soak.ts'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, SOAK_SECONDS: process.env.SOAK_SECONDS ?? '4', SOAK_JSON: json },
      timeout: 110_000,
    });
    assert.equal(res.status, 0, `${res.stdout}\n${res.stderr}`);
    assert.match(res.stdout, /soak: PASS/);
    const report = JSON.parse(readFileSync(json, 'utf8')) as { requests: number; unexpected: unknown[]; latency_ms: { p99: number }; heap_after_gc_mb: { growth: number } };
    assert.ok(report.requests > 100);
    assert.deepEqual(report.unexpected, []);
    assert.ok(report.latency_ms.p99 > 0);
    assert.equal(typeof report.heap_after_gc_mb.growth, 'number');
  });
});
