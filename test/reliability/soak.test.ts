// `npm run soak` itself on both backends: briefly in npm test, SOAK_SECONDS long in
// npm run test:reliability. It must pass on a healthy build, reporting errors,
// percentiles and heap after GC.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { backends } from '../helpers/backends.js';
import { tempDir } from '../helpers/sqlite.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 4);

for (const backend of backends())
  describe(`soak on ${backend.name}`, () => {
    it(`${SECONDS} s of mixed load pass and report`, { timeout: (SECONDS * 2 + 120) * 1000 }, async (t) => {
      const db = await backend.fresh(t);
      const tmp = tempDir();
      t.after(() => tmp.remove());
      const json = tmp.file('soak.json');
      const root = path.resolve(import.meta.dirname, '../..');
      const res = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', 'scripts/soak.ts'], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, SOAK_SECONDS: String(SECONDS), SOAK_JSON: json, SOAK_DATABASE_URL: db.url },
        timeout: (SECONDS * 2 + 110) * 1000,
      });
      assert.equal(res.status, 0, `${res.stdout}\n${res.stderr}`);
      assert.match(res.stdout, /soak: PASS/);
      const report = JSON.parse(readFileSync(json, 'utf8')) as {
        requests: number;
        unexpected: unknown[];
        latency_ms: { p99: number };
        heap_after_gc_mb: { growth: number };
      };
      assert.ok(report.requests > 100);
      assert.deepEqual(report.unexpected, []);
      assert.ok(report.latency_ms.p99 > 0);
      assert.equal(typeof report.heap_after_gc_mb.growth, 'number');
      process.stdout.write(
        `# soak ${backend.name}: ${res.stdout
          .split('\n')
          .filter((l) => /^(requests|latency|heap)/.test(l))
          .join(' | ')}\n`,
      );
    });
  });
