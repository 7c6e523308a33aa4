// Headless Chromium from Debian (the `chromium` package), driven by playwright-core with
// an explicit executablePath: no browser is ever downloaded. Under CI the package is
// installed when absent; elsewhere the browser tests skip with a message.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { ensureDebianBinary } from './apt.js';

export function ensureChromium(): string | undefined {
  return ensureDebianBinary('chromium', ['/usr/bin/chromium', '/usr/bin/chromium-browser']);
}

export async function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}

/** Where screenshots go: test-artifacts/console/ (kept by CI, ignored by git). */
export function artifactPath(name: string): string {
  const dir = path.resolve('test-artifacts', 'console');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, name);
}
