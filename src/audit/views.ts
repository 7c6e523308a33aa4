// Audit event records -> the wire shape (schemas.ts).
import type { AuditEventRecord } from '../storage/types.js';
import type { AuditAction } from './events.js';
import type { AuditEvent } from './schemas.js';

export function auditEventView(e: AuditEventRecord): AuditEvent {
  return {
    id: e.id,
    action: e.action as AuditAction,
    occurred_at: new Date(e.occurredAt).toISOString(),
    actor: { type: e.actorType, id: e.actorId, name: e.actorName },
    actor_credential: e.actorCredential,
    target: { type: e.targetType, id: e.targetId, name: e.targetName },
    ip: e.ip,
    user_agent: e.userAgent,
    request_id: e.requestId,
    details: e.details,
  };
}
