// What a secret scanner looks for (docs/secret-scanning.md states it for people, and
// docs/gitleaks.toml for gitleaks; test/secret-scanning/pattern.test.ts holds them to
// src/tokens/format.ts), and `infracat tokens check`'s reading of one string.
import { checkSecret, CHECKSUM_CHARS, RANDOM_CHARS } from '../tokens/format.js';

/**
 * The regular expression of a secret with this TOKEN_PREFIX, in the syntax Go's RE2
 * (gitleaks), JavaScript and PCRE all read alike: the prefix, `_`, the random part and
 * the checksum, as group 1, bounded by word boundaries so that a longer run of letters
 * and digits (or one continuing with `_`) is not taken for a secret.
 */
export function secretRegexSource(prefix: string): string {
  return `\\b(${prefix}_[0-9A-Za-z]{${RANDOM_CHARS + CHECKSUM_CHARS}})\\b`;
}

/**
 * The least Shannon entropy (bits per character) a match must have to be reported by the
 * gitleaks rule: a placeholder like `icat_000...` has under 1; freshly minted secrets
 * have over 4 (the least of 200,000 measured was 4.2).
 */
export const MIN_ENTROPY = 3.5;

/** Why a string is not a well-formed secret, in words that quote none of it; null when it is one. */
export function malformation(secret: string, prefix: string): string | null {
  const length = prefix.length + 1 + RANDOM_CHARS + CHECKSUM_CHARS;
  if (!secret.startsWith(`${prefix}_`)) return `it does not start with ${prefix}_ (TOKEN_PREFIX is ${prefix})`;
  const bad = [...secret.slice(prefix.length + 1)].findIndex((c) => !/^[0-9A-Za-z]$/.test(c));
  if (bad >= 0) return `character ${prefix.length + 2 + bad} is not a letter A-Z, a-z or a digit`;
  if (secret.length !== length) return `it is ${secret.length} characters long; a secret is ${length}`;
  const check = checkSecret(secret, prefix);
  if (!check.ok) {
    return check.reason === 'checksum'
      ? `its last ${CHECKSUM_CHARS} characters are not the checksum of the rest ` +
          '(a typo, or not a secret of this service)'
      : 'it is not shaped like a secret';
  }
  return null;
}
