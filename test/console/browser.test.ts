/// <reference lib="dom" />
// (DOM types: the page.evaluate() callbacks run in the browser.)
// The web console end to end: a listening infracat, Debian's Chromium driven by
// playwright-core, real clicks and keys. Screenshots go to test-artifacts/console/.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it, type TestContext } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CONSOLE_CSP } from '../../src/console/routes.js';
import { build, mintToken } from '../helpers/app.js';
import { artifactPath, ensureChromium, launchChromium } from '../helpers/browser.js';
import { OPERATOR_ACCOUNT_ID } from '../../src/storage/migrations.js';
import { ev, TEST_CONTEXT } from '../helpers/audit.js';
import { loadDefaultCatalog } from '../../src/catalog/default.js';
import type { Catalog } from '../../src/catalog/model.js';
import { shortDate } from '../../web/src/format.js';
import { receiver, RECEIVER_ENV, verified } from '../helpers/webhooks.js';

const ALL_SCOPES = ['api-tokens:write', 'apps:write', 'images:read', 'plans:read', 'regions:read', 'catalog:write'];
const SECRET = /^icat_[0-9A-Za-z]{36}$/;

async function listening(t: TestContext, env: Record<string, string> = {}) {
  const built = await build(t, { env: { LAST_USED_FLUSH_MS: '100', ...env } });
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const address = built.app.server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { ...built, base: `http://127.0.0.1:${address.port}` };
}

/**
 * A fresh browser context on `base`, failing the test on any script error, console error
 * (CSP and Trusted Types violations are reported there) or request to another origin.
 */
async function open(
  t: TestContext,
  browser: Browser,
  base: string,
  options: { width?: number; bypassCSP?: boolean } = {},
): Promise<{ page: Page; context: BrowserContext }> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1280, height: 900 },
    bypassCSP: options.bypassCSP ?? false,
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    // The browser logs failed fetches (the 4xx answers the tests provoke) as errors.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource'))
      problems.push(`console: ${msg.text()}`);
  });
  page.on('request', (req) => {
    if (!req.url().startsWith(`${base}/`)) problems.push(`request to another origin: ${req.url()}`);
  });
  t.after(async () => {
    await context.close();
    assert.deepEqual(problems, [], 'no script errors, CSP violations or foreign requests');
  });
  return { page, context };
}

async function signIn(page: Page, base: string, secret: string): Promise<void> {
  await page.goto(`${base}/#/tokens`);
  await page.getByLabel('API token').fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'All tokens' }).waitFor();
}

