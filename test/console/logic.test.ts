// The console's pure logic (web/src), run in Node: formatting, plan filters and sorting,
// what each API refusal is turned into for a person, token regeneration, the audit log
// and the Link header that pages it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { AUDIT_ACTIONS as SERVER_AUDIT_ACTIONS } from '../../src/audit/events.js';
import { GRACE_MAX_S } from '../../src/tokens/limits.js';
import { accountActions, scopeOffer, statusLabel } from '../../web/src/accounts.js';
import { actorOf, AUDIT_ACTIONS, auditPath, detailLines, targetOf } from '../../web/src/audit.js';
import { linkTargets, nextPageUrl } from '../../web/src/links.js';
import { nextPageLink } from '../../src/tokens/query.js';
import {
  cidrsText,
  conditionLabels,
  conditionsPatch,
  GRACE_CHOICES,
  graceFrom,
  notBeforeFrom,
  notBeforeLocal,
  parseCidrs,
  rotationNote,
  tokenActions,
  tokenListPath,
} from '../../web/src/tokens.js';
import {
  exactTime,
  expiryFrom,
  isExpired,
  memory,
  price,
  relativeTime,
  revisionChanges,
  revisionNote,
} from '../../web/src/format.js';
import { filterPlans, nextSort, numberOrNull, sortPlans, type Plan } from '../../web/src/plans.js';
import { ApiError, fieldErrors, messageFor } from '../../web/src/problems.js';
import { isRoute, parseRoute } from '../../web/src/route.js';
import { TokenSort } from '../../src/tokens/schemas.js';
import { USAGE_REASONS } from '../../src/tokens/usage-reasons.js';
import { WEBHOOK_EVENT_TYPES as SERVER_EVENT_TYPES } from '../../src/webhooks/events.js';
import { EventType } from '../../src/webhooks/schemas.js';
import {
  createBody,
  deliveriesPath,
  deliveryOutcome,
  durationText,
  eventGroups,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_EVENTS,
  webhookActions,
  webhookName,
  webhookState,
} from '../../web/src/webhooks.js';
import { barLabel, CHART_HOURS, usageChart } from '../../web/src/usage.js';

