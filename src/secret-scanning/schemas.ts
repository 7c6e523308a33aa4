// Wire shapes of the secret-scanning endpoint, each declared once: GitHub's report (what
// its partner program sends) and the labels it expects back. Fastify validates and
// serialises by them, and the OpenAPI document shows them.
import { Type, type Static } from 'typebox';

/**
 * Most entries one report may hold: it bounds the revocations one request makes. Within the
 * 16 KiB body limit at most about 200 entries carrying infracat secrets fit, so for real reports the
 * body limit binds first; this cap is what a body of short junk entries meets.
 */
export const MAX_REPORT_ENTRIES = 500;

export const ReportedLeaks = Type.Array(
  // Other fields are allowed: GitHub may add some (and they are ignored).
  Type.Object({
    token: Type.String({ description: 'The string GitHub found (never stored, logged or sent back)' }),
    type: Type.String({
      description: 'The token type the pattern was registered under',
      examples: ['infracat_api_token'],
    }),
    url: Type.Optional(Type.String({ description: 'Where it was found (recorded in the audit event)' })),
    source: Type.Optional(
      Type.String({ description: 'What GitHub scanned: content, commit, pull_request, ...', examples: ['content'] }),
    ),
  }),
  {
    maxItems: MAX_REPORT_ENTRIES,
    description: `GitHub's report of leaked strings, at most ${MAX_REPORT_ENTRIES} entries`,
    examples: [
      [
        {
          token: 'icat_<30 random><6 checksum>',
          type: 'infracat_api_token',
          url: 'https://github.com/octocat/Hello-World/blob/main/deploy.sh',
          source: 'content',
        },
      ],
    ],
  },
);
export type ReportedLeaks = Static<typeof ReportedLeaks>;

export const LeakLabel = Type.Object({
  token_hash: Type.String({
    pattern: '^[0-9a-f]{64}$',
    description: 'Hex SHA-256 of the reported string (the string itself is never sent back)',
  }),
  token_type: Type.String({ description: "The entry's `type`, as reported" }),
  label: Type.Union([Type.Literal('true_positive'), Type.Literal('false_positive')], {
    description:
      '`true_positive`: a live secret of this service, now revoked; `false_positive`: nothing was revoked ' +
      '(not a well-formed secret, or no live token has it)',
  }),
});
export type LeakLabel = Static<typeof LeakLabel>;

export const LeakLabels = Type.Array(LeakLabel, { description: 'One label per reported entry, in order' });

/** The secret-scanning shapes by their names in the OpenAPI document's components.schemas. */
export const SECRET_SCANNING_SCHEMAS = { LeakReport: ReportedLeaks.items, LeakLabel };
