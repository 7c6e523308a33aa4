import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { LineSink } from '../src/logging-sink.js';

/** A sink writing to a fresh file; the file's path. */
function fileSink(t: TestContext, notice?: (m: string) => void): { sink: LineSink; file: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'infracat-sink-'));
  const file = path.join(dir, 'log');
  const fd = openSync(file, 'w');
  const sink = new LineSink(fd, notice);
  t.after(() => {
    sink.end();
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });
  return { sink, file };
}

const line = (i: number): string => `{"n":"${String(i).padStart(4, '0')}","pad":"${'x'.repeat(80)}"}\n`;

describe('log sink', () => {
  it('holds lines until 4 KiB are pending, then writes them all in order', (t) => {
    const { sink, file } = fileSink(t);
    let i = 0;
    while ((i + 1) * line(0).length < 4096) sink.write(line(i++));
    assert.equal(statSync(file).size, 0, 'under a batch: nothing written yet');
    sink.write(line(i++));
    const written = readFileSync(file, 'utf8');
    assert.equal(written, Array.from({ length: i }, (_, n) => line(n)).join(''));
  });

  it('writes the pending lines within 250 ms without another write, and on flush()', async (t) => {
    const { sink, file } = fileSink(t);
    sink.write(line(1));
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(readFileSync(file, 'utf8'), line(1));
    sink.write(line(2));
    let called = false;
    sink.flush(() => (called = true));
    assert.ok(called);
    assert.equal(readFileSync(file, 'utf8'), line(1) + line(2));
  });

  it('keeps multi-byte text and a line larger than its buffer intact', (t) => {
    const { sink, file } = fileSink(t);
    const wide = `{"msg":"${'\u00e9\u4e2d\u{1f600}'.repeat(20_000)}"}\n`;
    sink.write('{"msg":"caf\u00e9"}\n');
    sink.write(wide);
    sink.flushSync();
    assert.equal(readFileSync(file, 'utf8'), '{"msg":"caf\u00e9"}\n' + wide);
  });

  it('a descriptor that fails drops the pending lines, says so once, and never throws', (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'infracat-sink-'));
    const file = path.join(dir, 'log');
    writeFileSync(file, '');
    const fd = openSync(file, 'r'); // writing to it fails with EBADF
    const notices: string[] = [];
    const sink = new LineSink(fd, (m) => notices.push(m));
    t.after(() => {
      sink.end();
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    });
    for (let i = 0; i < 200; i++) assert.equal(sink.write(line(i)), true);
    sink.flushSync();
    assert.ok(sink.droppedBytes >= 200 * line(0).length - 4096, `dropped ${sink.droppedBytes}`);
    assert.equal(notices.length, 1, 'one notice a minute');
    assert.match(notices[0]!, /log lines could not be written to descriptor \d+ \(EBADF\)/);
    assert.equal(statSync(file).size, 0);
  });

  it('writes what is pending when the process exits', async () => {
    const { spawnSync } = await import('node:child_process');
    const program = `
      import { LineSink } from ${JSON.stringify(path.resolve('src/logging-sink.ts'))};
      const sink = new LineSink(1);
      sink.write('first\\n');
      sink.write('second\\n');
      process.exit(0);`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'first\nsecond\n');
  });
});