const NOW = Date.parse('2026-11-21T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

describe('console formatting', () => {
  it('relative times pick the largest whole unit', () => {
    assert.equal(relativeTime(ago(5), NOW), 'just now');
    assert.equal(relativeTime(ago(-5), NOW), 'in a few seconds');
    assert.equal(relativeTime(ago(90), NOW), '1 minute ago');
    assert.equal(relativeTime(ago(3 * 3600), NOW), '3 hours ago');
    assert.equal(relativeTime(ago(86_400), NOW), 'yesterday');
    assert.equal(relativeTime(ago(-400 * 86_400), NOW), 'next year');
    assert.equal(relativeTime(ago(800 * 86_400), NOW), '2 years ago');
  });

  it('whole days up to a year, never weeks or months: an expiry chosen as "90 days" reads 90 days', () => {
    // A token created with the 90-day expiry, listed a few seconds later.
    const in90 = expiryFrom('90', '', NOW - 5_000)!;
    assert.equal(relativeTime(in90, NOW), 'in 90 days');
    assert.equal(relativeTime(ago(-90 * 86_400), NOW), 'in 90 days');
    assert.equal(relativeTime(ago(-30 * 86_400), NOW), 'in 30 days');
    assert.equal(relativeTime(ago(-7 * 86_400 + 60), NOW), 'in 7 days');
    assert.equal(relativeTime(ago(14 * 86_400), NOW), '14 days ago');
    assert.equal(relativeTime(ago(-364 * 86_400), NOW), 'in 364 days');
    assert.equal(relativeTime(ago(-365 * 86_400 + 5), NOW), 'next year');
  });

  it("a catalog revision's changes, counted per kind", () => {
    const none = { images: 0, plans: 0, regions: 0 };
    assert.equal(
      revisionChanges({
        settings: 0,
        added: { ...none, plans: 2 },
        removed: { ...none, images: 1 },
        changed: { images: 1, plans: 1, regions: 1 },
      }),
      '+2 plans, -1 image, 3 changed',
    );
    assert.equal(
      revisionChanges({ settings: 2, added: { ...none, regions: 1 }, removed: none, changed: none }),
      '+1 region, 2 settings changed',
    );
    assert.equal(revisionChanges({ settings: 1, added: none, removed: none, changed: none }), '1 setting changed');
    assert.equal(revisionChanges({ settings: 0, added: none, removed: none, changed: none }), 'no changes');
    assert.equal(revisionNote('rollback to version 3: 1 added, 0 changed, 0 removed'), 'rollback to version 3');
    assert.equal(revisionNote('initial catalog: 40 added, 0 changed, 0 removed'), 'initial catalog');
    assert.equal(revisionNote('1 added, 0 changed, 0 removed'), null);
    assert.equal(revisionNote(null), null);
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
    assert.equal(
      messageFor(
        err(409, {
          code: 'WEBHOOK_LIMIT_REACHED',
          detail: 'at most 20 webhooks may exist in an account; delete one first',
        }),
      ),
      'The limit on webhooks is reached: at most 20 webhooks may exist in an account; delete one first.',
    );
    assert.equal(
      messageFor(err(503, { code: 'WEBHOOKS_NOT_CONFIGURED', title: 'Webhooks are not configured' })),
      'Webhooks are not configured on this server: its operator has to set WEBHOOK_ENCRYPTION_KEYS first.',
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

  it("the token form offers held scopes, operator-only ones (server's flag) only into the operator account", () => {
    const holds = (scope: string) => ['accounts:read', 'apps:write', 'catalog:read', 'catalog:write'].includes(scope);
    const scope = (name: string, operatorOnly: boolean) => ({ scope: name, operator_only: operatorOnly });
    const refused = { enabled: false, reason: 'not in this account: operator account only' };
    assert.deepEqual(scopeOffer(scope('apps:write', false), holds, false), { enabled: true });
    assert.deepEqual(scopeOffer(scope('accounts:read', true), holds, true), { enabled: true });
    assert.deepEqual(scopeOffer(scope('accounts:read', true), holds, false), refused);
    // catalog:write is operator-only; catalog:read is not: the flag decides, not the resource.
    assert.deepEqual(scopeOffer(scope('catalog:write', true), holds, false), refused);
    assert.deepEqual(scopeOffer(scope('catalog:write', true), holds, true), { enabled: true });
    assert.deepEqual(scopeOffer(scope('catalog:read', false), holds, false), { enabled: true });
    assert.deepEqual(scopeOffer(scope('plans:read', false), holds, true), {
      enabled: false,
      reason: 'your token lacks this scope',
    });
  });
});

describe('console token regeneration', () => {
  const holding =
    (...held: string[]) =>
    (scope: string) =>
      held.includes(scope);
  const live = { id: 'tok_a', expires_at: null, enabled: true };
  const expired = { ...live, expires_at: new Date(NOW - 1000).toISOString() };

  it('the write actions only with the write scope of the page; no Regenerate on an expired token', () => {
    assert.deepEqual(tokenActions(live, 'api-tokens:write', holding('api-tokens:write'), NOW), [
      'rename',
      'conditions',
      'disable',
      'regenerate',
    ]);
    assert.deepEqual(tokenActions(live, 'api-tokens:write', holding('api-tokens:read'), NOW), []);
    // An account's page needs accounts:write, whatever the token holds on its own tokens.
    assert.deepEqual(tokenActions(live, 'accounts:write', holding('api-tokens:write', 'accounts:read'), NOW), []);
    assert.deepEqual(tokenActions(live, 'accounts:write', holding('accounts:write'), NOW), [
      'rename',
      'conditions',
      'disable',
      'regenerate',
    ]);
    assert.deepEqual(tokenActions(expired, 'api-tokens:write', holding('api-tokens:write'), NOW), [
      'rename',
      'conditions',
      'disable',
    ]);
    assert.deepEqual(
      tokenActions(
        { ...live, expires_at: new Date(NOW + 60_000).toISOString() },
        'api-tokens:write',
        holding('api-tokens:write'),
        NOW,
      ),
      ['rename', 'conditions', 'disable', 'regenerate'],
    );
  });

  it("a disabled token offers Enable; the session's own token is not disabled in one click", () => {
    const write = holding('api-tokens:write');
    assert.deepEqual(tokenActions({ ...live, enabled: false }, 'api-tokens:write', write, NOW), [
      'rename',
      'conditions',
      'enable',
      'regenerate',
    ]);
    assert.deepEqual(tokenActions(live, 'api-tokens:write', write, NOW, 'tok_a'), [
      'rename',
      'conditions',
      'regenerate',
    ]);
    assert.deepEqual(tokenActions(live, 'api-tokens:write', write, NOW, 'tok_b'), [
      'rename',
      'conditions',
      'disable',
      'regenerate',
    ]);
    // Disabled meanwhile (the CLI, another console): enabling it again is offered.
    assert.deepEqual(tokenActions({ ...live, enabled: false }, 'api-tokens:write', write, NOW, 'tok_a'), [
      'rename',
      'conditions',
      'enable',
      'regenerate',
    ]);
  });

  it('the grace choices are none (first, the default), 1 hour and 1 day, all within what the server takes', () => {
    assert.deepEqual(
      GRACE_CHOICES.map((c) => c.seconds),
      [0, 3600, 86_400],
    );
    assert.match(GRACE_CHOICES[0]!.label, /^None: the old secret stops working at once$/);
    for (const c of GRACE_CHOICES) assert.ok(c.seconds >= 0 && c.seconds <= GRACE_MAX_S);
    assert.equal(graceFrom('0'), 0);
    assert.equal(graceFrom('3600'), 3600);
    assert.equal(graceFrom('86400'), 86_400);
    // Only what was offered: anything else is not sent.
    for (const v of ['', '60', '-1', '1e3', ' 0', '0x0', '86401', 'none']) assert.equal(graceFrom(v), null, v);
  });

  it('says what became of the old secret, and that this session moved to the new one', () => {
    assert.equal(rotationNote(0, false, NOW), 'The old secret no longer works.');
    assert.equal(
      rotationNote(3600, false, NOW),
      'The old secret keeps working until 21 Nov 2026, 13:00:00 UTC, then is refused.',
    );
    assert.equal(
      rotationNote(0, true, NOW),
      'The old secret no longer works. This session signs in with this token: it now uses the new secret.',
    );
    assert.match(rotationNote(86_400, true, NOW), /until 22 Nov 2026, 12:00:00 UTC, then is refused\. This session/);
  });
});

describe('console token conditions', () => {
  const open = { allowed_cidrs: null, not_before: null, enabled: true };

  it('labels a token by what limits it: disabled, networks (the first and how many more), a future not_before', () => {
    assert.deepEqual(conditionLabels(open, NOW), []);
    assert.deepEqual(
      conditionLabels(
        {
          allowed_cidrs: ['10.0.0.0/8', '192.0.2.0/24', '2001:db8::/32'],
          not_before: '2027-01-01T09:30:00Z',
          enabled: false,
        },
        Date.parse('2026-11-21T00:00:00Z'),
      ),
      [
        { kind: 'disabled', text: 'Disabled' },
        { kind: 'networks', text: 'from 10.0.0.0/8 +2', title: 'Only from 10.0.0.0/8, 192.0.2.0/24, 2001:db8::/32' },
        { kind: 'not-before', text: 'not before 1 Jan 2027', title: 'Refused until 1 Jan 2027, 09:30:00 UTC' },
      ],
    );
    assert.deepEqual(conditionLabels({ ...open, allowed_cidrs: ['203.0.113.7/32'] }, NOW), [
      { kind: 'networks', text: 'from 203.0.113.7/32', title: 'Only from 203.0.113.7/32' },
    ]);
    // A not_before already past limits nothing.
    assert.deepEqual(conditionLabels({ ...open, not_before: new Date(NOW - 1000).toISOString() }, NOW), []);
  });

  it('reads networks one per line or comma-separated; nothing typed is null (anywhere)', () => {
    assert.deepEqual(parseCidrs('10.0.0.0/8\n 192.0.2.0/24 ,2001:db8::/32,\n\n'), [
      '10.0.0.0/8',
      '192.0.2.0/24',
      '2001:db8::/32',
    ]);
    assert.deepEqual(parseCidrs('10.0.0.1/8'), ['10.0.0.1/8'], 'judging it is the server’s');
    assert.equal(parseCidrs(''), null);
    assert.equal(parseCidrs(' \n , '), null);
    assert.equal(cidrsText(['10.0.0.0/8', '::1/128']), '10.0.0.0/8\n::1/128');
    assert.equal(cidrsText(null), '');
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[0-9a-f.:/]+$/), { maxLength: 5 }), (cidrs) => {
        assert.deepEqual(parseCidrs(cidrsText(cidrs)), cidrs.length === 0 ? null : cidrs);
      }),
    );
  });

  it('a datetime-local value is UTC, and back', () => {
    assert.equal(notBeforeFrom(''), null);
    assert.equal(notBeforeFrom('2027-01-01T09:30'), '2027-01-01T09:30:00Z');
    assert.equal(notBeforeFrom('2027-01-01T09:30:15'), '2027-01-01T09:30:15Z');
    assert.equal(notBeforeFrom('2027-01-01T09:30:15.250'), '2027-01-01T09:30:15Z');
    assert.equal(notBeforeFrom('tomorrow'), 'tomorrow', 'sent as typed, for the server to refuse');
    assert.equal(notBeforeLocal(null), '');
    assert.equal(notBeforeLocal('2027-01-01T09:30:00Z'), '2027-01-01T09:30');
    assert.equal(notBeforeLocal('2027-01-01T10:30:15+01:00'), '2027-01-01T09:30:15');
    for (const iso of ['2027-01-01T09:30:00Z', '2030-06-15T23:59:59Z']) {
      assert.equal(notBeforeFrom(notBeforeLocal(iso)), iso);
    }
  });

  it('the merge patch holds only what changed, null to clear', () => {
    const token = { allowed_cidrs: ['10.0.0.0/8'], not_before: '2027-01-01T09:30:00Z', enabled: true };
    assert.deepEqual(conditionsPatch(token, token), {});
    // The same instant written otherwise is no change.
    assert.deepEqual(conditionsPatch(token, { ...token, not_before: '2027-01-01T10:30:00+01:00' }), {});
    assert.deepEqual(conditionsPatch(token, { allowed_cidrs: null, not_before: null, enabled: false }), {
      allowed_cidrs: null,
      not_before: null,
      enabled: false,
    });
    assert.deepEqual(conditionsPatch(token, { ...token, allowed_cidrs: ['10.0.0.0/8', '192.0.2.0/24'] }), {
      allowed_cidrs: ['10.0.0.0/8', '192.0.2.0/24'],
    });
    assert.deepEqual(conditionsPatch(open, { ...open, not_before: '2027-02-01T00:00:00Z' }), {
      not_before: '2027-02-01T00:00:00Z',
    });
    assert.deepEqual(conditionsPatch(token, { ...token, not_before: 'soon' }), { not_before: 'soon' });
  });
});