/** axe-core's WCAG 2 A/AA violations on the page as it is (its context must bypass the CSP). */
async function axeViolations(page: Page): Promise<string[]> {
  const axe = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.addScriptTag({ content: axe });
  return page.evaluate(async () => {
    const result = await (
      window as unknown as {
        axe: {
          run: (ctx: Document, o: unknown) => Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] });
    return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

const row = (page: Page, name: string) =>
  page.locator('tbody tr').filter({ has: page.locator('.token-name', { hasText: new RegExp(`^${name}$`) }) });

describe('web console in headless Chromium', () => {
  const executable = ensureChromium();
  const skip =
    executable === undefined
      ? 'chromium is not installed (apt-get install chromium); under CI=true the test installs it'
      : false;

  it('manages tokens and browses the catalogs', { skip, timeout: 180_000 }, async (t) => {
    const browser = await launchChromium(executable!);
    t.after(() => browser.close());
    const server = await listening(t);
    const { base, app } = server;
    const admin = await mintToken(app, ALL_SCOPES, 'operator');

    await t.test('the page comes from this server with a strict CSP', async () => {
      const res = await fetch(`${base}/`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(res.headers.get('content-security-policy'), CONSOLE_CSP);
      assert.match(CONSOLE_CSP, /default-src 'none'/);
      assert.match(CONSOLE_CSP, /script-src 'self'(;|$)/);
      assert.match(CONSOLE_CSP, /require-trusted-types-for 'script'/);
      assert.equal(res.headers.get('x-frame-options'), 'DENY');
      const html = await res.text();
      assert.doesNotMatch(
        html,
        /<script>|\sstyle=|\son[a-z]+=|https?:\/\//i,
        'no inline code and nothing from elsewhere',
      );
    });

    await t.test('sign in: a bad token gets a clear refusal, a good one opens the tokens', async (t) => {
      const { page } = await open(t, browser, base);
      await page.goto(`${base}/`);
      await page.getByLabel('API token').fill('icat_000000000000000000000000000000000000');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'The token was not accepted' }).waitFor();
      assert.equal(await page.getByLabel('API token').getAttribute('aria-invalid'), 'true');

      await page.getByLabel('API token').fill(admin.secret);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'All tokens' }).waitFor();
      assert.equal(await row(page, 'operator').locator('.badge').textContent(), 'this session');
      assert.equal(await page.locator('header .who').textContent(), 'Signed in as operator');
      assert.equal(await page.evaluate(() => sessionStorage.getItem('infracat.token')), admin.secret);
      assert.equal(await page.evaluate(() => localStorage.length), 0);
      assert.ok(!page.url().includes(admin.secret), 'the token is never in the URL');
    });

    let secret = '';
    await t.test('create: the secret is shown once with a copy button, then gone after a reload', async (t) => {
      const { page } = await open(t, browser, base);
      await signIn(page, base, admin.secret);
      await page.getByLabel('Name', { exact: true }).fill('ci-deploy');
      // The picker comes from /api/v1/scopes: one box per scope, grouped by resource
      // (eight resources, accounts and webhooks included, each read and write but audit-events:
      // read only).
      assert.equal(await page.locator('input[name="scope"]').count(), 14);
      await page.locator('#scope-images-read').check();
      await page.locator('#scope-plans-read').check();
      await page.getByLabel('Expires').selectOption('30');
      await page.getByRole('button', { name: 'Create token' }).click();

      const heading = page.getByRole('heading', { name: 'Copy the token “ci-deploy” now' });
      await heading.waitFor();
      assert.equal(
        await page.evaluate(() => document.activeElement?.id),
        'secret-heading',
        'focus moves to the secret',
      );
      assert.match((await page.locator('#secret-warning').textContent()) ?? '', /only time it is shown/);
      secret = await page.getByLabel('New token').inputValue();
      assert.match(secret, SECRET);
      await page.getByRole('button', { name: 'Copy' }).click();
      await page.getByText('Copied to the clipboard.').waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
      await row(page, 'ci-deploy').waitFor();
      assert.equal(await row(page, 'ci-deploy').locator('td[data-label="Last used"]').textContent(), 'Never');
      await page.screenshot({ path: artifactPath('token-created.png'), fullPage: true });

      // The secret works, with what was picked.
      const me = (await (
        await fetch(`${base}/api/v1/api-tokens/current`, { headers: { authorization: `Bearer ${secret}` } })
      ).json()) as { name: string; scopes: string[]; expires_at: string };
      assert.equal(me.name, 'ci-deploy');
      assert.deepEqual(me.scopes, ['images:read', 'plans:read']);
      assert.ok(Math.abs(Date.parse(me.expires_at) - (Date.now() + 30 * 86_400_000)) < 120_000, 'expires in 30 days');

      await page.reload();
      await row(page, 'ci-deploy').waitFor();
      assert.equal(await row(page, 'ci-deploy').locator('td[data-label="Created"] time').count(), 1);
      assert.equal(await page.locator('#new-secret').count(), 0);
      assert.ok(!(await page.content()).includes(secret), 'the secret is not on the page after a reload');
      const stored = await page.evaluate(
        () => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }),
      );
      assert.ok(!stored.includes(secret), 'nor in browser storage');
    });

    await t.test('the list shows last use relative, with the exact time on hover', async (t) => {
      const watcher = await mintToken(app, ['plans:read'], 'watcher');
      const { page } = await open(t, browser, base);
      await signIn(page, base, admin.secret);
      assert.equal(await row(page, 'watcher').locator('td[data-label="Last used"]').textContent(), 'Never');
      const used = await fetch(`${base}/api/v1/plans`, { headers: { authorization: `Bearer ${watcher.secret}` } });
      assert.equal(used.status, 200);
      await app.infracat.tokens.lastUsed.flush();
      await page.getByRole('button', { name: 'Refresh' }).click();
      const time = row(page, 'watcher').locator('td[data-label="Last used"] time');
      await time.waitFor();
      assert.equal(await time.textContent(), 'just now');
      const at = Date.parse((await time.getAttribute('datetime')) ?? '');
      assert.ok(Math.abs(Date.now() - at) < 60_000);
      assert.match((await time.getAttribute('title')) ?? '', /^\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}:\d{2} UTC$/);
      await time.hover();
      assert.match(
        (await row(page, 'ci-deploy').locator('td[data-label="Expires"] time').textContent()) ?? '',
        /^in 30 days$/,
      );
      await page.screenshot({ path: artifactPath('tokens.png'), fullPage: true });
    });

    await t.test("bad input: checked in the browser first, then the server's 422 lands on the field", async (t) => {
      const { page } = await open(t, browser, base);
      await signIn(page, base, admin.secret);
      let posts = 0;
      page.on('request', (r) => {
        if (r.method() === 'POST') posts += 1;
      });
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.getByText('Give the token a name.').waitFor();
      await page.getByText('Choose at least one scope.').waitFor();
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-name');
      assert.equal(posts, 0, 'nothing sent');

      await page.getByLabel('Name', { exact: true }).fill('expired-already');
      await page.locator('#scope-plans-read').check();
      await page.getByLabel('Expires').selectOption('custom');
      await page.getByLabel(/Expiry date/).fill('2020-01-01');
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.locator('#new-expiry-error', { hasText: 'must be in the future' }).waitFor();
      assert.equal(posts, 1);
      assert.equal(await page.getByLabel(/Expiry date/).getAttribute('aria-invalid'), 'true');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-expiry-date');
      assert.match(
        (await page.getByRole('alert').filter({ hasText: 'Some fields need attention' }).textContent()) ?? '',
        /see the messages next to them/,
      );
    });

    await t.test('403: a token without api-tokens:read is told which scope it lacks', async (t) => {
      const reader = await mintToken(app, ['plans:read'], 'plans-only');
      const { page } = await open(t, browser, base);
      await page.goto(`${base}/`);
      await page.getByLabel('API token').fill(reader.secret);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'This token lacks the api-tokens:read scope' }).waitFor();
      // The picker offers only what this token could grant.
      assert.equal(await page.locator('input[name="scope"]:not([disabled])').count(), 1);
    });

    await t.test('delete: a confirmation naming the token; Escape cancels, confirm deletes', async (t) => {
      const { page } = await open(t, browser, base);
      await signIn(page, base, admin.secret);
      const button = page.getByRole('button', { name: 'Delete token ci-deploy' });
      await button.click();
      const dialog = page.getByRole('dialog', { name: 'Delete the token “ci-deploy”?' });
      await dialog.waitFor();
      assert.equal(
        await page.evaluate(() => document.activeElement?.textContent),
        'Cancel',
        'the safe choice has focus',
      );
      await page.screenshot({ path: artifactPath('delete-dialog.png') });
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
      assert.equal(
        await page.evaluate(() => document.activeElement?.getAttribute('aria-label')),
        'Delete token ci-deploy',
        'focus returns',
      );
      assert.equal(await row(page, 'ci-deploy').count(), 1);

      await button.click();
      await dialog.getByRole('button', { name: 'Delete “ci-deploy”' }).click();
      await row(page, 'ci-deploy').waitFor({ state: 'detached' });
      await page.waitForFunction(() => document.activeElement?.id === 'list-heading');
      const after = await fetch(`${base}/api/v1/api-tokens/current`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(after.status, 401);
    });

    await t.test('plans: filter by type, vCPUs, memory and price; sort by any column', async (t) => {
      const { page } = await open(t, browser, base);
      await page.goto(`${base}/#/plans`);
      const plans = page.locator('tbody tr[data-plan]');
      await plans.first().waitFor();
      assert.equal(await plans.count(), 15);
      assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'BODY');
      await page.getByLabel('Type').selectOption('memory-optimized');
      assert.equal(await page.locator('#plan-count').textContent(), 'Showing 5 of 15 plans');
      assert.ok(
        (await plans.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-plan') ?? ''))).every((s) =>
          s.startsWith('m-'),
        ),
      );

      const byPrice = page.getByRole('button', { name: /^Price \/ month/ });
      await byPrice.click();
      assert.equal(await page.locator('th[data-key="price_monthly"]').getAttribute('aria-sort'), 'ascending');
      assert.equal(await plans.first().getAttribute('data-plan'), 'm-2vcpu-16gb');
      await byPrice.press('Enter'); // keyboard works too, and focus stays on the header
      assert.equal(await page.locator('th[data-key="price_monthly"]').getAttribute('aria-sort'), 'descending');
      assert.equal(await plans.first().getAttribute('data-plan'), 'm-32vcpu-256gb');
      assert.equal(await plans.first().locator('td[data-label="Price / month"]').textContent(), '$1,344.99');
      assert.equal(await plans.first().locator('td[data-label="Memory"]').textContent(), '256 GB');

      await page.getByLabel('At least vCPUs').fill('8');
      assert.equal(await plans.count(), 3);
      await page.getByLabel('At most $ / month').fill('400');
      assert.deepEqual(await plans.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-plan'))), [
        'm-8vcpu-64gb',
      ]);
      await page.getByLabel('At least memory (GB)').fill('128');
      await page.getByText('No plan matches these filters.').waitFor();
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await page.getByText('Showing 15 of 15 plans').waitFor();
      await page.getByRole('button', { name: /^vCPUs/ }).click();
      const vcpus = await plans.evaluateAll((rows) =>
        rows.map((r) => Number(r.querySelector('td[data-label="vCPUs"]')?.textContent)),
      );
      assert.deepEqual(
        vcpus,
        [...vcpus].sort((a, b) => a - b),
      );
      await page.screenshot({ path: artifactPath('plans.png'), fullPage: true });
    });

    await t.test('images grouped by distribution; regions with availability and features', async (t) => {
      const { page } = await open(t, browser, base);
      await page.goto(`${base}/#/images`);
      await page.locator('section[data-distribution]').first().waitFor();
      const groups = await page
        .locator('section[data-distribution]')
        .evaluateAll((s) => s.map((e) => `${e.getAttribute('data-distribution')}:${e.querySelectorAll('li').length}`));
      assert.deepEqual(groups, ['AlmaLinux:2', 'Debian:2', 'Fedora:2', 'Rocky Linux:2', 'Ubuntu:3']);
      await page.screenshot({ path: artifactPath('images.png'), fullPage: true });

      await page.getByRole('link', { name: 'Regions' }).click();
      await page.getByRole('heading', { name: 'Regions', level: 1 }).waitFor();
      assert.equal(
        await page.evaluate(() => document.activeElement?.tagName),
        'H1',
        'navigation moves focus to the page heading',
      );
      const nyc1 = page.locator('tr[data-region="nyc1"]');
      assert.equal(await nyc1.locator('td[data-label="Availability"]').textContent(), 'Not available');
      assert.deepEqual(await nyc1.locator('.tags li').allTextContents(), ['backups', 'ipv6']);
      assert.equal(await page.locator('tr[data-region]').count(), 10);
      await page.getByLabel('Only regions taking new resources').check();
      assert.equal(await page.locator('tr[data-region]').count(), 8);
      await page.screenshot({ path: artifactPath('regions.png'), fullPage: true });
    });

    await t.test('narrow screens: no sideways scrolling, tables become labelled cards', async (t) => {
      const { page } = await open(t, browser, base, { width: 375 });
      await signIn(page, base, admin.secret);
      const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
      assert.ok(await fits(), 'tokens page fits 375 px');
      await page.screenshot({ path: artifactPath('narrow-tokens.png'), fullPage: true });
      await page.getByRole('link', { name: 'Plans' }).click();
      await page.locator('tbody tr[data-plan]').first().waitFor();
      assert.ok(await fits(), 'plans page fits 375 px');
      // The sort buttons stay reachable above the cards.
      assert.ok(await page.getByRole('button', { name: /^Price \/ month/ }).isVisible());
      await page.screenshot({ path: artifactPath('narrow-plans.png'), fullPage: true });
    });

    await t.test('accessibility: axe-core finds no WCAG 2 A/AA violations on any view', async (t) => {
      // axe is injected, so this one context bypasses the page's CSP; the others enforce it.
      const { page } = await open(t, browser, base, { bypassCSP: true });
      await signIn(page, base, admin.secret);
      const found: string[] = [];
      for (const view of ['tokens', 'plans', 'images', 'regions']) {
        await page.goto(`${base}/#/${view}`);
        await page.reload();
        await page.locator('.view table, .view section, .view form').first().waitFor();
        found.push(...(await axeViolations(page)).map((v) => `${view}: ${v}`));
      }
      assert.deepEqual(found, []);
    });

    await t.test('an expired token stays listed, labelled Expired', async (t) => {
      const now = Date.now();
      await server.store.tokens.create(
        {
          id: 'tok_01EXP1RED00000000000000000',
          name: 'old-ci',
          scopes: ['apps:read'],
          secretHash: 'f'.repeat(64),
          createdAt: now - 86_400_000,
          expiresAt: now - 60_000,
          lastUsedAt: null,
          lastUsedIp: null,
          accountId: OPERATOR_ACCOUNT_ID,
          previousSecretHash: null,
          previousExpiresAt: null,
          allowedCidrs: null,
          notBefore: null,
          enabled: true,
        },
        { maxLive: 1000, now },
        ev(),
      );
      const { page } = await open(t, browser, base);
      await signIn(page, base, admin.secret);
      await row(page, 'old-ci').waitFor();
      assert.match(
        (await row(page, 'old-ci').locator('td[data-label="Expires"]').textContent()) ?? '',
        /ago\s*Expired$/,
      );
      assert.equal(
        await row(page, 'ci-deploy').locator('td[data-label="Expires"] .expired').count(),
        0,
        'a live token is not labelled',
      );
      await page.screenshot({ path: artifactPath('token-expired.png'), fullPage: true });
    });

    await t.test('/docs: no console error (its CSP holds), real examples, labelled responses', async (t) => {
      // open() fails the test on any console error, CSP violations included.
      const { page } = await open(t, browser, base);
      await page.goto(`${base}/docs/`);
      await page.locator('#operations-tokens-createApiToken').click();
      const body = JSON.parse(
        await page.locator('#operations-tokens-createApiToken textarea.body-param__text').inputValue(),
      ) as Record<string, unknown>;
      assert.deepEqual(
        body,
        { name: 'ci deploy', scopes: ['apps:read', 'apps:write'] },
        'the example body, not "string" placeholders',
      );
      const labels = await page.locator('#operations-tokens-createApiToken .response-col_description').allInnerTexts();
      assert.ok(
        labels.some((l) => l.startsWith('Created')),
        labels.join(' | '),
      );
      assert.ok(!labels.some((l) => l.includes('Default Response')));
      await page.screenshot({ path: artifactPath('docs.png'), fullPage: false });
    });

    await t.test('sign out forgets the token', async (t) => {
      const { page } = await open(t, browser, base);
      await signIn(page, base, admin.secret);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('API token').waitFor();
      assert.equal(await page.evaluate(() => sessionStorage.getItem('infracat.token')), null);
      await page.reload();
      await page.getByLabel('API token').waitFor();
      assert.equal(await page.getByRole('link', { name: 'Sign in' }).count(), 1);
    });
  });

  it(
    'says what a 409, a 429 and a token-only catalog mean; works from the keyboard',
    { skip, timeout: 120_000 },
    async (t) => {
      const browser = await launchChromium(executable!);
      t.after(() => browser.close());
      // One live token allowed, a tiny per-token rate limit, catalogs for token holders only.
      const { base, app } = await listening(t, { TOKEN_MAX_LIVE: '1', RATE_LIMIT: '6', CATALOG_ACCESS: 'token' });
      // Without catalog:read: the plans page would also fetch the catalog document for its
      // badges, one more request under the tiny limit before the 409 this test wants.
      const admin = await mintToken(
        app,
        ALL_SCOPES.filter((s) => s !== 'catalog:write'),
        'operator',
      );
      const { page } = await open(t, browser, base);

      // Keyboard: the skip link comes first and lands on the content.
      await page.goto(`${base}/#/plans`);
      await page.getByText('This server shows its plans to signed-in users only.').waitFor();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
      await page.keyboard.press('Enter');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
      await page.getByRole('link', { name: 'Sign in with an API token' }).click();
      await page.getByLabel('API token').fill(admin.secret);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'All tokens' }).waitFor();
      await page.getByRole('link', { name: 'Plans' }).click();
      await page.locator('tbody tr[data-plan]').first().waitFor();
      await page.getByRole('link', { name: 'API tokens' }).click();

      await page.getByLabel('Name', { exact: true }).fill('one-too-many');
      await page.locator('#scope-plans-read').check();
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.getByRole('alert').filter({ hasText: 'The limit on live tokens is reached' }).waitFor();

      const refresh = page.getByRole('button', { name: 'Refresh' });
      const limited = page.getByRole('alert').filter({ hasText: /Too many requests\. Try again in \d+ seconds?\./ });
      let status = 0;
      for (let i = 0; i < 10 && status !== 429; i++) {
        const [res] = await Promise.all([
          page.waitForResponse((r) => r.url() === `${base}/api/v1/api-tokens`),
          refresh.click(),
        ]);
        status = res.status();
      }
      assert.equal(status, 429);
      await limited.waitFor();
    },
  );

  it(
    'accounts: the operator creates, suspends, resumes, mints, lists and deletes; others see no such page',
    { skip, timeout: 240_000 },
    async (t) => {
      const browser = await launchChromium(executable!);
      t.after(() => browser.close());
      const { base, app } = await listening(t);
      const operator = await mintToken(app, [...ALL_SCOPES, 'accounts:write'], 'operator');
      const asOperator = { authorization: `Bearer ${operator.secret}` };
      const getJson = async <T>(path: string, secret = operator.secret): Promise<{ status: number; body: T }> => {
        const res = await fetch(`${base}/api/v1${path}`, { headers: { authorization: `Bearer ${secret}` } });
        return { status: res.status, body: (await res.json()) as T };
      };
      const accountRow = (page: Page, name: string) =>
        page
          .locator('tbody tr[data-account-id]')
          .filter({ has: page.locator('.account-name', { hasText: new RegExp(`^${name}$`) }) });
      const focused = (page: Page) =>
        page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.id);

      let acme = '';
      let first = '';
      await t.test("the header names the token's account; the Accounts page lists the operator's", async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.locator('header .account-name').waitFor();
        assert.equal(
          await page.locator('header .account').textContent(),
          `Account operator ${OPERATOR_ACCOUNT_ID}`,
          'the operator token reads its account name',
        );
        await page.getByRole('link', { name: 'Accounts' }).click();
        await page.getByRole('heading', { name: 'Accounts', level: 1 }).waitFor();
        const op = page.locator(`tr[data-account-id="${OPERATOR_ACCOUNT_ID}"]`);
        await op.waitFor();
        assert.equal(await op.locator('.badge').textContent(), 'operator');
        assert.equal(await op.locator('td[data-label="Status"]').textContent(), 'Active');
        assert.equal(await op.locator('td[data-label="External ID"]').textContent(), 'None');
        assert.equal(await op.getByRole('button').count(), 0, 'the operator account offers no suspend or delete');
        assert.equal(
          await op.locator('td[data-label="Actions"]').textContent(),
          'Operator account: cannot be suspended or deleted',
        );
      });

      await t.test('create: an account with an external id; a duplicate external id is a clear 409', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/accounts`);
        await page.getByRole('button', { name: 'Create account' }).click();
        await page.getByText('Give the account a name.').waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'account-name');

        await page.getByLabel('Name', { exact: true }).fill('Acme Corp');
        await page.getByLabel('External ID (optional)').fill('cus_8412');
        await page.getByRole('button', { name: 'Create account' }).click();
        const created = page.getByRole('link', { name: 'Open “Acme Corp” to mint its first token' });
        await created.waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), await created.textContent());
        const acmeRow = accountRow(page, 'Acme Corp');
        await acmeRow.waitFor();
        acme = (await acmeRow.getAttribute('data-account-id')) ?? '';
        assert.match(acme, /^acc_[0-9A-HJKMNP-TV-Z]{26}$/);
        assert.equal(await acmeRow.locator('td[data-label="External ID"]').textContent(), 'cus_8412');
        assert.equal(await acmeRow.locator('td[data-label="Status"]').textContent(), 'Active');

        await page.getByLabel('Name', { exact: true }).fill('Acme Again');
        await page.getByLabel('External ID (optional)').fill('cus_8412');
        await page.getByRole('button', { name: 'Create account' }).click();
        await page
          .getByRole('alert')
          .filter({ hasText: 'Conflict: another account already has this external_id.' })
          .waitFor();
        assert.equal(
          await page.locator('#account-external-id-error').textContent(),
          'is already the external_id of another account',
        );
        assert.equal(await page.getByLabel('External ID (optional)').getAttribute('aria-invalid'), 'true');
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'account-external-id');
        assert.equal(await accountRow(page, 'Acme Again').count(), 0);

        // No external id: none is sent (the field is left out, not sent empty).
        await page.getByLabel('External ID (optional)').fill('');
        await page.getByLabel('Name', { exact: true }).fill('Beta');
        const [post] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'POST' && r.url() === `${base}/api/v1/accounts`),
          page.getByRole('button', { name: 'Create account' }).click(),
        ]);
        assert.deepEqual(post.postDataJSON(), { name: 'Beta' });
        await accountRow(page, 'Beta').waitFor();
        assert.equal(await accountRow(page, 'Beta').locator('td[data-label="External ID"]').textContent(), 'None');
        await page.screenshot({ path: artifactPath('accounts.png'), fullPage: true });
      });

      await t.test('suspend behind a confirmation naming the account; resume restores it', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/accounts`);
        await page.getByRole('button', { name: 'Suspend account Acme Corp' }).click();
        const dialog = page.getByRole('dialog', { name: 'Suspend the account “Acme Corp”?' });
        await dialog.waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel');
        await dialog.getByRole('button', { name: 'Suspend “Acme Corp”' }).click();
        await dialog.waitFor({ state: 'detached' });
        const status = accountRow(page, 'Acme Corp').locator('td[data-label="Status"]');
        await status.filter({ hasText: 'Suspended' }).waitFor();
        await page.waitForFunction(
          () => document.activeElement?.getAttribute('aria-label') === 'Resume account Acme Corp',
        );
        assert.equal((await getJson<{ status: string }>(`/accounts/${acme}`)).body.status, 'suspended');

        await page.getByRole('button', { name: 'Resume account Acme Corp' }).click();
        await status.filter({ hasText: 'Active' }).waitFor();
        await page.waitForFunction(
          () => document.activeElement?.getAttribute('aria-label') === 'Suspend account Acme Corp',
        );
        assert.equal((await getJson<{ status: string }>(`/accounts/${acme}`)).body.status, 'active');
      });

      await t.test("mint a first token into the account: the account's own form and once-shown secret", async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/accounts`);
        await accountRow(page, 'Acme Corp').getByRole('link', { name: 'Acme Corp' }).click();
        await page.getByRole('heading', { name: 'Account “Acme Corp”', level: 1 }).waitFor();
        assert.equal(await page.locator('#account-status').textContent(), 'Active');
        await page.getByRole('heading', { name: 'Tokens of “Acme Corp”' }).waitFor();
        await page.getByText('No tokens.').waitFor();
        // accounts:* belong to the operator account only: not offered here, and said why.
        await page.locator('input[name="scope"]').first().waitFor();
        assert.equal(await page.locator('#scope-accounts-read').isDisabled(), true);
        assert.match(
          (await page.locator('#scope-accounts-read-desc').textContent()) ?? '',
          /not in this account: operator account only/,
        );
        // So does catalog:write (the scope list's operator_only flag), not catalog:read.
        assert.equal(await page.locator('#scope-catalog-write').isDisabled(), true);
        assert.match(
          (await page.locator('#scope-catalog-write-desc').textContent()) ?? '',
          /not in this account: operator account only/,
        );
        assert.equal(await page.locator('#scope-catalog-read').isDisabled(), false);
        await page.getByLabel('Name', { exact: true }).fill('first');
        await page.locator('#scope-api-tokens-write').check();
        await page.locator('#scope-apps-write').check();
        await page.getByLabel('Expires').selectOption('never');
        const [post] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'POST'),
          page.getByRole('button', { name: 'Create token' }).click(),
        ]);
        assert.equal(post.url(), `${base}/api/v1/accounts/${acme}/api-tokens`);
        assert.deepEqual(
          post.postDataJSON(),
          { name: 'first', scopes: ['api-tokens:write', 'apps:write'] },
          '"Never" sends no expires_at',
        );
        await page.getByRole('heading', { name: 'Copy the token “first” now' }).waitFor();
        first = await page.getByLabel('New token').inputValue();
        assert.match(first, SECRET);
        await row(page, 'first').waitFor();
        await page.screenshot({ path: artifactPath('account-tokens.png'), fullPage: true });

        const me = await getJson<{ name: string; account_id: string; scopes: string[]; expires_at: null }>(
          '/api-tokens/current',
          first,
        );
        assert.equal(me.status, 200);
        const { name, account_id, scopes, expires_at } = me.body;
        assert.deepEqual(
          { name, account_id, scopes, expires_at },
          { name: 'first', account_id: acme, scopes: ['api-tokens:write', 'apps:write'], expires_at: null },
          'in the account, with what was picked, never expiring (as the operator token)',
        );
        // The operator's own list does not show it (tokens stay in their account).
        const own = await getJson<{ name: string }[]>('/api-tokens');
        assert.ok(!own.body.some((tok) => tok.name === 'first'));
      });

      await t.test("the account's tokens: listed, and one deleted behind its confirmation", async (t) => {
        const second = (
          await app.inject({
            method: 'POST',
            url: `/api/v1/accounts/${acme}/api-tokens`,
            headers: asOperator,
            payload: { name: 'second', scopes: ['apps:read'] },
          })
        ).json<{ id: string; token: string }>();
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/accounts/${acme}`);
        await row(page, 'second').waitFor();
        assert.deepEqual(await page.locator('tbody tr .token-name').allTextContents(), ['first', 'second']);
        await page.getByRole('button', { name: 'Delete token second' }).click();
        const dialog = page.getByRole('dialog', { name: 'Delete the token “second”?' });
        await dialog.getByRole('button', { name: 'Delete “second”' }).click();
        await row(page, 'second').waitFor({ state: 'detached' });
        assert.equal((await getJson(`/accounts/${acme}/api-tokens/${second.id}`)).status, 404);
        assert.equal((await getJson('/api-tokens/current', second.token)).status, 401);
        assert.equal(await row(page, 'first').count(), 1);
      });

      await t.test("regenerate an account's token from its page: the account's route, the secret once", async (t) => {
        const before = await getJson<{ id: string }>('/api-tokens/current', first);
        assert.equal(before.status, 200);
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/accounts/${acme}`);
        await page.getByRole('button', { name: 'Regenerate token first' }).click();
        const dialog = page.getByRole('dialog', { name: 'Regenerate the token “first”?' });
        const [post] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'POST'),
          dialog.getByRole('button', { name: 'Regenerate “first”' }).click(),
        ]);
        assert.equal(post.url(), `${base}/api/v1/accounts/${acme}/api-tokens/${before.body.id}/rotate`);
        assert.deepEqual(post.postDataJSON(), { grace_period_s: 0 });
        await page.getByRole('heading', { name: 'Copy the token “first” now' }).waitFor();
        assert.equal(await page.locator('#secret-note').textContent(), 'The old secret no longer works.');
        const fresh = await page.getByLabel('New token').inputValue();
        assert.match(fresh, SECRET);
        assert.equal((await getJson('/api-tokens/current', first)).status, 401, 'the old secret is refused at once');
        const after = await getJson<{ id: string; account_id: string }>('/api-tokens/current', fresh);
        assert.deepEqual([after.body.id, after.body.account_id], [before.body.id, acme]);
        first = fresh;
      });

      await t.test('a customer token: its account id, no Accounts page, only its own tokens', async (t) => {
        const { page } = await open(t, browser, base);
        const accountCalls: string[] = [];
        page.on('request', (r) => {
          if (r.url().startsWith(`${base}/api/v1/accounts`)) accountCalls.push(r.url());
        });
        await signIn(page, base, first);
        await row(page, 'first').waitFor();
        assert.equal(await page.locator('header .account').textContent(), `Account ${acme}`);
        assert.equal(await page.getByRole('link', { name: 'Accounts' }).isVisible(), false);
        assert.deepEqual(await page.locator('tbody tr .token-name').allTextContents(), ['first']);
        await page.goto(`${base}/#/accounts`);
        await page.getByRole('heading', { name: 'Accounts', level: 1 }).waitFor();
        await page.getByRole('alert').filter({ hasText: 'Accounts are managed by the operator account' }).waitFor();
        await page.goto(`${base}/#/accounts/${acme}`);
        await page.getByRole('alert').filter({ hasText: 'Accounts are managed by the operator account' }).waitFor();
        assert.equal(await page.locator('table').count(), 0);
        assert.deepEqual(accountCalls, [], 'the console asks nothing about accounts');
      });

      await t.test('suspended from its page: the customer is told why it is refused; resumed, it works', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/accounts/${acme}`);
        await page.getByRole('button', { name: 'Suspend account Acme Corp' }).click();
        await page.getByRole('dialog').getByRole('button', { name: 'Suspend “Acme Corp”' }).click();
        await page.locator('#account-status').filter({ hasText: 'Suspended' }).waitFor();
        await page.waitForFunction(
          () => document.activeElement?.getAttribute('aria-label') === 'Resume account Acme Corp',
        );

        const customer = await open(t, browser, base);
        await customer.page.goto(`${base}/`);
        await customer.page.getByLabel('API token').fill(first);
        await customer.page.getByRole('button', { name: 'Sign in' }).click();
        await customer.page
          .getByRole('alert')
          .filter({
            hasText: "The token's account is suspended: its tokens are refused until the platform operator resumes it.",
          })
          .waitFor();

        await page.getByRole('button', { name: 'Resume account Acme Corp' }).click();
        await page.locator('#account-status').filter({ hasText: 'Active' }).waitFor();
        await customer.page.getByRole('button', { name: 'Sign in' }).click();
        await customer.page.getByRole('heading', { name: 'All tokens' }).waitFor();
      });

      await t.test(
        'delete: a confirmation naming the account; Escape cancels, confirm deletes it and its tokens',
        async (t) => {
          const { page } = await open(t, browser, base);
          await signIn(page, base, operator.secret);
          await page.goto(`${base}/#/accounts`);
          const button = page.getByRole('button', { name: 'Delete account Acme Corp' });
          await button.click();
          const dialog = page.getByRole('dialog', { name: 'Delete the account “Acme Corp”?' });
          await dialog.waitFor();
          assert.match((await dialog.locator('#confirm-detail').textContent()) ?? '', /Every token of it is deleted/);
          assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel');
          await page.screenshot({ path: artifactPath('account-delete-dialog.png') });
          await page.keyboard.press('Escape');
          await dialog.waitFor({ state: 'detached' });
          assert.equal(await focused(page), 'Delete account Acme Corp', 'focus returns');
          assert.equal((await getJson(`/accounts/${acme}`)).status, 200);

          await button.click();
          await dialog.getByRole('button', { name: 'Delete “Acme Corp”' }).click();
          await accountRow(page, 'Acme Corp').waitFor({ state: 'detached' });
          // The row goes as soon as the list starts reloading; focus moves once it has
          // reloaded (a later moment): wait for it, as the suspend/resume steps do.
          await page.waitForFunction(() => document.activeElement?.id === 'accounts-heading');
          assert.equal((await getJson(`/accounts/${acme}`)).status, 404);
          assert.equal((await getJson('/api-tokens/current', first)).status, 401, 'its tokens went with it');
          assert.equal(await accountRow(page, 'Beta').count(), 1);

          // From its own page, deleting goes back to the list.
          await accountRow(page, 'Beta').getByRole('link', { name: 'Beta' }).click();
          await page.getByRole('heading', { name: 'Account “Beta”', level: 1 }).waitFor();
          await page.getByRole('button', { name: 'Delete account Beta' }).click();
          await page.getByRole('dialog').getByRole('button', { name: 'Delete “Beta”' }).click();
          await page.getByRole('heading', { name: 'Accounts', level: 1 }).waitFor();
          await page.getByRole('heading', { name: 'All accounts' }).waitFor();
          assert.equal(await accountRow(page, 'Beta').count(), 0);
        },
      );

      await t.test("the server's 409 is shown if the operator account is acted on anyway", async (t) => {
        const { page } = await open(t, browser, base);
        // The console decides which account is the operator's from the signed-in token's
        // account; told another one, it offers the operator account's buttons.
        await page.route(`${base}/api/v1/api-tokens/current`, async (route) => {
          const res = await route.fetch();
          const body = (await res.json()) as Record<string, unknown>;
          await route.fulfill({ response: res, json: { ...body, account_id: 'acc_01ZZZZZZZZZZZZZZZZZZZZZZZZ' } });
        });
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/accounts`);
        await page.getByRole('button', { name: 'Suspend account operator' }).click();
        const dialog = page.getByRole('dialog', { name: 'Suspend the account “operator”?' });
        await dialog.getByRole('button', { name: 'Suspend “operator”' }).click();
        await dialog
          .getByRole('alert')
          .filter({ hasText: 'Refused: the operator account cannot be suspended: it runs the other accounts.' })
          .waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel');
        await page.keyboard.press('Escape');
        await page.getByRole('button', { name: 'Delete account operator' }).click();
        await page.getByRole('dialog').getByRole('button', { name: 'Delete “operator”' }).click();
        await page
          .getByRole('dialog')
          .getByRole('alert')
          .filter({ hasText: /^Refused: the operator account cannot be/ })
          .waitFor();
        assert.equal((await getJson<{ status: string }>(`/accounts/${OPERATOR_ACCOUNT_ID}`)).body.status, 'active');
      });

      await t.test('"Never" on the own tokens page still sends no expires_at', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.getByLabel('Name', { exact: true }).fill('forever');
        await page.locator('#scope-plans-read').check();
        await page.getByLabel('Expires').selectOption('never');
        const [post] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'POST'),
          page.getByRole('button', { name: 'Create token' }).click(),
        ]);
        assert.equal(post.url(), `${base}/api/v1/api-tokens`);
        assert.deepEqual(post.postDataJSON(), { name: 'forever', scopes: ['plans:read'] });
        await row(page, 'forever').waitFor();
        assert.equal(await row(page, 'forever').locator('td[data-label="Expires"]').textContent(), 'Never');
      });

      await t.test('accessibility and narrow screens on the accounts pages', async (t) => {
        const created = (
          await app.inject({ method: 'POST', url: '/api/v1/accounts', headers: asOperator, payload: { name: 'Gamma' } })
        ).json<{ id: string }>();
        const { page } = await open(t, browser, base, { bypassCSP: true });
        await signIn(page, base, operator.secret);
        const found: string[] = [];
        // The list, and an account's page once its token list has loaded.
        const views = [
          ['accounts', '.view table'],
          [`accounts/${created.id}`, 'text=No tokens.'],
        ] as const;
        for (const [view, ready] of views) {
          await page.goto(`${base}/#/${view}`);
          await page.reload();
          await page.locator(ready).first().waitFor();
          found.push(...(await axeViolations(page)).map((v) => `${view}: ${v}`));
        }
        assert.deepEqual(found, []);
        const narrow = await open(t, browser, base, { width: 375 });
        await signIn(narrow.page, base, operator.secret);
        for (const [view, ready] of views) {
          await narrow.page.goto(`${base}/#/${view}`);
          await narrow.page.locator(ready).first().waitFor();
          assert.ok(
            await narrow.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
            `${view} fits 375 px`,
          );
        }
        await narrow.page.screenshot({ path: artifactPath('narrow-account.png'), fullPage: true });
      });
    },
  );
  it(
    'token lifecycle: regenerate (the secret once, the old one refused), rename, and the audit log with Load more',
    { skip, timeout: 240_000 },
    async (t) => {
      const browser = await launchChromium(executable!);
      t.after(() => browser.close());
      const { base, app } = await listening(t);
      const admin = await mintToken(app, [...ALL_SCOPES, 'audit-events:read'], 'admin');
      const status = async (secret: string): Promise<number> =>
        (await fetch(`${base}/api/v1/api-tokens/current`, { headers: { authorization: `Bearer ${secret}` } })).status;
      // Minted first, so the events of what the console does come after theirs.
      const deployBot = await mintToken(app, ['plans:read'], 'deploy-bot');
      const selfToken = await mintToken(app, ['api-tokens:write', 'audit-events:read'], 'self');
      const reader = await mintToken(app, ['api-tokens:read'], 'reader');

      await t.test('Regenerate, no grace period: the new secret shown once; the old one refused at once', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, admin.secret);
        const button = page.getByRole('button', { name: 'Regenerate token deploy-bot' });
        await button.click();
        const dialog = page.getByRole('dialog', { name: 'Regenerate the token “deploy-bot”?' });
        await dialog.waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel', 'the safe choice');
        assert.equal(await dialog.getByLabel('None: the old secret stops working at once').isChecked(), true);
        assert.equal(await dialog.getByLabel('1 hour').isChecked(), false);
        assert.match(
          (await dialog.locator('#grace-hint').textContent()) ?? '',
          /With none, the old secret stops working at once/,
        );
        await page.screenshot({ path: artifactPath('regenerate-dialog.png') });
        // Escape cancels: nothing is sent, the old secret still works.
        await page.keyboard.press('Escape');
        await dialog.waitFor({ state: 'detached' });
        assert.equal(await status(deployBot.secret), 200);

        await button.click();
        const [post] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'POST'),
          dialog.getByRole('button', { name: 'Regenerate “deploy-bot”' }).click(),
        ]);
        assert.equal(post.url(), `${base}/api/v1/api-tokens/${deployBot.id}/rotate`);
        assert.deepEqual(post.postDataJSON(), { grace_period_s: 0 });
        await page.getByRole('heading', { name: 'Copy the token “deploy-bot” now' }).waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'secret-heading');
        assert.match((await page.locator('#secret-warning').textContent()) ?? '', /only time it is shown/);
        assert.equal(await page.locator('#secret-note').textContent(), 'The old secret no longer works.');
        const fresh = await page.getByLabel('New token').inputValue();
        assert.match(fresh, SECRET);
        assert.notEqual(fresh, deployBot.secret);
        await page.getByRole('button', { name: 'Copy' }).click();
        await page.getByText('Copied to the clipboard.').waitFor();
        assert.equal(await page.evaluate(() => navigator.clipboard.readText()), fresh);
        await page.screenshot({ path: artifactPath('token-regenerated.png'), fullPage: true });

        assert.equal(await status(deployBot.secret), 401, 'the old secret is refused at once');
        const me = (await (
          await fetch(`${base}/api/v1/api-tokens/current`, { headers: { authorization: `Bearer ${fresh}` } })
        ).json()) as { id: string; name: string; scopes: string[] };
        assert.deepEqual(
          { id: me.id, name: me.name, scopes: me.scopes },
          { id: deployBot.id, name: 'deploy-bot', scopes: ['plans:read'] },
          'the same token, with the new secret',
        );
        // The list still has the one token; the secret is gone after a reload.
        assert.equal(await row(page, 'deploy-bot').count(), 1);
        await page.reload();
        await row(page, 'deploy-bot').waitFor();
        assert.equal(await page.locator('#new-secret').count(), 0);
        assert.ok(!(await page.content()).includes(fresh), 'the secret is not on the page after a reload');
        deployBot.secret = fresh;
      });

      await t.test('Regenerate with a 1 hour grace period: the old secret keeps working meanwhile', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, admin.secret);
        await page.getByRole('button', { name: 'Regenerate token deploy-bot' }).click();
        const dialog = page.getByRole('dialog', { name: 'Regenerate the token “deploy-bot”?' });
        await dialog.getByLabel('1 hour').check();
        const [post] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'POST'),
          dialog.getByRole('button', { name: 'Regenerate “deploy-bot”' }).click(),
        ]);
        assert.deepEqual(post.postDataJSON(), { grace_period_s: 3600 });
        await page.getByRole('heading', { name: 'Copy the token “deploy-bot” now' }).waitFor();
        assert.match(
          (await page.locator('#secret-note').textContent()) ?? '',
          /^The old secret keeps working until \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}:\d{2} UTC, then is refused\.$/,
        );
        const fresh = await page.getByLabel('New token').inputValue();
        assert.equal(await status(fresh), 200);
        assert.equal(await status(deployBot.secret), 200, 'the old secret works during its grace period');
        await page.getByRole('button', { name: 'Done, I have stored it' }).click();
        assert.equal(await page.locator('#new-secret').count(), 0);
        deployBot.secret = fresh;
      });

      await t.test('Regenerate the signed-in token: the session carries on with the new secret', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, selfToken.secret);
        await page.getByRole('button', { name: 'Regenerate token self' }).click();
        const dialog = page.getByRole('dialog', { name: 'Regenerate the token “self”?' });
        assert.match(
          (await dialog.locator('#grace-hint').textContent()) ?? '',
          /This session signs in with this token: it continues with the new secret\./,
        );
        await dialog.getByRole('button', { name: 'Regenerate “self”' }).click();
        await page.getByRole('heading', { name: 'Copy the token “self” now' }).waitFor();
        assert.equal(
          await page.locator('#secret-note').textContent(),
          'The old secret no longer works. This session signs in with this token: it now uses the new secret.',
        );
        const fresh = await page.getByLabel('New token').inputValue();
        assert.equal(await status(selfToken.secret), 401, 'the old secret is refused');
        assert.equal(await page.evaluate(() => sessionStorage.getItem('infracat.token')), fresh);
        // Still signed in: the list reloads with the new secret, a reload of the page too.
        const [list] = await Promise.all([
          page.waitForResponse((r) => r.url() === `${base}/api/v1/api-tokens`),
          page.getByRole('button', { name: 'Refresh' }).click(),
        ]);
        assert.equal(list.status(), 200);
        assert.equal((await list.request().allHeaders()).authorization, `Bearer ${fresh}`);
        await page.reload();
        await row(page, 'self').waitFor();
        assert.equal(await row(page, 'self').locator('.badge').textContent(), 'this session');
        assert.equal(await page.locator('header .who').textContent(), 'Signed in as self');
        selfToken.secret = fresh;
      });

      await t.test('Regenerate and Rename are offered only to a token holding api-tokens:write', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, reader.secret);
        await row(page, 'deploy-bot').waitFor();
        assert.equal(await page.getByRole('button', { name: /^Regenerate token/ }).count(), 0);
        assert.equal(await page.getByRole('button', { name: /^Rename token/ }).count(), 0);
        // Nor the audit log: the nav offers it only with audit-events:read.
        assert.equal(await page.getByRole('link', { name: 'Audit log' }).isVisible(), false);
        await page.goto(`${base}/#/audit`);
        await page
          .getByRole('alert')
          .filter({ hasText: 'The audit log needs a token holding audit-events:read' })
          .waitFor();
        assert.equal(await page.locator('table').count(), 0);
      });

      await t.test('Rename: a merge patch of the name; a bad name is shown on the field', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, admin.secret);
        await page.getByRole('button', { name: 'Rename token deploy-bot' }).click();
        const dialog = page.getByRole('dialog', { name: 'Rename the token “deploy-bot”' });
        await dialog.waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'rename-name');
        await dialog.getByLabel('New name').fill('   ');
        await dialog.getByRole('button', { name: 'Save' }).click();
        await dialog.getByText('Give the token a name.').waitFor();
        await dialog.getByLabel('New name').fill('deploy\u202ebot');
        await dialog.getByRole('button', { name: 'Save' }).click();
        await dialog.locator('#rename-error:not(:empty)').waitFor();
        assert.equal(await dialog.getByLabel('New name').getAttribute('aria-invalid'), 'true');
        await dialog.getByLabel('New name').fill('deploy-bot (prod)');
        const [patch] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'PATCH'),
          dialog.getByRole('button', { name: 'Save' }).click(),
        ]);
        assert.equal(patch.url(), `${base}/api/v1/api-tokens/${deployBot.id}`);
        assert.equal(patch.headers()['content-type'], 'application/merge-patch+json');
        assert.deepEqual(patch.postDataJSON(), { name: 'deploy-bot (prod)' });
        await row(page, 'deploy-bot \\(prod\\)').waitFor();
        await page.waitForFunction(
          () => document.activeElement?.getAttribute('aria-label') === 'Rename token deploy-bot (prod)',
        );
        const me = (await (
          await fetch(`${base}/api/v1/api-tokens/current`, { headers: { authorization: `Bearer ${deployBot.secret}` } })
        ).json()) as { name: string };
        assert.equal(me.name, 'deploy-bot (prod)');
      });

      await t.test('the audit log lists the actions just made, newest first, and filters by action', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, admin.secret);
        await page.getByRole('link', { name: 'Audit log' }).click();
        await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
        const events = page.locator('tbody tr[data-event-id]');
        await events.first().waitFor();
        const top = async (n: number) =>
          (
            await events.evaluateAll((rows) =>
              rows.map((r) => [
                r.getAttribute('data-action'),
                r.querySelector('.actor-name')?.textContent,
                r.querySelector('.target-name')?.textContent,
              ]),
            )
          ).slice(0, n);
        assert.deepEqual(await top(4), [
          ['api_token.updated', 'admin', 'deploy-bot'],
          ['api_token.rotated', 'self', 'self'],
          ['api_token.rotated', 'admin', 'deploy-bot'],
          ['api_token.rotated', 'admin', 'deploy-bot'],
        ]);
        // Each action code stays on one line where the table has room.
        assert.deepEqual(
          await page
            .locator('code.audit-action')
            .evaluateAll((codes) =>
              codes
                .filter((c) => new Set(Array.from(c.getClientRects(), (r) => Math.round(r.top))).size !== 1)
                .map((c) => c.textContent),
            ),
          [],
        );
        const first = events.first();
        assert.equal(await first.locator('td[data-label="IP"]').textContent(), '127.0.0.1');
        assert.equal(await first.locator('.target-id').textContent(), deployBot.id);
        assert.match((await first.locator('th time').textContent()) ?? '', /UTC$/);
        await first.getByText('Details').click();
        assert.match(
          (await first.locator('dl').textContent()) ?? '',
          /changes\{"name":\{"from":"deploy-bot","to":"deploy-bot \(prod\)"\}\}/,
        );
        // Never a secret on the page.
        const html = await page.content();
        assert.ok(!html.includes(deployBot.secret) && !html.includes(admin.secret));
        await page.screenshot({ path: artifactPath('audit.png'), fullPage: true });

        const [filtered] = await Promise.all([
          page.waitForRequest((r) => r.url().includes('action=')),
          page.getByLabel('Action').selectOption('api_token.rotated'),
        ]);
        assert.match(filtered.url(), /\/api\/v1\/audit-events\?account_id=acc_\w+&action=api_token\.rotated$/);
        // Rows present and all of the action: while the filtered page loads, the table is
        // empty, and an empty table passes `every` (it did on Node 24 in .ci/run).
        await page.waitForFunction(() => {
          const rows = Array.from(document.querySelectorAll('tbody tr[data-event-id]'));
          return rows.length > 0 && rows.every((r) => r.getAttribute('data-action') === 'api_token.rotated');
        });
        assert.equal(await events.count(), 3);
        assert.equal(await page.getByRole('button', { name: 'Load more' }).isVisible(), false, 'one page holds them');
        await page.getByLabel('Action').selectOption('account.deleted');
        await page.getByText('No events of this action.').waitFor();
      });

      await t.test('Load more follows the Link header to the end of the trail', async (t) => {
        // 60 more events (30 is a page): tokens created, and every other one deleted, over the API.
        for (let i = 0; i < 40; i++) {
          const res = await fetch(`${base}/api/v1/api-tokens`, {
            method: 'POST',
            headers: { authorization: `Bearer ${admin.secret}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `bulk-${i}`, scopes: ['plans:read'] }),
          });
          assert.equal(res.status, 201);
          if (i % 2 === 0) {
            const { id } = (await res.json()) as { id: string };
            const gone = await fetch(`${base}/api/v1/api-tokens/${id}`, {
              method: 'DELETE',
              headers: { authorization: `Bearer ${admin.secret}` },
            });
            assert.equal(gone.status, 204);
          }
        }
        const all = (await (
          await fetch(`${base}/api/v1/audit-events?per_page=100`, {
            headers: { authorization: `Bearer ${admin.secret}` },
          })
        ).json()) as { id: string }[];
        assert.ok(all.length > 60 && all.length < 90, `${all.length} events: three pages`);

        const { page } = await open(t, browser, base);
        await signIn(page, base, admin.secret);
        await page.goto(`${base}/#/audit`);
        const events = page.locator('tbody tr[data-event-id]');
        await events.first().waitFor();
        assert.equal(await events.count(), 30, 'one page');
        const more = page.getByRole('button', { name: 'Load more' });
        const pages: string[] = [];
        while (await more.isVisible()) {
          const before = await events.count();
          const [res] = await Promise.all([page.waitForResponse((r) => r.url().includes('cursor=')), more.click()]);
          pages.push(res.url());
          await page.waitForFunction((n) => document.querySelectorAll('tbody tr[data-event-id]').length > n, before);
        }
        assert.equal(pages.length, Math.ceil(all.length / 30) - 1);
        for (const url of pages)
          assert.match(url, new RegExp(`^${base}/api/v1/audit-events\\?account_id=acc_\\w+&per_page=30&cursor=`));
        // Every event once, in the API's order (newest first); focus lands on what was added last.
        assert.deepEqual(
          await events.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id'))),
          all.map((e) => e.id),
        );
        assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'TH');
      });

      await t.test("an operator token with accounts:read may widen the log to every account's trail", async (t) => {
        const operator = await mintToken(app, ['accounts:write', 'audit-events:read'], 'ops');
        const created = await fetch(`${base}/api/v1/accounts`, {
          method: 'POST',
          headers: { ...operator.auth, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Delta' }),
        });
        assert.equal(created.status, 201);
        const delta = ((await created.json()) as { id: string }).id;
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/audit`);
        const events = page.locator('tbody tr[data-event-id]');
        await events.first().waitFor();
        // The signed-in account's trail first: Delta's creation is in Delta's.
        assert.equal(await page.getByLabel('Accounts').inputValue(), OPERATOR_ACCOUNT_ID);
        assert.equal(await page.locator('tr[data-action="account.created"]').count(), 0);
        assert.equal(await page.locator('th', { hasText: /^Account$/ }).count(), 0, 'one account: no Account column');
        const [all] = await Promise.all([
          page.waitForRequest((r) => r.url().startsWith(`${base}/api/v1/audit-events`)),
          page.getByLabel('Accounts').selectOption({ label: 'All accounts' }),
        ]);
        assert.equal(all.url(), `${base}/api/v1/audit-events`, 'no account_id: every account');
        const createdRow = page.locator('tr[data-action="account.created"]');
        await createdRow.waitFor();
        assert.equal(await createdRow.locator('.target-id').textContent(), delta);
        assert.equal(await createdRow.locator('.actor-name').textContent(), 'ops');
        // Every account's trail says whose each event is.
        assert.equal(await page.locator('thead th', { hasText: /^Account$/ }).count(), 1);
        assert.equal(await createdRow.locator('td[data-label="Account"]').textContent(), delta);
        assert.equal(
          await page.locator('tr[data-action="api_token.created"] td[data-label="Account"]').first().textContent(),
          OPERATOR_ACCOUNT_ID,
        );
      });

      await t.test('the audit log and the regenerate dialog pass axe, and fit a narrow screen', async (t) => {
        const { page } = await open(t, browser, base, { bypassCSP: true });
        await signIn(page, base, admin.secret);
        await page.goto(`${base}/#/audit`);
        await page.reload();
        await page.locator('tbody tr[data-event-id]').first().waitFor();
        await page.locator('tbody tr[data-event-id]').first().getByText('Details').click();
        const found = (await axeViolations(page)).map((v) => `audit: ${v}`);
        await page.goto(`${base}/#/tokens`);
        await page.getByRole('button', { name: 'Regenerate token self' }).click();
        await page.getByRole('dialog').waitFor();
        found.push(...(await axeViolations(page)).map((v) => `regenerate dialog: ${v}`));
        assert.deepEqual(found, []);

        const narrow = await open(t, browser, base, { width: 375 });
        await signIn(narrow.page, base, admin.secret);
        await narrow.page.goto(`${base}/#/audit`);
        await narrow.page.locator('tbody tr[data-event-id]').first().waitFor();
        assert.ok(
          await narrow.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
          'the audit log fits 375 px',
        );
        // On a narrow screen an action may break after its dot, never inside a word: each
        // side of the dot is on one line.
        assert.deepEqual(
          await narrow.page.locator('code.audit-action').evaluateAll((codes) =>
            codes.flatMap((c) =>
              Array.from(c.childNodes)
                .filter((n) => n.nodeType === Node.TEXT_NODE)
                .filter((n) => {
                  const range = document.createRange();
                  range.selectNodeContents(n);
                  return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size !== 1;
                })
                .map((n) => n.textContent),
            ),
          ),
          [],
        );
        await narrow.page.screenshot({ path: artifactPath('narrow-audit.png'), fullPage: true });
      });
    },
  );

  it(
    'token conditions: set at creation, shown in the list, Disable and Enable in one click, edited in a dialog',
    { skip, timeout: 180_000 },
    async (t) => {
      const browser = await launchChromium(executable!);
      t.after(() => browser.close());
      const { base, app } = await listening(t);
      const admin = await mintToken(app, ALL_SCOPES, 'admin');
      const view = async (id: string) =>
        (await (await fetch(`${base}/api/v1/api-tokens/${id}`, { headers: admin.auth })).json()) as {
          allowed_cidrs: string[] | null;
          not_before: string | null;
          enabled: boolean;
        };
      const conditions = (page: Page, name: string) => row(page, name).locator('td[data-label="Conditions"]');
      // Ten days ahead, to the minute (a datetime-local value, read as UTC).
      const soonLocal = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 16);
      const soon = `${soonLocal}:00Z`;
      const { page } = await open(t, browser, base);
      await signIn(page, base, admin.secret);
      assert.equal(await conditions(page, 'admin').textContent(), 'None');
      // The session's own token is not disabled in one click.
      assert.equal(await page.getByRole('button', { name: 'Disable token admin' }).count(), 0);
      assert.equal(await page.getByRole('button', { name: 'Conditions token admin' }).count(), 1);

      let id = '';
      await t.test(
        'create: networks, not before (UTC) and enabled are sent; a bad network lands on its field',
        async () => {
          await page.getByLabel('Name', { exact: true }).fill('edge');
          await page.locator('#scope-plans-read').check();
          assert.equal(await page.getByLabel('Enabled', { exact: true }).isChecked(), true, 'enabled by default');
          await page.getByLabel('Allowed networks').fill('10.0.0.0/8\nnot-a-network');
          await page.getByRole('button', { name: 'Create token' }).click();
          await page.locator('#new-cidrs-error:not(:empty)').waitFor();
          assert.equal(await page.getByLabel('Allowed networks').getAttribute('aria-invalid'), 'true');
          assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-cidrs');

          await page.getByLabel('Allowed networks').fill('10.0.0.0/8\n192.0.2.0/24, 2001:db8::/32');
          // After the expiry (the form's default, 90 days): the server's 422 lands on the field.
          await page.getByLabel('Not before (UTC)').fill('2030-01-01T09:30');
          await page.getByRole('button', { name: 'Create token' }).click();
          await page.locator('#new-not-before-error:not(:empty)').waitFor();
          assert.equal(await page.getByLabel('Not before (UTC)').getAttribute('aria-invalid'), 'true');
          assert.equal(await page.locator('#new-cidrs-error').textContent(), '', 'the networks are fine now');
          await page.getByLabel('Not before (UTC)').fill(soonLocal);
          const [post] = await Promise.all([
            page.waitForRequest((r) => r.method() === 'POST'),
            page.getByRole('button', { name: 'Create token' }).click(),
          ]);
          // The expiry is the form's default (90 days); enabled, the default, is left out.
          const { expires_at: _expiry, ...body } = post.postDataJSON() as Record<string, unknown>;
          assert.deepEqual(body, {
            name: 'edge',
            scopes: ['plans:read'],
            allowed_cidrs: ['10.0.0.0/8', '192.0.2.0/24', '2001:db8::/32'],
            not_before: soon,
          });
          await page.getByRole('heading', { name: 'Copy the token “edge” now' }).waitFor();
          id = (await row(page, 'edge').getAttribute('data-token-id')) ?? '';
          assert.equal(await conditions(page, 'edge').locator('li').count(), 2);
          assert.deepEqual(await conditions(page, 'edge').locator('li').allTextContents(), [
            'from 10.0.0.0/8 +2',
            `not before ${shortDate(soon)}`,
          ]);
          assert.equal(
            await conditions(page, 'edge').locator('li').first().getAttribute('title'),
            'Only from 10.0.0.0/8, 192.0.2.0/24, 2001:db8::/32',
          );
          assert.equal(await page.getByLabel('Allowed networks').inputValue(), '', 'the form is reset');
          assert.equal(await page.getByLabel('Enabled', { exact: true }).isChecked(), true);
          await page.getByRole('button', { name: 'Done, I have stored it' }).click();
        },
      );

      await t.test('Disable, then Enable: one click each, a merge patch of enabled, the list shows it', async () => {
        const [patch] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'PATCH'),
          page.getByRole('button', { name: 'Disable token edge' }).click(),
        ]);
        assert.equal(patch.url(), `${base}/api/v1/api-tokens/${id}`);
        assert.equal(patch.headers()['content-type'], 'application/merge-patch+json');
        assert.deepEqual(patch.postDataJSON(), { enabled: false });
        await conditions(page, 'edge').locator('li.disabled', { hasText: 'Disabled' }).waitFor();
        await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Enable token edge');
        assert.equal((await view(id)).enabled, false);
        await page.screenshot({ path: artifactPath('token-conditions.png'), fullPage: true });

        const [again] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'PATCH'),
          page.getByRole('button', { name: 'Enable token edge' }).click(),
        ]);
        assert.deepEqual(again.postDataJSON(), { enabled: true });
        await page.getByRole('button', { name: 'Disable token edge' }).waitFor();
        assert.equal(await conditions(page, 'edge').locator('li.disabled').count(), 0);
        assert.equal((await view(id)).enabled, true);
      });

      await t.test("Conditions: only what changed is sent, null clears, a bad network's 422 on the field", async () => {
        await page.getByRole('button', { name: 'Conditions token edge' }).click();
        const dialog = page.getByRole('dialog', { name: 'Conditions of the token “edge”' });
        await dialog.waitFor();
        assert.equal(
          await dialog.getByLabel('Allowed networks').inputValue(),
          '10.0.0.0/8\n192.0.2.0/24\n2001:db8::/32',
        );
        assert.equal(await dialog.getByLabel('Not before (UTC)').inputValue(), soonLocal);
        assert.equal(await dialog.getByLabel('Enabled', { exact: true }).isChecked(), true);
        await dialog.getByLabel('Allowed networks').fill('10.0.0.1/8');
        await dialog.getByRole('button', { name: 'Save' }).click();
        const error = dialog.locator('#cond-cidrs-error');
        await dialog.locator('#cond-cidrs-error:not(:empty)').waitFor();
        assert.match((await error.textContent()) ?? '', /10\.0\.0\.0\/8/, 'the detail names the network meant');
        assert.equal(await dialog.getByLabel('Allowed networks').getAttribute('aria-invalid'), 'true');
        await page.screenshot({ path: artifactPath('token-conditions-dialog.png') });

        await dialog.getByLabel('Allowed networks').fill('203.0.113.0/24');
        await dialog.getByLabel('Not before (UTC)').fill('');
        const [patch] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'PATCH'),
          dialog.getByRole('button', { name: 'Save' }).click(),
        ]);
        assert.equal(patch.headers()['content-type'], 'application/merge-patch+json');
        assert.deepEqual(patch.postDataJSON(), { allowed_cidrs: ['203.0.113.0/24'], not_before: null });
        await conditions(page, 'edge').getByText('from 203.0.113.0/24', { exact: true }).waitFor();
        assert.deepEqual(await conditions(page, 'edge').locator('li').allTextContents(), ['from 203.0.113.0/24']);
        await page.waitForFunction(
          () => document.activeElement?.getAttribute('aria-label') === 'Conditions token edge',
        );
        const after = await view(id);
        assert.deepEqual(after.allowed_cidrs, ['203.0.113.0/24']);
        assert.equal(after.not_before, null);

        // Emptying the networks clears them (anywhere).
        await page.getByRole('button', { name: 'Conditions token edge' }).click();
        await dialog.waitFor();
        await dialog.getByLabel('Allowed networks').fill('');
        const [clear] = await Promise.all([
          page.waitForRequest((r) => r.method() === 'PATCH'),
          dialog.getByRole('button', { name: 'Save' }).click(),
        ]);
        assert.deepEqual(clear.postDataJSON(), { allowed_cidrs: null });
        await conditions(page, 'edge').getByText('None', { exact: true }).waitFor();
        assert.equal((await view(id)).allowed_cidrs, null);
      });
    },
  );

  // The region filter (GET /plans?region=) and the catalog routes (GET /catalog,
  // GET /catalog/revisions), as the console uses them.
  it(
    'catalog lifecycle: plans by region, deprecation badges, the Catalog page of revisions',
    { skip, timeout: 180_000 },
    async (t) => {
      const browser = await launchChromium(executable!);
      t.after(() => browser.close());
      const { base, app } = await listening(t);
      const operator = await mintToken(app, ALL_SCOPES, 'operator');
      const reader = await mintToken(app, ['api-tokens:read', 'plans:read', 'images:read'], 'reader');

      // A catalog of its own (whatever the shipped default holds): one region offering two
      // plans, one image deprecated with a successor and a sunset a month ahead.
      const svc = app.infracat.catalog;
      const base0 = loadDefaultCatalog();
      const plain: Catalog = {
        ...base0,
        images: base0.images.map(({ deprecated_at: _d, sunset_at: _s, successor: _u, ...i }) => i),
        plans: base0.plans.map(({ deprecated_at: _d, sunset_at: _s, successor: _u, ...p }) => p),
        regions: base0.regions.map(
          ({ deprecated_at: _d, sunset_at: _s, successor: _u, plans: _p, images: _i, ...r }) => r,
        ),
      };
      // Newest first within a distribution: the older one is deprecated for the newer.
      const [newImage, oldImage] = plain.images.filter((i) => i.distribution === plain.images[0]!.distribution);
      const [, cheap, other] = plain.plans;
      const [where] = plain.regions;
      assert.ok(oldImage && newImage && cheap && other && where);
      const sunset = new Date(Date.now() + 30 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      const first: Catalog = {
        ...plain,
        images: plain.images.map((i) =>
          i.slug === oldImage.slug
            ? { ...i, deprecated_at: '2026-01-01T00:00:00Z', sunset_at: sunset, successor: newImage.slug }
            : i,
        ),
        regions: plain.regions.map((r) => (r.slug === where.slug ? { ...r, plans: [cheap.slug, other.slug] } : r)),
      };
      const v2 = await svc.apply(first, (await svc.plan(first)).baseVersion, TEST_CONTEXT);
      const second: Catalog = {
        ...first,
        plans: first.plans.map((p) => (p.slug === cheap.slug ? { ...p, price_cents: p.price_cents + 100 } : p)),
      };
      const v3 = await svc.apply(second, v2, TEST_CONTEXT);
      const badgeText = `Deprecated · replaced by ${newImage.slug} · sunset ${shortDate(sunset)}`;

      await t.test('the region selector lists what a region offers', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/plans`);
        const plans = page.locator('tbody tr[data-plan]');
        await plans.first().waitFor();
        const all = await plans.count();
        assert.equal(await page.locator('#plan-count').textContent(), `Showing ${all} of ${all} plans`);
        const [asked] = await Promise.all([
          page.waitForRequest((r) => r.url().includes('/api/v1/plans?')),
          page.getByLabel('Region').selectOption(where.slug),
        ]);
        assert.equal(asked.url(), `${base}/api/v1/plans?region=${where.slug}`);
        await page.getByText(`Showing 2 of 2 plans offered in ${where.name}`).waitFor();
        assert.deepEqual(
          (await plans.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-plan') ?? ''))).sort(),
          [cheap.slug, other.slug].sort(),
        );
        await page.screenshot({ path: artifactPath('plans-region.png'), fullPage: true });
        // The other filters apply within the region.
        await page.getByLabel('Type').selectOption('memory-optimized');
        assert.equal(await page.locator('#plan-count').textContent(), `Showing 0 of 2 plans offered in ${where.name}`);
        await page.getByRole('button', { name: 'Clear filters' }).click();
        await page.getByText(`Showing ${all} of ${all} plans`).waitFor();
      });

      await t.test('a deprecated image is badged with its successor and sunset', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, operator.secret);
        await page.goto(`${base}/#/images`);
        const badged = page.locator(`li[data-image="${oldImage.slug}"] .badge.deprecated`);
        await badged.waitFor();
        assert.equal(await badged.textContent(), badgeText);
        assert.equal(await page.locator('.badge.deprecated').count(), 1, 'only the deprecated image');
        await page.screenshot({ path: artifactPath('images-deprecated.png'), fullPage: true });
      });

      await t.test('a token without catalog:read: no badges, no error, no Catalog page in the nav', async (t) => {
        const { page } = await open(t, browser, base);
        const catalogAsked: string[] = [];
        page.on('request', (r) => {
          if (r.url().startsWith(`${base}/api/v1/catalog`)) catalogAsked.push(r.url());
        });
        await signIn(page, base, reader.secret);
        assert.equal(await page.getByRole('link', { name: 'Catalog' }).isVisible(), false);
        await page.goto(`${base}/#/images`);
        await page.locator(`li[data-image="${oldImage.slug}"]`).waitFor();
        await page.goto(`${base}/#/plans`);
        await page.locator('tbody tr[data-plan]').first().waitFor();
        assert.equal(await page.locator('.badge.deprecated').count(), 0);
        assert.equal(await page.getByRole('alert').filter({ hasText: /./ }).count(), 0);
        assert.deepEqual(catalogAsked, [], 'the catalog document is not even asked for');
        // Reached by its address anyway, the page says what is missing.
        await page.goto(`${base}/#/catalog`);
        await page.getByText('needs a token holding catalog:read').waitFor();
      });

      await t.test('the Catalog page lists the revisions, newest first', async (t) => {
        const { page } = await open(t, browser, base, { bypassCSP: true });
        await signIn(page, base, operator.secret);
        await page.getByRole('link', { name: 'Catalog' }).click();
        await page.getByRole('heading', { name: 'Catalog', level: 1 }).waitFor();
        const rows = page.locator('tbody tr[data-version]');
        await rows.first().waitFor();
        const versions = await rows.evaluateAll((r) => r.map((e) => Number(e.getAttribute('data-version'))));
        assert.deepEqual(versions.slice(0, 2), [v3, v2]);
        assert.deepEqual(
          versions,
          [...versions].sort((a, b) => b - a),
        );
        const latest = rows.first();
        // What each revision changed, counted per kind, after what else its summary says.
        assert.equal(await latest.locator('td[data-label="Changes"]').textContent(), '1 changed');
        assert.match(
          (await rows.last().locator('td[data-label="Changes"]').textContent()) ?? '',
          /^initial catalog · \+\d+ images, \+\d+ plans, \+\d+ regions, \d+ settings changed$/,
        );
        assert.equal(
          await latest.locator('td[data-label="Applied by"] .actor-name').textContent(),
          TEST_CONTEXT.actor.name ?? 'infracat CLI',
        );
        assert.match((await latest.locator('td[data-label="Applied"] time').getAttribute('datetime')) ?? '', /Z$/);
        await page.screenshot({ path: artifactPath('catalog-revisions.png'), fullPage: true });
        assert.deepEqual(
          (await axeViolations(page)).map((v) => `catalog: ${v}`),
          [],
        );
      });
    },
  );

  it(
    "a token's usage chart (7 days, valid and refused, counts on hover); the whole list ordered by last use",
    { skip, timeout: 180_000 },
    async (t) => {
      const browser = await launchChromium(executable!);
      t.after(() => browser.close());
      const { base, app } = await listening(t);
      const operator = await mintToken(app, ALL_SCOPES, 'operator');
      await mintToken(app, ['apps:read'], 'idle');
      // Enough never-used tokens that "busy", created last, is on the second page in creation order.
      for (let i = 0; i < 99; i++) await mintToken(app, ['apps:read'], `filler ${String(i).padStart(2, '0')}`);
      const busy = await mintToken(app, ['api-tokens:read'], 'busy');
      // Uses of "busy": valid ones and refusals for a scope it lacks.
      for (let i = 0; i < 6; i++)
        await app.inject({ method: 'GET', url: '/api/v1/api-tokens/current', headers: busy.auth });
      for (let i = 0; i < 2; i++) await app.inject({ method: 'GET', url: '/api/v1/audit-events', headers: busy.auth });
      await app.infracat.tokens.usage.flush();

      const { page } = await open(t, browser, base);
      await signIn(page, base, operator.secret);
      const names = async () => page.locator('tbody tr[data-token-id] .token-name').allTextContents();
      const shown = await names();
      assert.deepEqual(shown.slice(0, 3), ['operator', 'idle', 'filler 00'], 'oldest first');
      assert.equal(shown.length, 100, 'one page');
      assert.ok(!shown.includes('busy'), 'busy, created last, is on the next page');

      // Ordered by last use: the API orders the whole list, so busy comes from the second
      // page to the top (after the operator's token, this session's), never-used ones last.
      await app.infracat.tokens.lastUsed.flush();
      const sort = page.getByRole('button', { name: 'Last used' });
      await sort.click();
      await page.locator('th[aria-sort="descending"]').waitFor();
      assert.deepEqual((await names()).slice(0, 4), ['operator', 'busy', 'idle', 'filler 00']);
      assert.equal(
        await page.evaluate(() => document.activeElement?.getAttribute('data-sort')),
        'last_used',
        'focus stays on the header',
      );
      assert.match(
        (await row(page, 'busy').locator('td[data-label="Last used"]').textContent()) ?? '',
        /from 127\.0\.0\.1/,
      );
      // Load more follows on in the same order: the last never-used tokens, none shown twice.
      await page.locator('#tokens-more').click();
      await page.locator('tbody tr[data-token-id]').nth(101).waitFor();
      const all = await names();
      assert.equal(all.length, 102);
      assert.equal(new Set(all).size, 102, 'every token once');
      assert.deepEqual(all.slice(-2), ['filler 97', 'filler 98']);

      const toggle = row(page, 'busy').getByRole('button', { name: 'Usage of token busy' });
      await toggle.click();
      const chart = page.locator('tr[data-usage-of] svg.usage-chart');
      await chart.waitFor();
      assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
      assert.equal(await chart.getAttribute('aria-label'), 'Uses of busy in the last 7 days: 6 valid, 2 refused');
      const titles = await chart.locator('g.bar > title').allTextContents();
      assert.equal(titles.length, 1, 'one hour with uses');
      assert.match(titles[0]!, /^[A-Z][a-z]{2} \d{1,2}, \d{2}:00 UTC: 6 valid, 2 refused \(missing scope 2\)$/);
      assert.equal(await chart.locator('g.bar rect.valid').count(), 1);
      assert.ok(Number(await chart.locator('g.bar rect.refused').getAttribute('height')) > 0);
      assert.equal(await chart.locator('text.day-label').count(), 7, 'a date at each midnight');
      assert.equal(await chart.locator('image, use, foreignObject, [href]').count(), 0, 'drawn inline, nothing loaded');
      await chart.locator('g.bar').hover();
      await page.screenshot({ path: artifactPath('token-usage.png'), fullPage: true });
      await toggle.click();
      assert.equal(await chart.count(), 0, 'closed');
      assert.equal(await toggle.getAttribute('aria-expanded'), 'false');

      // A chart left open stays open under its token when the order changes back.
      await row(page, 'idle').getByRole('button', { name: 'Usage of token idle' }).click();
      await page.locator('tr[data-usage-of] svg.usage-chart').waitFor();
      await page.getByRole('button', { name: 'Last used' }).click();
      await page.locator('th[aria-sort="descending"]').waitFor({ state: 'detached' });
      assert.deepEqual((await names()).slice(0, 3), ['operator', 'idle', 'filler 00'], 'back to creation order');
      assert.ok(!(await names()).includes('busy'), 'one page again');
      await page.locator('tr[data-usage-of] svg.usage-chart').waitFor();
      const order = await page
        .locator('tbody tr')
        .evaluateAll((rows) =>
          rows.map((r) => (r as HTMLElement).dataset.tokenId ?? `usage of ${(r as HTMLElement).dataset.usageOf ?? ''}`),
        );
      const idle = await page.locator('tbody tr[data-token-id]').nth(1).getAttribute('data-token-id');
      assert.equal(order.indexOf(`usage of ${idle}`), order.indexOf(idle!) + 1, 'the chart stays under its token');
      assert.equal(
        await row(page, 'idle').getByRole('button', { name: 'Usage of token idle' }).getAttribute('aria-expanded'),
        'true',
      );
    },
  );

  it(
    'webhooks: create (secret once), a verified test delivery, rotate, disable, delete; read-only sees no writes',
    { skip, timeout: 180_000 },
    async (t) => {
      const browser = await launchChromium(executable!);
      t.after(() => browser.close());
      const { base, app } = await listening(t, RECEIVER_ENV);
      app.infracat.webhooks.worker.start();
      const r = await receiver(t);
      const writer = await mintToken(app, ['webhooks:read', 'webhooks:write'], 'hooks');
      const reader = await mintToken(app, ['webhooks:read'], 'hooks-reader');
      const plain = await mintToken(app, ['plans:read'], 'plain');
      const hookRow = (page: Page) => page.locator('tr[data-webhook-id]').filter({ hasText: 'deploys' });

      let secret = '';
      let webhookId = '';
      await t.test('create: pick events, the signing secret shown once; a refused URL on its field', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, writer.secret);
        await page.getByRole('link', { name: 'Webhooks' }).click();
        await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
        await page.getByText('No webhooks.').waitFor();
        // One box per event type the server knows.
        assert.equal(await page.locator('input[name="event"]').count(), 13);

        // Nothing chosen: said on the fields, nothing sent.
        await page.getByRole('button', { name: 'Create webhook' }).click();
        await page.getByText('Give the URL events are sent to.').waitFor();
        await page.getByText('Choose at least one event.').waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-url');

        // The server refuses a URL with a password: its detail goes next to the field.
        await page.getByLabel('URL', { exact: true }).fill('https://user:pw@hooks.example.com/x');
        await page.locator('#event-api_token-created').check();
        await page.getByRole('button', { name: 'Create webhook' }).click();
        await page.locator('#new-url-error:not(:empty)').waitFor();
        assert.equal(await page.getByLabel('URL', { exact: true }).getAttribute('aria-invalid'), 'true');
        assert.equal(await page.locator('tr[data-webhook-id]').count(), 0);

        await page.getByLabel('URL', { exact: true }).fill(r.url);
        await page.getByLabel('Description').fill('deploys');
        await page.locator('#event-api_token-expiring').check();
        const [created] = await Promise.all([
          page.waitForRequest((q) => q.method() === 'POST' && q.url() === `${base}/api/v1/webhooks`),
          page.getByRole('button', { name: 'Create webhook' }).click(),
        ]);
        assert.deepEqual(created.postDataJSON(), {
          url: r.url,
          events: ['api_token.created', 'api_token.expiring'],
          description: 'deploys',
        });
        await page.getByRole('heading', { name: 'Copy the signing secret of “deploys” now' }).waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'secret-heading');
        assert.match((await page.locator('#secret-warning').textContent()) ?? '', /only time it is shown/);
        secret = await page.getByLabel('Signing secret', { exact: true }).inputValue();
        assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
        await page.getByRole('button', { name: 'Copy' }).click();
        await page.getByText('Copied to the clipboard.').waitFor();
        assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);

        await hookRow(page).waitFor();
        webhookId = (await hookRow(page).getAttribute('data-webhook-id')) ?? '';
        assert.match(webhookId, /^whk_/);
        assert.equal(await hookRow(page).locator('code.webhook-url').textContent(), r.url);
        assert.deepEqual(await hookRow(page).locator('ul.tags li').allTextContents(), [
          'api_token.created',
          'api_token.expiring',
        ]);
        assert.equal(await hookRow(page).locator('.webhook-state').textContent(), 'Enabled');
        await page.screenshot({ path: artifactPath('webhook-created.png'), fullPage: true });

        // Done: the secret is gone from the page, and the list never had it.
        await page.getByRole('button', { name: 'Done, I have stored it' }).click();
        assert.equal(await page.locator('#new-secret').count(), 0);
        assert.ok(!(await page.content()).includes(secret), 'the secret is gone from the page');
        await page.reload();
        await hookRow(page).waitFor();
        assert.ok(!(await page.content()).includes(secret), 'nor shown after a reload');
      });

      await t.test('send a test: the delivery log shows it delivered, the receiver verifies it', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, writer.secret);
        await page.goto(`${base}/#/webhooks`);
        const [queued] = await Promise.all([
          page.waitForResponse((res) => res.url() === `${base}/api/v1/webhooks/${webhookId}/test`),
          page.getByRole('button', { name: 'Send test webhook deploys' }).click(),
        ]);
        assert.equal(queued.status(), 202);
        const { event_id: eventId } = (await queued.json()) as { event_id: string };
        const attempt = page.locator(`tr.deliveries-row tr[data-event-id="${eventId}"]`);
        await attempt.waitFor();
        assert.equal(await attempt.locator('code.event-type').textContent(), 'webhook.test');
        assert.equal(await attempt.locator('code.event-id').textContent(), eventId);
        assert.equal(await attempt.locator('td[data-label="Attempt"]').textContent(), '1');
        assert.equal(await attempt.getAttribute('data-outcome'), 'succeeded');
        assert.equal(await attempt.locator('.outcome').textContent(), 'Succeeded', 'said in words, not by colour');
        assert.match((await attempt.locator('.response').textContent()) ?? '', /^HTTP 2\d\d$/);
        assert.match((await attempt.locator('td[data-label="Duration"]').textContent()) ?? '', /^\d+ ms$|^\d+\.\d s$/);
        await page
          .locator('tr.deliveries-row .test-status')
          .filter({ hasText: /^Test event to deploys: succeeded, HTTP 2\d\d$/ })
          .waitFor();
        assert.equal(
          await page
            .getByRole('button', { name: 'Deliveries of webhook deploys', exact: true })
            .getAttribute('aria-expanded'),
          'true',
        );
        await page.screenshot({ path: artifactPath('webhook-deliveries.png'), fullPage: true });

        // The receiver really got it, signed with the secret the page showed.
        assert.equal(r.received.length, 1);
        const request = r.received[0]!;
        assert.equal(request.headers['webhook-id'], eventId);
        const payload = verified(secret, request);
        assert.equal(payload.type, 'webhook.test');
        assert.deepEqual(payload.data.target, { type: 'webhook', id: webhookId, name: 'deploys' });
      });

      await t.test('rotate the secret: the new one shown once; then disable and delete', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, writer.secret);
        await page.goto(`${base}/#/webhooks`);
        await page.getByRole('button', { name: 'Rotate secret webhook deploys' }).click();
        const rotate = page.getByRole('dialog', { name: 'Rotate the signing secret of “deploys”?' });
        await rotate.getByRole('button', { name: 'Rotate the secret' }).click();
        await page.getByRole('heading', { name: 'Copy the signing secret of “deploys” now' }).waitFor();
        const fresh = await page.getByLabel('Signing secret', { exact: true }).inputValue();
        assert.match(fresh, /^whsec_/);
        assert.notEqual(fresh, secret);
        assert.match(
          (await page.locator('#secret-note').textContent()) ?? '',
          /^The previous secret also signs until /,
        );
        await page.getByRole('button', { name: 'Done, I have stored it' }).click();
        await hookRow(page).locator('.webhook-note').filter({ hasText: 'The previous secret also signs' }).waitFor();

        await page.getByRole('button', { name: 'Disable webhook deploys' }).click();
        await page.getByRole('button', { name: 'Enable webhook deploys' }).waitFor();
        await page.waitForFunction(
          () => document.activeElement?.getAttribute('aria-label') === 'Enable webhook deploys',
        );
        assert.equal(await hookRow(page).locator('.webhook-state').textContent(), 'Disabled');
        assert.equal(await page.getByRole('button', { name: 'Send test webhook deploys' }).count(), 0);
        const got = await fetch(`${base}/api/v1/webhooks/${webhookId}`, { headers: writer.auth });
        assert.equal(((await got.json()) as { enabled: boolean }).enabled, false);

        await page.getByRole('button', { name: 'Delete webhook deploys' }).click();
        const dialog = page.getByRole('dialog', { name: 'Delete the webhook “deploys”?' });
        await dialog.waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel');
        await dialog.getByRole('button', { name: 'Delete the webhook' }).click();
        await page.getByText('No webhooks.').waitFor();
        const gone = await fetch(`${base}/api/v1/webhooks/${webhookId}`, { headers: writer.auth });
        assert.equal(gone.status, 404);
      });

      await t.test('webhooks:read alone: the list and delivery logs, no create or write controls', async (t) => {
        const made = await fetch(`${base}/api/v1/webhooks`, {
          method: 'POST',
          headers: { ...writer.auth, 'content-type': 'application/json' },
          body: JSON.stringify({ url: r.url, events: ['account.updated'], description: 'deploys' }),
        });
        assert.equal(made.status, 201);
        const { page } = await open(t, browser, base, { bypassCSP: true });
        await signIn(page, base, reader.secret);
        await page.getByRole('link', { name: 'Webhooks' }).click();
        await hookRow(page).waitFor();
        assert.equal(await page.getByRole('heading', { name: 'Create a webhook' }).count(), 0);
        assert.equal(await page.locator('form input[name="event"]').count(), 0);
        assert.equal(
          await page
            .locator(
              'button[data-action="test"], button[data-action="disable"], button[data-action="enable"], ' +
                'button[data-action="rotate"], button[data-action="delete"]',
            )
            .count(),
          0,
        );
        await page.getByRole('button', { name: 'Deliveries of webhook deploys', exact: true }).click();
        await page.locator('tr.deliveries-row').getByText('No deliveries yet.').waitFor();
        assert.deepEqual(await axeViolations(page), [], 'the Webhooks page passes axe');
      });

      await t.test('a token without webhooks:read is not offered the page', async (t) => {
        const { page } = await open(t, browser, base);
        await signIn(page, base, plain.secret);
        assert.equal(await page.getByRole('link', { name: 'Webhooks' }).isVisible(), false);
        await page.goto(`${base}/#/webhooks`);
        await page
          .getByRole('alert')
          .filter({ hasText: 'The Webhooks page needs a token holding webhooks:read' })
          .waitFor();
        assert.equal(await page.locator('table').count(), 0);
      });
    },
  );
});
