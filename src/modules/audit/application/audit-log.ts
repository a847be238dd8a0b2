import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { CLS_REQ, ClsService } from 'nestjs-cls';
import { AuditActor, AuditEntry, AuditTrail, redacted } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { timeOrderedId } from '../../../shared/ids/time-ordered-id';
import { AuditEventRepository, NewAuditEvent } from '../domain/audit-event';

const MAX_USER_AGENT = 512;

/**
 * Writes audit events in the transaction of the change they record (the repository goes
 * through the request's transaction, when there is one). The actor, address, user agent and
 * request id come from the request being served; outside one (a chore, a schedule) the actor
 * is the system. Changes are redacted here, whatever the caller passed.
 */
@Injectable()
export class AuditLog extends AuditTrail {
  constructor(
    private readonly events: AuditEventRepository,
    private readonly cls: ClsService,
  ) {
    super();
  }

  async record(...entries: AuditEntry[]): Promise<void> {
    const request = this.cls.isActive() ? this.cls.get<Request | undefined>(CLS_REQ) : undefined;
    const caller = actorOf(request);
    const occurredAt = new Date();
    await this.events.insert(
      entries.map((entry): NewAuditEvent => ({
        id: timeOrderedId(occurredAt.getTime()),
        organizationId: entry.organizationId,
        occurredAt,
        actor: { ...caller, ...entry.actor },
        action: entry.action,
        target: entry.target,
        outcome: entry.outcome ?? 'success',
        requestId: (request as { id?: string } | undefined)?.id ?? null,
        changes: entry.changes ? (redacted(entry.changes) as NewAuditEvent['changes']) : null,
      })),
    );
  }
}

/** Who the request's caller is, and from where; the system outside a request, anonymous before sign-in. */
function actorOf(request: Request | undefined): AuditActor {
  if (!request) return { type: 'system', id: null, name: 'system', ip: null, userAgent: null, via: null };
  const seen = { ip: request.ip ?? null, userAgent: request.headers['user-agent']?.slice(0, MAX_USER_AGENT) ?? null };
  const principal = request.user as Principal | undefined;
  if (!principal) return { type: 'anonymous', id: null, name: null, ...seen, via: null };
  const { credential } = principal;
  if (credential.type === 'api_key') {
    return {
      type: 'api_key',
      id: credential.keyId,
      name: principal.email,
      ...seen,
      via: 'key',
    };
  }
  return { type: 'user', id: principal.userId, name: principal.email, ...seen, via: credential.via ?? null };
}