describe('console audit log', () => {
  const event = {
    actor: { type: 'api_token' as const, id: 'tok_1', name: 'ci' },
    target: { type: 'account' as const, id: null, name: null },
  };

  it("offers exactly the server's actions", () => {
    assert.deepEqual([...AUDIT_ACTIONS], [...SERVER_AUDIT_ACTIONS]);
  });

  it("asks for the signed-in account's trail, one action or all", () => {
    const ACC = 'acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H';
    assert.equal(auditPath({ action: '', accountId: ACC }), `/audit-events?account_id=${ACC}`);
    assert.equal(
      auditPath({ action: 'api_token.rotated', accountId: ACC }),
      `/audit-events?account_id=${ACC}&action=api_token.rotated`,
    );
    // Every account (an operator token's choice): no account_id at all.
    assert.equal(auditPath({ action: '', accountId: null }), '/audit-events');
    assert.equal(auditPath({ action: 'catalog.applied', accountId: null }), '/audit-events?action=catalog.applied');
    // Not an action of the list: not sent.
    for (const action of ['nope', 'api_token', 'constructor', 'api_token.created&x=1'])
      assert.equal(auditPath({ action, accountId: null }), '/audit-events', action);
    // Whatever the id holds, it stays one parameter.
    assert.equal(auditPath({ action: '', accountId: 'a&action=x#y' }), '/audit-events?account_id=a%26action%3Dx%23y');
  });

  it("reads an event's actor, target and details", () => {
    assert.deepEqual(actorOf(event), { kind: 'API token', name: 'ci', id: 'tok_1' });
    assert.deepEqual(targetOf(event), { kind: 'Account', name: null, id: null });
    assert.deepEqual(actorOf({ actor: { type: 'cli', id: null, name: 'root' } }), {
      kind: 'infracat CLI',
      name: 'root',
      id: null,
    });
    assert.equal(
      actorOf({ actor: { type: 'secret_scanning', id: 'k1', name: 'GitHub secret scanning' } }).kind,
      'Secret scanning',
    );
    assert.equal(actorOf({ actor: { type: 'system', id: null, name: 'infracat' } }).kind, 'infracat');
    // The operator as a customer account sees it: no name, no id; the kind names it.
    assert.deepEqual(actorOf({ actor: { type: 'operator', id: null, name: null } }), {
      kind: 'Operator',
      name: null,
      id: null,
    });
    assert.equal(targetOf({ target: { type: 'catalog', id: 'v3', name: null } }).kind, 'Catalog');
    assert.deepEqual(
      detailLines({
        grace_period_s: 3600,
        previous_secret_valid_until: '2026-11-21T13:00:00.000Z',
        changes: { name: { from: 'a', to: 'b' } },
        expires_at: null,
      }),
      [
        ['grace_period_s', '3600'],
        ['previous_secret_valid_until', '2026-11-21T13:00:00.000Z'],
        ['changes', '{"name":{"from":"a","to":"b"}}'],
        ['expires_at', 'null'],
      ],
    );
    assert.deepEqual(detailLines({}), []);
  });
});

