// Who made a change, and from where: what every audit event records about its origin.
// Built once per change by the caller of a domain service (an HTTP route, the CLI, a
// background job) and passed down; the domain copies it into the event it writes.
import { userInfo } from 'node:os';
import { OPERATOR_ACCOUNT_ID } from '../storage/migrations.js';
import type { ActorCredential, ActorType, TokenRecord } from '../storage/types.js';

export interface Actor {
  type: ActorType;
  /** The calling token's id, the signing key's identifier; null for the CLI and infracat itself. */
  id: string | null;
  name: string | null;
}

export interface AuditContext {
  actor: Actor;
  /**
   * The account the actor acts for: the calling token's; the operator's for the CLI; null
   * for infracat itself and secret scanning. Whose reader sees the actor whole (views.ts).
   */
  actorAccountId: string | null;
  /** Which of the calling token's secrets made the change; null when the actor is not a token. */
  actorCredential: ActorCredential | null;
  /** The client address as the service sees it (TRUST_PROXY applied); null off HTTP. */
  ip: string | null;
  userAgent: string | null;
  /** The request's id (the `x-request-id` every answer carries); null off HTTP. */
  requestId: string | null;
}

/** The parts of an HTTP request (Fastify's) an audit context is made of. */
export interface RequestFacts {
  ip: string;
  id: string;
  headers: Record<string, string | string[] | undefined>;
  token: TokenRecord | null;
  tokenSecret: ActorCredential | null;
}

/** The context of a change made over HTTP: by the calling token unless `actor` is given. */
export function auditContext(request: RequestFacts, actor?: Actor): AuditContext {
  const ua = request.headers['user-agent'];
  // As sent: auditEvent() scrubs it of credentials, then cuts it to length (events.ts).
  const userAgent = typeof ua === 'string' && ua !== '' ? ua : null;
  return {
    actor: actor ?? tokenActor(request.token),
    actorAccountId: actor === undefined ? (request.token?.accountId ?? null) : null,
    actorCredential: actor === undefined ? request.tokenSecret : null,
    ip: request.ip,
    userAgent,
    requestId: request.id,
  };
}

function tokenActor(token: TokenRecord | null): Actor {
  // Every changing route requires a token; an anonymous change cannot happen.
  if (token === null) throw new Error('an audited change over HTTP needs an authenticated token');
  return { type: 'api_token', id: token.id, name: token.name };
}

/** The context of a change made with the `infracat` command: the operator, by OS user name. */
export function cliAuditContext(): AuditContext {
  let name: string | null;
  try {
    name = userInfo().username;
  } catch {
    // No passwd entry for the uid (some containers).
    name = null;
  }
  return {
    actor: { type: 'cli', id: null, name },
    actorAccountId: OPERATOR_ACCOUNT_ID,
    actorCredential: null,
    ip: null,
    userAgent: null,
    requestId: null,
  };
}

/** infracat's own background jobs (the expired-token purge). */
export const SYSTEM_CONTEXT: AuditContext = Object.freeze({
  actor: Object.freeze({ type: 'system' as const, id: null, name: 'infracat' }),
  actorAccountId: null,
  actorCredential: null,
  ip: null,
  userAgent: null,
  requestId: null,
});
