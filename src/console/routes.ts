// The web console: a static single page at / with its assets under /console/, built into
// dist/web by `npm run build` (scripts/build-web.mjs) and read into memory once at start.
// It uses only the public API, so serving it is all the server does for it.
//
// The page gets its own Content-Security-Policy: scripts, styles, images and fetches from
// this origin only, no inline code, no forms posting anywhere, no framing, and Trusted
// Types enforced with no policy, so no HTML string can ever become markup.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AppError } from '../errors.js';
import { matchesIfNoneMatch } from '../http/conditional.js';
import type { App } from '../http/types.js';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  'trusted-types',
].join('; ');

/** Where the build puts the assets: two levels up from src/console/ and from the bundle, dist/cli/. */
const DEFAULT_ASSET_DIR = fileURLToPath(new URL('../../dist/web/', import.meta.url));

const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console/console.js': { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  '/console/console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
  '/console/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function load(dir: string): Map<string, Asset> | null {
  if (!existsSync(`${dir}/index.html`)) return null;
  const assets = new Map<string, Asset>();
  for (const [url, { file, type }] of Object.entries(ASSETS)) {
    const body = readFileSync(`${dir}/${file}`);
    assets.set(url, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` });
  }
  return assets;
}

export function consoleRoutes(app: App, options: { dir?: string } = {}): void {
  const assets = load(options.dir ?? DEFAULT_ASSET_DIR);
  if (assets === null)
    app.log.warn(
      { dir: options.dir ?? DEFAULT_ASSET_DIR },
      'web console assets not found (run `npm run build`); / answers 404',
    );

  void app.register(async (plugin) => {
    for (const url of Object.keys(ASSETS)) {
      plugin.get(url, { schema: { hide: true }, config: { rateLimit: false } }, async (request, reply) => {
        const asset = assets?.get(url);
        if (asset === undefined)
          throw new AppError('NOT_FOUND', 'the web console is not built on this server; run `npm run build`');
        // Revalidated on every load (cheap: 304 by ETag), so an upgrade shows at once.
        reply.header('cache-control', 'no-cache').header('etag', asset.etag);
        if (url === '/')
          reply.header('content-security-policy', CONSOLE_CSP).header('cross-origin-opener-policy', 'same-origin');
        if (matchesIfNoneMatch(request.headers['if-none-match'], asset.etag)) return reply.code(304).send();
        return reply.type(asset.type).send(asset.body);
      });
    }
  });
}