describe('console Link header (the next page of the audit log)', () => {
  const REQ = 'http://127.0.0.1:8080/api/v1/audit-events?account_id=acc_1';
  const next = (header: string | null) => nextPageUrl(header, REQ)?.href ?? null;

  it("follows the server's path-absolute next link, resolved against the request", () => {
    assert.equal(
      next('</api/v1/audit-events?account_id=acc_1&per_page=30&cursor=ZXZ0XzAx>; rel="next"'),
      'http://127.0.0.1:8080/api/v1/audit-events?account_id=acc_1&per_page=30&cursor=ZXZ0XzAx',
    );
    // A relative reference, an absolute URL on this origin, rel unquoted or among others.
    assert.equal(next('<?cursor=abc>; rel=next'), 'http://127.0.0.1:8080/api/v1/audit-events?cursor=abc');
    assert.equal(
      next('<http://127.0.0.1:8080/api/v1/audit-events?cursor=abc>; rel="next"'),
      'http://127.0.0.1:8080/api/v1/audit-events?cursor=abc',
    );
    assert.equal(
      next(
        '</api/v1/audit-events?cursor=a,b;c>; title="x, y; z"; rel="prev", ' +
          '</api/v1/audit-events?cursor=n>; REL="last NEXT"',
      ),
      'http://127.0.0.1:8080/api/v1/audit-events?cursor=n',
    );
    assert.equal(
      next('</api/v1/audit-events?cursor=n#frag>; rel="next"'),
      'http://127.0.0.1:8080/api/v1/audit-events?cursor=n',
    );
  });

  it('no next page: no header, no rel=next, or only other relations', () => {
    assert.equal(next(null), null);
    assert.equal(next(''), null);
    assert.equal(next('</api/v1/audit-events?cursor=a>; rel="prev"'), null);
    assert.equal(next('</api/v1/audit-events?cursor=a>; rel="nextpage"'), null);
    assert.equal(next('</api/v1/audit-events?cursor=a>'), null);
  });

  it('refuses a link it cannot trust: another origin or path, credentials, several next links, malformed', () => {
    for (const header of [
      '<https://evil.example/api/v1/audit-events?cursor=a>; rel="next"',
      '<//evil.example/api/v1/audit-events>; rel="next"',
      '<http://127.0.0.1:8081/api/v1/audit-events?cursor=a>; rel="next"',
      '<https://127.0.0.1:8080/api/v1/audit-events?cursor=a>; rel="next"',
      '</api/v1/api-tokens>; rel="next"',
      '</api/v1/audit-events/../api-tokens>; rel="next"',
      '<../api-tokens?cursor=a>; rel="next"',
      '<http://user:pw@127.0.0.1:8080/api/v1/audit-events>; rel="next"',
      '<javascript:alert(1)>; rel="next"',
      '</api/v1/audit-events?cursor=a>; rel="next", </api/v1/audit-events?cursor=b>; rel="next"',
      '/api/v1/audit-events?cursor=a; rel="next"',
      '</api/v1/audit-events?cursor=a; rel="next"',
      '</api/v1/audit-events?cursor=a>; rel="next',
      '</api/v1/audit-events?cursor=a>; rel="next" junk',
      '</api/v1/audit-events?cursor=a>; ="next"',
    ]) {
      assert.equal(next(header), null, header);
    }
  });

  it('reads every link-value of a list, quoted parameters with escapes included', () => {
    assert.deepEqual(linkTargets('<a>; rel="next", <b>; rel=next; x="\\"\\""', 'next'), ['a', 'b']);
    assert.deepEqual(linkTargets('<a>; rel="first prev"', 'prev'), ['a']);
    assert.deepEqual(linkTargets('<a>;rel=next,<b>;rel=last', 'last'), ['b']);
    assert.equal(linkTargets('<a>; rel="next" <b>', 'next'), null);
  });

  it('property: any cursor and filters the server percent-encodes come back exactly', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('account_id', 'action', 'target_id', 'since', 'until', 'cursor'), fc.string()),
        (params) => {
          const query = new URLSearchParams(params).toString();
          const url = nextPageUrl(`</api/v1/audit-events?${query}>; rel="next"`, REQ);
          assert.ok(url !== null);
          assert.equal(url.origin, 'http://127.0.0.1:8080');
          assert.equal(url.pathname, '/api/v1/audit-events');
          assert.deepEqual(Object.fromEntries(url.searchParams), { ...params });
        },
      ),
    );
  });

  it('property: a header never yields a link off this origin and path', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'<>;,="\\ /:.?#@a-zAZ%09'.split('')) }), (header) => {
        const url = nextPageUrl(header, REQ);
        if (url !== null) {
          assert.equal(url.origin, 'http://127.0.0.1:8080');
          assert.equal(url.pathname, '/api/v1/audit-events');
        }
      }),
    );
  });
});

