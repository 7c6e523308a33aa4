import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { numbered } from '../../src/storage/postgres/placeholders.js';

describe('PostgreSQL placeholders', () => {
  it('numbers each ? in order, and leaves one inside a quoted literal or identifier alone', () => {
    assert.equal(numbered('SELECT a FROM t WHERE b = ? AND c > ?'), 'SELECT a FROM t WHERE b = $1 AND c > $2');
    assert.equal(
      numbered(`SELECT '?', "a?b", ? FROM t WHERE x = 'it''s ?' AND y = ?`),
      `SELECT '?', "a?b", $1 FROM t WHERE x = 'it''s ?' AND y = $2`,
    );
    assert.equal(numbered('SELECT 1'), 'SELECT 1');
  });

  it('outside quotes, n placeholders become $1..$n and nothing else changes', () => {
    const part = fc.stringMatching(/^[a-z0-9 =<>(),.*_]*$/);
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 12 }), (parts) => {
        const sql = parts.join('?');
        assert.equal(numbered(sql), parts.map((p, i) => (i === 0 ? p : `$${i}${p}`)).join(''));
      }),
    );
  });
});
