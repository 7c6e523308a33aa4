// The token pattern for secret scanners, as shipped in docs/gitleaks.toml and stated in
// docs/secret-scanning.md: it matches every freshly minted secret, nothing in this
// repository, and no near miss. The rule is applied the way gitleaks applies it: the
// keywords first (case-insensitively), then the regex, then the entropy of the secret group.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { malformation, MIN_ENTROPY, secretRegexSource } from '../../src/secret-scanning/pattern.js';
import { CHECKSUM_CHARS, checkSecret, generateSecret, RANDOM_CHARS } from '../../src/tokens/format.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RULE_FILE = path.join(ROOT, 'docs/gitleaks.toml');

interface Rule {
  id: string;
  description: string;
  regex: string;
  secretGroup: number;
  entropy: number;
  keywords: string[];
}

/** The one [[rules]] table of the file: just enough TOML for it (strings, literal strings, numbers, arrays). */
function readRule(text: string): Rule {
  const tables = text.split(/^\[\[rules\]\]$/m);
  assert.equal(tables.length, 2, 'exactly one [[rules]] table');
  const values: Record<string, unknown> = {};
  for (const line of tables[1]!.split('\n')) {
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    const m = /^(\w+) = (.+)$/.exec(line);
    assert.ok(m, `a key = value line: ${line}`);
    const raw = m[2]!;
    const literal = /^'''(.*)'''$/.exec(raw);
    values[m[1]!] = literal !== null ? literal[1] : JSON.parse(raw);
  }
  return values as unknown as Rule;
}

function shannon(text: string): number {
  const counts = new Map<string, number>();
  for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) h -= (n / text.length) * Math.log2(n / text.length);
  return h;
}

/** What gitleaks reports in `text` by `rule`. */
function findings(rule: Rule, text: string): string[] {
  const lower = text.toLowerCase();
  if (!rule.keywords.some((k) => lower.includes(k.toLowerCase()))) return [];
  const out: string[] = [];
  for (const m of text.matchAll(new RegExp(rule.regex, 'g'))) {
    const secret = m[rule.secretGroup]!;
    if (shannon(secret) >= rule.entropy) out.push(secret);
  }
  return out;
}

const rule = readRule(readFileSync(RULE_FILE, 'utf8'));

