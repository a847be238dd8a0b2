import type { AuditActor, AuditChanges, AuditOutcome, AuditTarget } from '../../../shared/audit/audit-trail';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import type { ChainHead } from './audit-chain';

/** One entry of an organization's audit log, as stored and listed. */
export interface AuditEvent {
  id: string;
  organizationId: string;
  occurredAt: Date;
  actor: AuditActor;
  action: string;
  target: AuditTarget | null;
  outcome: AuditOutcome;
  requestId: string | null;
  changes: AuditChanges | null;
  /** The event's place in its organization's chain; null until it is sealed (within seconds). */
  sequence: number | null;
  /** The event's link in the chain (see audit-chain.ts), hex; null until sealed. */
  hash: string | null;
  previousHash: string | null;
}

/** An event as the API, its export and its webhook events show it. */
export function presented(event: AuditEvent) {
  return {
    id: event.id,
    occurredAt: event.occurredAt.toISOString(),
    organizationId: event.organizationId,
    actor: event.actor,
    action: event.action,
    target: event.target,
    outcome: event.outcome,
    requestId: event.requestId,
    changes: event.changes,
    sequence: event.sequence,
    hash: event.hash,
  };
}

/** What one purge removed. */
export interface AuditPurge {
  purged: number;
  /** The last removed event's sequence (the chain now begins after it). */
  throughSequence: number;
  olderThan: Date;
  retentionDays: number;
}

/** The fewest days an organization may keep its audit events. */
export const MIN_AUDIT_RETENTION_DAYS = 30;

/** VALIDATION_FAILED unless `days` is a whole number of days from 30 to the instance's cap. */
export function assertRetention(days: number, maxDays: number): void {
  if (!Number.isInteger(days) || days < MIN_AUDIT_RETENTION_DAYS || days > maxDays) {
    throw new DomainError('VALIDATION_FAILED', `retentionDays must be from ${MIN_AUDIT_RETENTION_DAYS} to ${maxDays}`, [
      {
        path: 'retentionDays',
        message: `retentionDays must be a whole number from ${MIN_AUDIT_RETENTION_DAYS} to ${maxDays} (AUDIT_RETENTION_DAYS)`,
      },
    ]);
  }
}

export interface AuditFilters {
  action?: string;
  actorId?: string;
  targetId?: string;
  since?: Date;
  until?: Date;
}

/** A new event, before it is sealed. */
export type NewAuditEvent = Omit<AuditEvent, 'sequence' | 'hash' | 'previousHash'>;

/** Seals: an event's place, previous hash and hash. */
export interface Seal {
  id: string;
  organizationId: string;
  occurredAt: Date;
  sequence: number;
  previousHash: string;
  hash: string;
  /** On the first event of a new chain: the signature of its keyed start (see `keyedStartMac`). */
  startMac: string | null;
}

export abstract class AuditEventRepository {
  /** Writes new events, unsealed, in the current transaction. */
  abstract insert(events: NewAuditEvent[]): Promise<void>;
  abstract list(organizationId: string, filters: AuditFilters, page: PageRequest): Promise<Page<AuditEvent>>;
  /** Events the filters select, oldest first, after `after` (null: from the first), at most `limit`. */
  abstract oldestFirst(organizationId: string, filters: AuditFilters, after: AuditEvent | null, limit: number): Promise<AuditEvent[]>;
  /** Sealed events of the organization from `fromSequence` on, in order, at most `limit`. */
  abstract chain(organizationId: string, fromSequence: number, limit: number): Promise<AuditEvent[]>;
  abstract countUnsealed(organizationId: string): Promise<number>;
  /** The organization's last sealed event, as the sealer recorded it, and where a purge left its start; null before the first. */
  abstract head(organizationId: string): Promise<ChainHead | null>;
  /**
   * Signs, with `sign`, the keyed start of each chain that began before the chain key, in the
   * boot whose migrations marked them (AuditChainKey), and only then: a start left unsigned
   * afterwards is a break, not something a later boot would sign.
   */
  abstract signKeyedStarts(sign: (organizationId: string, keyedFrom: number, previousHash: string) => string): Promise<number>;
  /** The chain's start the latest recorded `audit.purged` event names (0: none recorded). */
  abstract recordedPurge(organizationId: string): Promise<number>;
  /** The organization's own retention in days; null: the instance's. */
  abstract retention(organizationId: string): Promise<number | null>;
  abstract setRetention(organizationId: string, days: number): Promise<void>;
  /** Organizations with a chain (the ones a purge may concern). */
  abstract chainedOrganizations(): Promise<string[]>;
  /**
   * Removes, as the purging database role, up to `limit` of the organization's oldest sealed
   * events that are older than its retention (its own, within `maxDays`; 30 days at least).
   */
  abstract purge(organizationId: string, maxDays: number, limit: number): Promise<AuditPurge>;
  /**
   * In one transaction, with the sealing lock held: hands the oldest unsealed events (of one
   * organization, or any) and each organization's chain head to `seal`, moves them with the
   * seals it answers from the inbox into the log, and hands the sealed events to `sealed`
   * (still in the transaction). Answers how many were sealed; 0 when another process holds
   * the lock.
   */
  abstract sealPending(
    organizationId: string | null,
    limit: number,
    seal: (events: AuditEvent[], heads: Map<string, { sequence: number; hash: string }>) => Seal[],
    sealed: (events: AuditEvent[]) => Promise<void>,
  ): Promise<number>;
}
