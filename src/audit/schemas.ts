// The wire shape of an audit event, declared once: GET /api/v1/audit-events, the
// `"audit": true` log line and `infracat audit list --json` all show this.
import { Type, type Static } from 'typebox';
import { Timestamp } from '../tokens/schemas.js';
import { AUDIT_ACTIONS } from './events.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const AuditAction = Type.Enum([...AUDIT_ACTIONS], { description: 'What happened' });

export const AuditEvent = Type.Object({
  id: Type.String({ description: '`evt_` + ULID: sorts by time', examples: ['evt_01JD3X5Y6Z7A8B9C0D1E2F3G4H'] }),
  action: AuditAction,
  occurred_at: Timestamp,
  actor: Type.Object(
    {
      type: Type.Union(
        [Type.Literal('api_token'), Type.Literal('cli'), Type.Literal('secret_scanning'), Type.Literal('system')],
        {
          description:
            '`api_token`: a token over the API; `cli`: the operator with the `infracat` command (name: the OS user); ' +
            "`secret_scanning`: GitHub's secret scanning (id: its signing key); `system`: infracat itself " +
            '(the purge of expired tokens)',
        },
      ),
      id: NullableString,
      name: NullableString,
    },
    { description: 'Who made the change' },
  ),
  target: Type.Object(
    {
      type: Type.Union([Type.Literal('api_token'), Type.Literal('account'), Type.Literal('catalog')]),
      id: NullableString,
      name: NullableString,
    },
    { description: 'What was changed (its name as it was at the time)' },
  ),
  ip: Type.Union([Type.String(), Type.Null()], { description: 'Client address; null off HTTP' }),
  user_agent: Type.Union([Type.String(), Type.Null()], { description: 'Client User-Agent (at most 512 characters)' }),
  request_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The `x-request-id` of the request that made the change; null off HTTP',
  }),
  details: Type.Record(Type.String(), Type.Unknown(), {
    description:
      "What else the event records (changed fields, grace period, a leak report's url and source); never a secret",
  }),
});
export type AuditEvent = Static<typeof AuditEvent>;

export const AuditEventList = Type.Array(AuditEvent);