describe('the token pattern for secret scanners', () => {
  it('docs/gitleaks.toml is the pattern of the default prefix, and docs/secret-scanning.md shows it as it is', () => {
    assert.equal(rule.id, 'infracat-api-token');
    assert.equal(rule.regex, secretRegexSource('icat'));
    assert.equal(rule.secretGroup, 1);
    assert.equal(rule.entropy, MIN_ENTROPY);
    assert.deepEqual(rule.keywords, ['icat_']);
    const doc = readFileSync(path.join(ROOT, 'docs/secret-scanning.md'), 'utf8');
    const rules = /```toml\n([\s\S]*?)```/.exec(doc);
    assert.ok(rules, 'the doc shows the rule');
    assert.ok(
      readFileSync(RULE_FILE, 'utf8').includes(rules[1]!),
      'the rule in the doc is the one in docs/gitleaks.toml',
    );
    assert.ok(doc.includes(`\`${secretRegexSource('icat')}\``), 'the doc states the regex');
  });

  it('(a) matches every freshly minted secret, whole, wherever it is pasted', () => {
    const contexts = [
      (s: string) => s,
      (s: string) => `export INFRACAT_TOKEN=${s}\n`,
      (s: string) => `{"token": "${s}"}`,
      (s: string) => `Authorization: Bearer ${s}`,
      (s: string) => `https://ci.example/hook?token=${s}&x=1`,
      (s: string) => `token: '${s}' # prod`,
      (s: string) => `<td>${s}</td>`,
    ];
    for (let i = 0; i < 5000; i++) {
      const secret = generateSecret('icat');
      const context = contexts[i % contexts.length]!;
      assert.deepEqual(findings(rule, context(secret)), [secret], context('<secret>'));
    }
  });

  it('with another TOKEN_PREFIX, the stated substitution matches that prefix only', () => {
    for (const prefix of ['acme', 'ab', 'z9', 'p1234567890abcde']) {
      const other: Rule = { ...rule, regex: secretRegexSource(prefix), keywords: [`${prefix}_`] };
      for (let i = 0; i < 200; i++) {
        const secret = generateSecret(prefix);
        assert.deepEqual(findings(other, ` ${secret} `), [secret]);
        assert.deepEqual(findings(rule, ` ${secret} `), [], 'the default rule does not take it');
      }
    }
  });

  it("(b) matches nothing in the repository's tracked files", () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
    assert.ok(files.length > 100, 'git ls-files lists the repository');
    let read = 0;
    for (const file of files) {
      let bytes: Buffer;
      try {
        bytes = readFileSync(path.join(ROOT, file));
      } catch {
        continue; // deleted in the work tree, not yet committed
      }
      if (bytes.includes(0)) continue; // binary (a screenshot)
      read += 1;
      assert.deepEqual(findings(rule, bytes.toString('utf8')), [], file);
    }
    assert.ok(read > 100);
  });

  it('(c) matches no near miss: wrong length, wrong prefix, characters outside base62, a longer run', () => {
    const secret = generateSecret('icat');
    const body = secret.slice('icat_'.length);
    const misses = [
      `icat_${body.slice(1)}`, // 35 characters
      `icat_${body}A`, // 37
      `icat_${body}_x`, // continues with _
      `xicat_${body}`, // the prefix inside a longer word
      `_icat_${body}`,
      `ICAT_${body}`, // not the prefix: prefixes are lowercase
      `icab_${body}`,
      `icat-${body}`,
      `icat__${body.slice(1)}`,
      `icat_${body.slice(0, 20)}-${body.slice(21)}`,
      `icat_${body.slice(0, 20)}+${body.slice(21)}`,
      `icat_${body.slice(0, 20)}\u00e9${body.slice(21)}`, // a letter outside ASCII
      `icat_${body.slice(0, 20)} ${body.slice(21)}`,
      `icat_${'0'.repeat(RANDOM_CHARS + CHECKSUM_CHARS)}`, // the shape, but a placeholder (no entropy)
      `icat_${'aB'.repeat((RANDOM_CHARS + CHECKSUM_CHARS) / 2)}`,
    ];
    for (const miss of misses) assert.deepEqual(findings(rule, ` ${miss} `), [], miss);
  });

  it('states the checksum rule: CRC32 of prefix, underscore and the random part, as 6 base62 digits', () => {
    // The rule as docs/secret-scanning.md states it, written out independently of format.ts.
    const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const crc32 = (text: string): number => {
      let crc = 0xffffffff;
      for (const byte of Buffer.from(text, 'ascii')) {
        crc ^= byte;
        for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
      }
      return (crc ^ 0xffffffff) >>> 0;
    };
    const base62 = (n: number): string => {
      let out = '';
      for (let i = 0; i < 6; i++, n = Math.floor(n / 62)) out = ALPHABET[n % 62]! + out;
      return out;
    };
    for (let i = 0; i < 2000; i++) {
      const secret = generateSecret('icat');
      const checked = secret.slice(0, -CHECKSUM_CHARS);
      assert.equal(base62(crc32(checked)), secret.slice(-CHECKSUM_CHARS));
    }
    // The doc's worked example is right, and is what format.ts accepts.
    const doc = readFileSync(path.join(ROOT, 'docs/secret-scanning.md'), 'utf8');
    const example =
      /`(icat_[0-9A-Za-z]{30})` has the CRC32\s+`0x([0-9a-f]{8})` \((\d+)\), which is `([0-9A-Za-z]{6})`/.exec(doc);
    assert.ok(example, 'the doc works an example');
    const [, checked, hex, decimal, check] = example;
    assert.equal(crc32(checked!), parseInt(hex!, 16));
    assert.equal(crc32(checked!), Number(decimal));
    assert.equal(base62(crc32(checked!)), check);
    assert.deepEqual(checkSecret(`${checked}${check}`, 'icat'), { ok: true });
  });

  it('tokens check reads a string offline: a reason for each way it can be wrong, never quoting it', () => {
    const secret = generateSecret('icat');
    assert.equal(malformation(secret, 'icat'), null);
    const body = secret.slice(5);
    const last = body.at(-1) === 'A' ? 'B' : 'A';
    const cases: [string, RegExp][] = [
      [`acme_${body}`, /^it does not start with icat_ \(TOKEN_PREFIX is icat\)$/],
      [`icat_${body.slice(1)}`, /^it is 40 characters long; a secret is 41$/],
      [`${secret}0`, /^it is 42 characters long; a secret is 41$/],
      [`icat_${body.slice(0, 9)}-${body.slice(10)}`, /^character 15 is not a letter A-Z, a-z or a digit$/],
      [`${secret.slice(0, -1)}${last}`, /^its last 6 characters are not the checksum of the rest/],
      ['', /does not start with icat_/],
    ];
    for (const [text, reason] of cases) {
      const why = malformation(text, 'icat');
      assert.ok(why !== null);
      assert.match(why, reason);
      assert.ok(!why.includes(body.slice(0, 8)), 'no piece of the string is quoted');
      assert.notDeepEqual(checkSecret(text, 'icat'), { ok: true });
    }
  });
});
