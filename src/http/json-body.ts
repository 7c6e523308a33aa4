// The JSON body parser. Fastify's built-in one reports every failure as "invalid JSON";
// this one tells a client where its JSON broke, and names prototype-poisoning keys
// (__proto__, constructor.prototype) as refused rather than malformed.
import sjson from 'secure-json-parse';
import { AppError } from '../errors.js';
import type { App } from './types.js';

export function installJsonBodyParser(app: App): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(new AppError('MALFORMED_JSON', 'the body is empty but Content-Type says JSON'), undefined);
      return;
    }
    try {
      done(null, sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      const message = (err as Error).message;
      if (/forbidden prototype property/i.test(message)) {
        done(new AppError('BAD_REQUEST', 'the body contains a forbidden property (__proto__ or constructor.prototype)'), undefined);
      } else {
        // V8's messages quote at most a short excerpt and give a position: useful, not sensitive.
        done(new AppError('MALFORMED_JSON', `the body is not valid JSON: ${message.slice(0, 160)}`), undefined);
      }
    }
  });
}
