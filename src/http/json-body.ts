// The JSON body parser. Fastify's built-in one reports every failure as "invalid JSON";
// this one tells a client where its JSON broke, and names prototype-poisoning keys
// (__proto__, constructor.prototype) as refused rather than malformed. The bytes are
// read as UTF-8 exactly or refused (body-encoding.ts), and so are strings that JSON
// escapes can make but Unicode cannot hold (a lone surrogate, "\ud800"): stored, they
// would come back as U+FFFD.
//
// The same parser reads application/merge-patch+json (RFC 7396) where a route accepts
// it (PATCH /api/v1/accounts/{id}: installMergePatchParser), with the same strictness.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest, RawServerDefault } from 'fastify';
import fp from 'fastify-plugin';
import sjson from 'secure-json-parse';
import { AppError } from '../errors.js';
import { readTextBody } from './body-encoding.js';
import type { App } from './types.js';

/** Whether any string (key or value) in a parsed JSON value is not well-formed Unicode. */
function hasLoneSurrogate(parsed: unknown): boolean {
  // A loop, not recursion: 16 KiB of '[' nest 16,000 deep.
  const pending: unknown[] = [parsed];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (!value.isWellFormed()) return true;
    } else if (Array.isArray(value)) for (const item of value as unknown[]) pending.push(item);
    else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (!k.isWellFormed()) return true;
        pending.push(v);
      }
    }
  }
  return false;
}

/** A \u escape of a surrogate (U+D800 to U+DFFF), in any case: what every lone surrogate in parsed JSON comes from. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

type Done = (err: Error | null, body?: unknown) => void;

/**
 * Parses a JSON body (bytes) exactly as described above, or answers the problem. Also called
 * by routes that must see the bytes first (the secret-scanning report, verified before parsing).
 */
export function parseJsonBody(request: FastifyRequest, body: Buffer, done: Done): void {
  let text: string;
  try {
    text = readTextBody(request, body, 'MALFORMED_JSON');
  } catch (err) {
    done(err as AppError, undefined);
    return;
  }
  if (text.trim() === '') {
    done(new AppError('MALFORMED_JSON', 'the body is empty but Content-Type says JSON'), undefined);
    return;
  }
  // The decoder dropped one byte order mark; secure-json-parse would silently drop another.
  if (text.charCodeAt(0) === 0xfeff) {
    done(
      new AppError('MALFORMED_JSON', 'the body is not valid JSON: it starts with a second byte order mark'),
      undefined,
    );
    return;
  }
  let parsed: unknown;
  try {
    parsed = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const message = (err as Error).message;
    if (/forbidden prototype property/i.test(message)) {
      done(
        new AppError('BAD_REQUEST', 'the body contains a forbidden property (__proto__ or constructor.prototype)'),
        undefined,
      );
    } else {
      // V8's messages quote at most a short excerpt and give a position: useful, not sensitive.
      done(new AppError('MALFORMED_JSON', `the body is not valid JSON: ${message.slice(0, 160)}`), undefined);
    }
    return;
  }
  // Only a \u escape of U+D800-U+DFFF can make one (the bytes were read as UTF-8 exactly):
  // without such text, the parsed value (a catalog document: a million values) is not walked.
  if (SURROGATE_ESCAPE.test(text) && hasLoneSurrogate(parsed)) {
    done(
      new AppError(
        'MALFORMED_JSON',
        'the body holds a \\u escape of a lone surrogate (U+D800 to U+DFFF), which is not a character',
      ),
      undefined,
    );
    return;
  }
  done(null, parsed);
}

/**
 * Counts the objects and arrays a JSON text (UTF-8 bytes, given a chunk at a time as they
 * arrive) opens, strings skipped. A route that takes large bodies of a known shape refuses,
 * before parsing or even holding it, a body that cannot be that shape: parsing millions of
 * `{}` holds an instance for seconds. (In UTF-8 every byte of a multi-byte character is
 * 0x80 or more: none is a quote, a backslash or a bracket.)
 */
export class JsonContainerCount {
  opened = 0;
  private inString = false;
  private escaped = false;

  /** Counts the containers `chunk` opens; returns the count so far. */
  add(chunk: Uint8Array): number {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === 0x5c) this.escaped = true;
        else if (b === 0x22) this.inString = false;
      } else if (b === 0x22) this.inString = true;
      else if (b === 0x7b || b === 0x5b) this.opened += 1;
    }
    return this.opened;
  }
}

export function installJsonBodyParser(app: App): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) =>
    parseJsonBody(request, body, done),
  );
}

/**
 * Also accepts application/merge-patch+json (RFC 7396) in `app` (an encapsulated plugin:
 * only its routes), read by the same JSON parser.
 */
export function installMergePatchParser(app: App): void {
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'buffer' }, (request, body: Buffer, done) =>
    parseJsonBody(request, body, done),
  );
}

/** The JSON body parser as the app's only one (see the top of this file). */
export const jsonBody = fp<Record<never, never>, RawServerDefault, TypeBoxTypeProvider>(
  (app, _options, done) => {
    installJsonBodyParser(app);
    done();
  },
  { name: 'infracat-json-body' },
);