describe('console Link header of the token and account lists (Load more)', () => {
  const ORIGIN = 'http://127.0.0.1:8080';
  const ACCOUNT = 'acc_01JD3X5Y6Z7A8B9C0D1E2F3G4H';
  const at = { createdAt: 1_800_000_000_000, id: 'tok_01JD3X5Y6Z7A8B9C0D1E2F3G4H' };

  it("follows each list's own next link as the server writes it, filters and page size kept", () => {
    for (const [path, filters] of [
      ['/api/v1/api-tokens', {}],
      [`/api/v1/accounts/${ACCOUNT}/api-tokens`, {}],
      ['/api/v1/accounts', { status: 'suspended', external_id: 'cus 8/412&x' }],
    ] as const) {
      const header = nextPageLink(path, filters, 100, at);
      const url = nextPageUrl(header, `${ORIGIN}${path}`);
      assert.ok(url !== null, header);
      assert.equal(url.pathname, path);
      const params = Object.fromEntries(url.searchParams);
      assert.deepEqual(params, { ...filters, per_page: '100', cursor: params.cursor });
      // The page after that one links on from there (the request URL is then the link itself).
      assert.equal(nextPageUrl(nextPageLink(path, filters, 100, at), url.href)?.pathname, path);
    }
  });

  it("never follows a link to another list: an account's tokens are not the caller's, nor the accounts", () => {
    const own = `${ORIGIN}/api/v1/api-tokens`;
    assert.equal(nextPageUrl(nextPageLink('/api/v1/accounts', {}, 100, at), own), null);
    assert.equal(nextPageUrl(nextPageLink(`/api/v1/accounts/${ACCOUNT}/api-tokens`, {}, 100, at), own), null);
    const theirs = `${ORIGIN}/api/v1/accounts/${ACCOUNT}/api-tokens`;
    assert.equal(nextPageUrl(nextPageLink('/api/v1/accounts/acc_other/api-tokens', {}, 100, at), theirs), null);
  });
});

