// The command line's durations (src/cli/duration.ts): what is read, and what is refused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDuration, parseDuration } from '../../src/cli/duration.js';

const DAY = 86_400;

describe('parseDuration', () => {
  it('reads plain seconds and one s, m, h or d unit', () => {
    for (const [text, seconds] of [
      ['0', 0],
      ['90', 90],
      ['30s', 30],
      ['15m', 900],
      ['1h', 3600],
      ['24h', DAY],
      ['1d', DAY],
      ['0d', 0],
      ['86400', DAY],
      ['007m', 420],
    ] as const) {
      assert.deepEqual(parseDuration(text, DAY), { seconds }, text);
    }
  });

  it('refuses anything else, naming the accepted forms, and anything over the limit', () => {
    for (const text of ['', 'h', '1.5h', '-1h', '+1h', '1h30m', '1H', '1w', ' 1h', '1h ', '1 h', '1e3', '0x10', '١h']) {
      const parsed = parseDuration(text, DAY);
      assert.ok('error' in parsed, text);
      assert.match(parsed.error, /not a duration: .*30s, 15m, 1h, 1d \(at most 1d\)/, text);
    }
    for (const text of ['86401', '2d', '25h', '1441m', '999999999999d']) {
      const parsed = parseDuration(text, DAY);
      assert.ok('error' in parsed, text);
      assert.match(parsed.error, /too long: at most 1d \(86400 seconds\)/, text);
    }
  });

  it('formats with the largest unit that divides the seconds whole', () => {
    assert.deepEqual([DAY, 5400, 3600, 90, 60, 0, 61].map(formatDuration), [
      '1d',
      '90m',
      '1h',
      '90s',
      '1m',
      '0s',
      '61s',
    ]);
  });
});
