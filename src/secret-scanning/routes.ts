// POST /api/v1/secret-scanning/leaks: the receiving end of GitHub's secret scanning
// partner program. GitHub posts the strings matching this service's token pattern that
// it found in public places; every one that is a live secret is revoked at once.
// Registered only when SECRET_SCANNING_KEYS_FILE is set (app.ts); otherwise the path is
// the usual 404.
//
// Nothing of a report is interpreted before its signature holds (fail closed):
// 1. onRequest: the rate limit (anonymous, per address: every report counts, signed or
//    not, before any work), then the signature headers: present once each, readable, and
//    naming a configured key; otherwise 401 before the body is read.
// 2. The body is read as bytes, whatever its Content-Type, within the app's body limit
//    (413 past it).
// 3. preValidation: the signature is checked over exactly those bytes (401), and only
//    then are they read as JSON, as strictly as every other body (json-body.ts: 415 for
//    another media type or charset, 400 for bytes that are not UTF-8 JSON).
// 4. The schema (422), then the handler revokes and labels.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { KeyObject } from 'node:crypto';
import { AppError } from '../errors.js';
import { parseJsonBody } from '../http/json-body.js';
import { noStoreAnswers } from '../http/no-store.js';
import { responseHeader } from '../http/response-headers.js';
import type { App } from '../http/types.js';
import { auditContext, type Actor } from '../audit/context.js';
import type { TokenService } from '../tokens/service.js';
import type { KeyRing } from './keys.js';
import { labelLeaks } from './leaks.js';
import { LeakLabels, ReportedLeaks, MAX_REPORT_ENTRIES } from './schemas.js';
import { readSignatureHeaders, SIGNATURE_CHALLENGE, verifySignature } from './signature.js';

export const LEAKS_PATH = '/api/v1/secret-scanning/leaks';

export interface SecretScanningRouteOptions {
  keys: KeyRing;
  service: TokenService;
  /** The app's rate limiter (undefined when rate limiting is off), run first on this route. */
  limiter: preHandlerHookHandler | undefined;
}

interface Signed {
  keyId: string;
  key: KeyObject;
  signature: Buffer;
}

function refused(detail: string): AppError {
  return new AppError('INVALID_SIGNATURE', detail, { headers: { 'www-authenticate': SIGNATURE_CHALLENGE } });
}

/** Who revokes, in the audit trail: GitHub, by the key that signed the report. */
function reporter(keyId: string): Actor {
  return { type: 'secret_scanning', id: keyId, name: 'GitHub secret scanning' };
}

export function secretScanningRoutes(app: App, { keys, service, limiter }: SecretScanningRouteOptions): void {
  // Per request: the key and signature its headers name, from onRequest to the body check.
  const signed = new WeakMap<FastifyRequest, Signed>();

  void app.register(async (plugin) => {
    const api = plugin.withTypeProvider<TypeBoxTypeProvider>();
    api.removeAllContentTypeParsers();
    // The bytes as they came: the signature is over them, and nothing reads them before it holds.
    api.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body: Buffer, done) => done(null, body));
    noStoreAnswers(api);
    // Same signature as an onRequest hook: (request, reply, done).
    if (limiter !== undefined) api.addHook('onRequest', limiter);
    api.addHook('onRequest', async (request) => {
      const headers = readSignatureHeaders(request.raw.rawHeaders);
      if (!headers.ok) throw refused(headers.reason);
      const key = await keys.get(headers.keyId);
      if (key === undefined) throw refused('the Github-Public-Key-Identifier names no configured key');
      signed.set(request, { keyId: headers.keyId, key, signature: headers.signature });
    });
    api.addHook('preValidation', (request, _reply, done) => {
      const { key, signature } = signed.get(request)!;
      const bytes = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      if (!verifySignature(key, bytes, signature)) {
        done(refused("the signature does not match the body's bytes"));
        return;
      }
      const mediaType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (mediaType !== 'application/json') {
        done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'a report must be application/json'));
        return;
      }
      parseJsonBody(request, bytes, (err, parsed) => {
        if (err !== null) return done(err);
        request.body = parsed;
        done();
      });
    });

    api.post(
      LEAKS_PATH,
      {
        // Limited by the hook above instead, so that unsigned floods count too.
        config: {
          rateLimit: false,
          rateLimitFirst: limiter !== undefined,
          problems: {
            401: {
              description:
                'Not signed by a configured key, or the signature does not match the body (INVALID_SIGNATURE)',
              headers: {
                'WWW-Authenticate': responseHeader('SignatureChallenge', `\`${SIGNATURE_CHALLENGE}\``),
              },
            },
          },
        },
        schema: {
          tags: ['secret-scanning'],
          operationId: 'reportLeakedSecrets',
          summary: 'Revoke leaked secrets reported by GitHub secret scanning',
          description:
            "GitHub's secret scanning partner program posts the strings it found that match this service's " +
            'token pattern. The request must carry `Github-Public-Key-Identifier` and `Github-Public-Key-Signature` ' +
            '(base64 DER ECDSA P-256 / SHA-256 over the exact body bytes) from a key of SECRET_SCANNING_KEYS_FILE. ' +
            'Each entry that is a live secret is revoked at once (a grace-period previous secret: its grace period ' +
            'ends) and audited with its `url` and `source`. The answer labels every entry, in order, by the ' +
            `SHA-256 of its string. At most ${MAX_REPORT_ENTRIES} entries. See docs/secret-scanning.md.`,
          body: ReportedLeaks,
          response: { 200: LeakLabels },
        },
      },
      async (request) => {
        const { keyId } = signed.get(request)!;
        const context = auditContext(request, reporter(keyId));
        const labels = await labelLeaks(request.body, (secret, leak) => service.revokeLeaked(secret, leak, context));
        request.log.info(
          {
            key_identifier: keyId,
            reported: labels.length,
            true_positives: labels.filter((l) => l.label === 'true_positive').length,
          },
          'secret scanning report',
        );
        return labels;
      },
    );
  });
}