describe('console token usage', () => {
  const H = 3_600_000;
  const NOW = Date.UTC(2026, 10, 27, 17, 42);
  const bucket = (hour: number, valid: number, byReason: Record<string, number> = {}) => ({
    hour: new Date(hour).toISOString(),
    valid,
    refused: Object.values(byReason).reduce((a, b) => a + b, 0),
    refused_by_reason: byReason,
  });

  it("the chart covers 7 days to now's hour: a bar per hour with a use, its slot, the tallest bar, the totals", () => {
    const thisHour = Date.UTC(2026, 10, 27, 17);
    const chart = usageChart(
      [
        bucket(thisHour - CHART_HOURS * H, 99), // eight days ago: outside
        bucket(thisHour - (CHART_HOURS - 1) * H, 1),
        bucket(thisHour - 30 * H, 12, { scope: 2, address: 1 }),
        bucket(thisHour, 4),
      ],
      NOW,
    );
    assert.equal(chart.from, thisHour - (CHART_HOURS - 1) * H);
    assert.deepEqual(
      chart.bars.map((b) => [b.slot, b.valid, b.refused]),
      [
        [0, 1, 0],
        [CHART_HOURS - 31, 12, 3],
        [CHART_HOURS - 1, 4, 0],
      ],
    );
    assert.equal(chart.max, 15);
    assert.deepEqual(chart.totals, { valid: 17, refused: 3 });
    assert.deepEqual(
      chart.days.map((d) => d.label),
      ['Nov 21', 'Nov 22', 'Nov 23', 'Nov 24', 'Nov 25', 'Nov 26', 'Nov 27'],
    );
    assert.equal(chart.days[0]!.slot, 6, 'midnight of Nov 21 is 6 hours after the first hour, 18:00 on Nov 20');
    assert.equal(usageChart([], NOW).max, 1, 'an empty chart');
  });

  it('a bar says its hour and counts, each reason in words', () => {
    assert.equal(
      barLabel(bucket(Date.UTC(2026, 10, 27, 17), 12, { scope: 2, address: 1 })),
      'Nov 27, 17:00 UTC: 12 valid, 3 refused (missing scope 2, address not allowed 1)',
    );
    assert.equal(barLabel(bucket(Date.UTC(2026, 0, 2, 3), 1)), 'Jan 2, 03:00 UTC: 1 valid, 0 refused');
    for (const reason of USAGE_REASONS) {
      assert.match(barLabel(bucket(0, 0, { [reason]: 1 })), /\(([a-z]+ )+1\)$/, `${reason} in words`);
    }
  });

  it("the list by last use asks the API for it (its every page), by the API's own sort value", () => {
    assert.equal(tokenListPath('/api-tokens', 'created'), '/api-tokens');
    assert.equal(tokenListPath('/api-tokens', 'last_used'), '/api-tokens?sort=last_used_at');
    assert.equal(
      tokenListPath('/accounts/acc_1/api-tokens', 'last_used'),
      '/accounts/acc_1/api-tokens?sort=last_used_at',
    );
    const sorts = TokenSort.anyOf.map((literal) => literal.const as string);
    assert.ok(sorts.includes(new URLSearchParams(tokenListPath('', 'last_used').slice(1)).get('sort')!));
  });
});

