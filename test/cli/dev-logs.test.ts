// `npm run dev` pipes the server's JSON log lines through pino-pretty (a devDependency):
// one short, readable line per event on a terminal. Production logs stay JSON.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');
const scripts = (
  JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts;

describe('development logs', () => {
  it('npm run dev turns JSON log lines into one readable line each', () => {
    const [server, pretty] = scripts.dev!.split('|').map((s) => s.trim());
    assert.match(server!, /src\/cli\/main\.ts serve$/);
    assert.match(pretty!, /^pino-pretty /);
    const line = JSON.stringify({
      level: 'info',
      time: '2026-11-23T22:30:05.123Z',
      service: 'infracat',
      request_id: 'r1',
      req: { method: 'GET', url: '/api/v1/plans' },
      res: { status_code: 200 },
      msg: 'request completed',
    });
    const res = spawnSync('sh', ['-c', pretty!], {
      cwd: ROOT,
      input: `${line}\n`,
      encoding: 'utf8',
      env: {
        ...process.env,
        PATH: `${path.join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
        TZ: 'UTC',
        NO_COLOR: '1',
      },
    });
    assert.equal(res.status, 0, res.stderr);
    const out = res.stdout.trim().split('\n');
    assert.equal(out.length, 1, 'one line per event');
    assert.match(out[0]!, /^\[22:30:05\.123\] INFO.*request completed/);
    assert.ok(out[0]!.length < line.length, 'shorter than the JSON line');
    assert.doesNotMatch(out[0]!, /"service"/, 'the constant service field is left out');
  });

  it('npm start serves the bundle with JSON logs (nothing pretty-printed in production)', () => {
    assert.equal(scripts.start, 'node dist/cli/main.js serve');
  });
});
