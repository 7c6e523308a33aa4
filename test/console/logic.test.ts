// The console's pure logic (web/src), run in Node: formatting, plan filters and sorting,
// and what each API refusal is turned into for a person.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { accountActions, scopeOffer, statusLabel } from '../../web/src/accounts.js';
import { exactTime, expiryFrom, isExpired, memory, price, relativeTime } from '../../web/src/format.js';
import { filterPlans, nextSort, numberOrNull, sortPlans, type Plan } from '../../web/src/plans.js';
import { ApiError, fieldErrors, messageFor } from '../../web/src/problems.js';
import { isRoute, parseRoute } from '../../web/src/route.js';

const NOW = Date.parse('2026-11-21T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

describe('console formatting', () => {
  it('relative times pick the largest whole unit', () => {
    assert.equal(relativeTime(ago(5), NOW), 'just now');
    assert.equal(relativeTime(ago(-5), NOW), 'in a few seconds');
    assert.equal(relativeTime(ago(90), NOW), '1 minute ago');
    assert.equal(relativeTime(ago(3 * 3600), NOW), '3 hours ago');
    assert.equal(relativeTime(ago(86_400), NOW), 'yesterday');
    assert.equal(relativeTime(ago(-30 * 86_400), NOW), 'next month');
    assert.equal(relativeTime(ago(-400 * 86_400), NOW), 'next year');
  });

  it("exact times are UTC whatever the viewer's zone", () => {
    assert.equal(exactTime('2026-11-21T22:30:05Z'), '21 Nov 2026, 22:30:05 UTC');
  });

  it('sizes and prices', () => {
    assert.equal(memory(512), '512 MB');
    assert.equal(memory(1024), '1 GB');
    assert.equal(memory(1536), '1.5 GB');
    assert.equal(price(6), '$6.00');
    assert.equal(price(1344.99), '$1,344.99');
  });

  it('expiry choices become RFC 3339 instants', () => {
    assert.equal(expiryFrom('never', '', NOW), null);
    assert.equal(expiryFrom('30', '', NOW), '2026-12-21T12:00:00Z');
    assert.equal(expiryFrom('custom', '2027-01-31', NOW), '2027-01-31T23:59:59Z');
    assert.equal(expiryFrom('custom', '', NOW), '', 'no date chosen yet');
  });

  it('a token whose expires_at has passed is expired (the list labels it)', () => {
    assert.equal(isExpired(null, NOW), false);
    assert.equal(isExpired(new Date(NOW - 1).toISOString(), NOW), true);
    assert.equal(isExpired(new Date(NOW).toISOString(), NOW), true, 'refused from that instant');
    assert.equal(isExpired(new Date(NOW + 1000).toISOString(), NOW), false);
  });
});

describe('console plans table', () => {
  const plan = (slug: string, type: Plan['type'], vcpus: number, memory_mb: number, price_monthly: number): Plan => ({
    id: slug,
    slug,
    type,
    vcpus,
    memory_mb,
    disk_gb: 25,
    transfer_tb: 1,
    price_monthly,
  });
  const plans = [
    plan('s-1', 'general', 1, 1024, 6),
    plan('c-2', 'cpu-optimized', 2, 4096, 42.5),
    plan('m-2', 'memory-optimized', 2, 16384, 84),
    plan('s-2', 'general', 2, 2048, 18),
  ];
  const any = { type: '', minVcpus: null, minMemoryGb: null, maxPrice: null };

  it('filters by type, vCPUs, memory (GB) and price, all at once', () => {
    assert.deepEqual(
      filterPlans(plans, any).map((p) => p.slug),
      ['s-1', 'c-2', 'm-2', 's-2'],
    );
    assert.deepEqual(
      filterPlans(plans, { ...any, type: 'general' }).map((p) => p.slug),
      ['s-1', 's-2'],
    );
    assert.deepEqual(
      filterPlans(plans, { ...any, minVcpus: 2, maxPrice: 50 }).map((p) => p.slug),
      ['c-2', 's-2'],
    );
    assert.deepEqual(
      filterPlans(plans, { ...any, minMemoryGb: 4 }).map((p) => p.slug),
      ['c-2', 'm-2'],
    );
    assert.deepEqual(filterPlans(plans, { ...any, maxPrice: 5 }), []);
  });

  it('sorts numbers numerically and text alphabetically, stable on ties', () => {
    assert.deepEqual(
      sortPlans(plans, { key: 'price_monthly', direction: 'descending' }).map((p) => p.slug),
      ['m-2', 'c-2', 's-2', 's-1'],
    );
    assert.deepEqual(
      sortPlans(plans, { key: 'vcpus', direction: 'ascending' }).map((p) => p.slug),
      ['s-1', 'c-2', 'm-2', 's-2'],
    );
    assert.deepEqual(
      sortPlans(plans, { key: 'slug', direction: 'ascending' }).map((p) => p.slug),
      ['c-2', 'm-2', 's-1', 's-2'],
    );
    assert.deepEqual(nextSort({ key: 'vcpus', direction: 'ascending' }, 'vcpus'), {
      key: 'vcpus',
      direction: 'descending',
    });
    assert.deepEqual(nextSort({ key: 'vcpus', direction: 'descending' }, 'slug'), {
      key: 'slug',
      direction: 'ascending',
    });
  });

  it('an empty or invalid number input means no filter', () => {
    assert.equal(numberOrNull(''), null);
    assert.equal(numberOrNull('-3'), null);
    assert.equal(numberOrNull('abc'), null);
    assert.equal(numberOrNull('24.5'), 24.5);
  });
});

describe('console messages for API refusals', () => {
  const err = (status: number, extra: Record<string, unknown> = {}, retry: number | null = null) =>
    new ApiError(status, { status, ...extra }, retry);

  it('says what each status means and what to do', () => {
    assert.match(messageFor(err(0)), /Cannot reach infracat/);
    assert.match(messageFor(err(401, { code: 'INVALID_TOKEN' })), /not accepted.*Sign in with a valid token/);
    assert.match(messageFor(err(401, { code: 'UNAUTHORIZED' })), /Sign in with an API token/);
    assert.equal(
      messageFor(err(403, { missing_scopes: ['api-tokens:read'] })),
      'This token lacks the api-tokens:read scope. ' +
        'Sign in with a token that holds it, or ask whoever manages your tokens.',
    );
    assert.match(messageFor(err(403, { missing_scopes: ['a:read', 'b:read'] })), /the a:read, b:read scopes/);
    assert.equal(
      messageFor(err(401, { code: 'INVALID_TOKEN', detail: "the token's account is suspended" })),
      "The token's account is suspended: its tokens are refused until the platform operator resumes it.",
    );
    assert.match(messageFor(err(401, { code: 'INVALID_TOKEN', detail: 'the token has expired' })), /not accepted/);
    assert.equal(
      messageFor(
        err(409, {
          code: 'OPERATOR_ACCOUNT',
          detail: 'the operator account cannot be suspended: it runs the other accounts',
        }),
      ),
      'Refused: the operator account cannot be suspended: it runs the other accounts.',
    );
    assert.equal(
      messageFor(err(409, { code: 'CONFLICT', detail: 'another account already has this external_id' })),
      'Conflict: another account already has this external_id.',
    );
    assert.match(
      messageFor(err(409, { code: 'TOKEN_LIMIT_REACHED', detail: 'at most 5 live tokens' })),
      /limit on live tokens is reached \(at most 5 live tokens\)\. Delete a token/,
    );
    assert.match(messageFor(err(422)), /see the messages next to them/);
    assert.equal(messageFor(err(429, {}, 1)), 'Too many requests. Try again in 1 second.');
    assert.equal(messageFor(err(429, {}, 42)), 'Too many requests. Try again in 42 seconds.');
    assert.match(messageFor(err(429)), /Wait a moment/);
    assert.equal(
      messageFor(err(503, { title: 'Service unavailable', request_id: 'r1' })),
      'infracat could not complete the request: Service unavailable (reference r1). Try again shortly.',
    );
  });

  it('field errors are grouped by the top-level field of their pointer', () => {
    const e = err(422, {
      errors: [
        { pointer: '/scopes/1', detail: 'unknown scope' },
        { pointer: '/scopes/2', detail: 'bad' },
        { pointer: '/name', detail: 'empty' },
      ],
    });
    assert.deepEqual(
      [...fieldErrors(e)],
      [
        ['scopes', ['unknown scope', 'bad']],
        ['name', ['empty']],
      ],
    );
  });
});

describe('console routes and accounts', () => {
  const pages = { tokens: { withId: false }, accounts: { withId: true } };
  const ACC = 'acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H';

  it('a fragment names a page, and an id only on a page that takes one', () => {
    assert.deepEqual(parseRoute('#/accounts', pages, 'tokens'), { page: 'accounts', id: null });
    assert.deepEqual(parseRoute(`#/accounts/${ACC}`, pages, 'tokens'), { page: 'accounts', id: ACC });
    for (const hash of [
      '',
      '#',
      '#main',
      '#/nope',
      '#/tokens/tok_1',
      '#/accounts/',
      '#/accounts/a/b',
      '#/constructor',
    ]) {
      assert.deepEqual(parseRoute(hash, pages, 'tokens'), { page: 'tokens', id: null }, hash);
    }
    // Nothing that would need decoding or could leave the API path reaches a view.
    for (const id of ['..', 'a%2Fb', 'a.b', 'a b', 'x'.repeat(65)]) {
      assert.deepEqual(parseRoute(`#/accounts/${id}`, pages, 'tokens'), { page: 'tokens', id: null }, id);
    }
    assert.equal(isRoute('#/plans'), true);
    assert.equal(isRoute(`#/accounts/${ACC}`), true);
    assert.equal(isRoute('#main'), false);
  });

  it('the operator account is offered no suspend or delete; others suspend or resume, and delete', () => {
    const OP = 'acc_00000000000000000000000000';
    assert.deepEqual(accountActions({ id: OP, status: 'active' }, OP), []);
    assert.deepEqual(accountActions({ id: ACC, status: 'active' }, OP), ['suspend', 'delete']);
    assert.deepEqual(accountActions({ id: ACC, status: 'suspended' }, OP), ['resume', 'delete']);
    assert.equal(statusLabel('active'), 'Active');
    assert.equal(statusLabel('suspended'), 'Suspended');
  });

  it('the token form offers a scope only if the token holds it, accounts:* only into the operator account', () => {
    const holds = (scope: string) => ['accounts:read', 'apps:write'].includes(scope);
    assert.deepEqual(scopeOffer('apps:write', holds, false), { enabled: true });
    assert.deepEqual(scopeOffer('accounts:read', holds, true), { enabled: true });
    assert.deepEqual(scopeOffer('accounts:read', holds, false), {
      enabled: false,
      reason: 'not in this account: operator account only',
    });
    assert.deepEqual(scopeOffer('plans:read', holds, true), { enabled: false, reason: 'your token lacks this scope' });
  });
});