describe('the Webhooks page', () => {
  const NOW = Date.UTC(2026, 10, 21, 12);
  const iso = (ms: number) => new Date(ms).toISOString();

  it("offers exactly the server's event types, in its order, each once and described", () => {
    assert.deepEqual([...WEBHOOK_EVENT_TYPES], [...SERVER_EVENT_TYPES]);
    assert.deepEqual([...WEBHOOK_EVENT_TYPES], (EventType as unknown as { enum: string[] }).enum, 'the OpenAPI enum');
    for (const e of WEBHOOK_EVENTS) assert.ok(e.description.length > 0, e.type);
    // The picker's groups hold every type once, in order within each group.
    assert.deepEqual(
      eventGroups().map((g) => g.resource),
      ['api_token', 'account'],
    );
    const grouped = eventGroups().flatMap((g) => g.events.map((e) => e.type));
    assert.deepEqual([...grouped].sort(), [...WEBHOOK_EVENT_TYPES].sort());
    for (const g of eventGroups()) for (const e of g.events) assert.ok(e.type.startsWith(`${g.resource}.`));
  });

  it('names a webhook by its description, else its URL', () => {
    assert.equal(webhookName({ description: 'deploys', url: 'https://h.example/x' }), 'deploys');
    assert.equal(webhookName({ description: null, url: 'https://h.example/x' }), 'https://h.example/x');
  });

  it('offers write actions only with webhooks:write; a disabled webhook Enable and no test', () => {
    const writer = (scope: string) => scope === 'webhooks:write';
    const reader = (scope: string) => scope === 'webhooks:read';
    assert.deepEqual(webhookActions({ enabled: true }, writer), ['test', 'disable', 'rotate', 'delete']);
    assert.deepEqual(webhookActions({ enabled: false }, writer), ['enable', 'rotate', 'delete']);
    assert.deepEqual(webhookActions({ enabled: true }, reader), []);
    assert.deepEqual(
      webhookActions({ enabled: false }, () => false),
      [],
    );
  });

  it("says a webhook's state in words, with why it is off and what to know", () => {
    const base = { enabled: true, disabled_reason: null, failing_since: null, previous_secret_expires_at: null };
    assert.deepEqual(webhookState(base, NOW), { ok: true, text: 'Enabled', notes: [] });
    assert.deepEqual(webhookState({ ...base, enabled: false }, NOW), { ok: false, text: 'Disabled', notes: [] });
    assert.equal(
      webhookState({ ...base, enabled: false, disabled_reason: 'failing' }, NOW).text,
      'Disabled after failing for 24 hours',
    );
    assert.deepEqual(webhookState({ ...base, failing_since: iso(NOW - 3_600_000) }, NOW).notes, [
      'Failing since 21 Nov 2026, 11:00:00 UTC',
    ]);
    assert.deepEqual(webhookState({ ...base, previous_secret_expires_at: iso(NOW + 86_400_000) }, NOW).notes, [
      'The previous secret also signs until 22 Nov 2026, 12:00:00 UTC',
    ]);
    // A previous secret whose time is over signs nothing: not mentioned.
    assert.deepEqual(webhookState({ ...base, previous_secret_expires_at: iso(NOW - 1) }, NOW).notes, []);
  });

  it('reads a delivery attempt as succeeded or failed, with the answer or the error, and a retry', () => {
    const attempt = { delivered: true, status_code: 204, error: null, next_attempt_at: null };
    assert.deepEqual(deliveryOutcome(attempt, NOW), {
      ok: true,
      label: 'Succeeded',
      response: 'HTTP 204',
      detail: null,
      retry: null,
    });
    assert.deepEqual(
      deliveryOutcome(
        { delivered: false, status_code: 500, error: 'answered 500', next_attempt_at: iso(NOW + 300_000) },
        NOW,
      ),
      { ok: false, label: 'Failed', response: 'HTTP 500', detail: null, retry: 'Tried again in 5 minutes' },
    );
    assert.equal(
      deliveryOutcome(
        {
          delivered: false,
          status_code: 302,
          error: 'answered 302: redirects are not followed',
          next_attempt_at: null,
        },
        NOW,
      ).detail,
      'answered 302: redirects are not followed',
    );
    assert.deepEqual(
      deliveryOutcome({ delivered: false, status_code: null, error: 'connection refused', next_attempt_at: null }, NOW),
      { ok: false, label: 'Failed', response: 'connection refused', detail: null, retry: null },
    );
    assert.equal(
      deliveryOutcome({ delivered: false, status_code: null, error: null, next_attempt_at: null }, NOW).response,
      'No answer',
    );
  });

  it('durations, the delivery log path and the body of a creation', () => {
    assert.equal(durationText(0), '0 ms');
    assert.equal(durationText(85), '85 ms');
    assert.equal(durationText(1234), '1.2 s');
    assert.equal(
      deliveriesPath('whk_01JD3X5Y6Z7A8B9C0D1E2F3G4H'),
      '/webhooks/whk_01JD3X5Y6Z7A8B9C0D1E2F3G4H/deliveries',
    );
    assert.deepEqual(createBody(' https://h.example/x ', '  ', ['api_token.expiring', 'api_token.created']), {
      url: 'https://h.example/x',
      events: ['api_token.created', 'api_token.expiring'],
    });
    assert.deepEqual(createBody('https://h.example/x', 'deploys', ['account.deleted', 'nope']), {
      url: 'https://h.example/x',
      events: ['account.deleted'],
      description: 'deploys',
    });
  });
});
