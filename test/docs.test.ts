// The repository stands alone: every link in README.md, docs/ and the folders' READMEs
// resolves to a file in this repository (and to a heading of it when it names one), every
// repository path a doc names exists, and the shell examples can be pasted into any shell
// (zsh included).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
const DOCS = [
  'README.md',
  'BENCHMARKS.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => path.basename(f) === 'README.md')
    .map((f) => `src/${f.split(path.sep).join('/')}`),
];

/** GitHub's anchor of a heading: lowercased, punctuation dropped, spaces to hyphens. */
function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  const anchors = new Set<string>();
  for (const m of text.matchAll(/^#{1,6} (.+)$/gm)) {
    anchors.add(
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}_\- ]/gu, '')
        .replace(/ /g, '-'),
    );
  }
  return anchors;
}

describe('documentation', () => {
  it('every relative link points at a file inside the repository', () => {
    for (const doc of DOCS) {
      const text = readFileSync(path.join(ROOT, doc), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        const file = path.resolve(path.dirname(path.join(ROOT, doc)), target.split('#')[0]!);
        assert.ok(file.startsWith(ROOT + path.sep), `${doc}: ${target} leaves the repository`);
        assert.ok(existsSync(file), `${doc}: ${target} does not exist`);
        const anchor = target.split('#')[1];
        if (anchor !== undefined && file.endsWith('.md')) {
          assert.ok(anchorsOf(file).has(anchor), `${doc}: ${target} names no heading of that file`);
        }
      }
      assert.doesNotMatch(text, /\.\.\/shared\//, `${doc} refers to files outside the repository`);
    }
  });

  it('every repository path a doc names in backticks exists (from the root, or from the doc)', () => {
    for (const doc of DOCS) {
      const text = readFileSync(path.join(ROOT, doc), 'utf8');
      for (const m of text.matchAll(/`((?:src|docs|test|scripts|web|deploy|catalog)\/[^`\s]*)`/g)) {
        const named = m[1]!;
        if (/[*<>{}]|\.\.\./.test(named)) continue; // a pattern, not a path
        const file = named.replace(/:\d+$/, '');
        assert.ok(
          existsSync(path.join(ROOT, file)) || existsSync(path.join(ROOT, path.dirname(doc), file)),
          `${doc}: ${named} does not exist`,
        );
      }
    }
  });

  it('links to the web go only to the service itself (localhost)', () => {
    for (const doc of DOCS) {
      const text = readFileSync(path.join(ROOT, doc), 'utf8');
      for (const m of text.matchAll(/\]\((https?:[^)\s]+)\)/g)) {
        assert.match(m[1]!, /^https?:\/\/(localhost|127\.0\.0\.1)[:/]/, `${doc}: ${m[1]} is outside the project`);
      }
    }
  });

  it('the contract is stated in docs/contract.md: the six core endpoints and the three secret rules', () => {
    const text = readFileSync(path.join(ROOT, 'docs/contract.md'), 'utf8');
    for (const endpoint of [
      'GET | `/api/v1/api-tokens`',
      'POST | `/api/v1/api-tokens`',
      'DELETE | `/api/v1/api-tokens/{id}`',
      'GET | `/api/v1/images`',
      'GET | `/api/v1/plans`',
      'GET | `/api/v1/regions`',
    ]) {
      assert.ok(text.includes(endpoint), endpoint);
    }
    assert.match(text, /only\*\* response\s+that ever shows it/);
    assert.match(text, /\*\*no\*\* `last_used_at`/);
  });

  it('curl examples with a query string are quoted, so zsh does not glob them', () => {
    for (const doc of DOCS) {
      const text = readFileSync(path.join(ROOT, doc), 'utf8');
      for (const line of text.split('\n')) {
        if (!/^\s*curl /.test(line)) continue;
        for (const m of line.matchAll(/(\S*localhost:\d+\S*\?\S*)/g)) {
          assert.match(m[1]!, /^['"]/, `${doc}: quote this URL: ${line.trim()}`);
        }
      }
    }
  });
});
