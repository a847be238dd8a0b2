import { createHash } from 'node:crypto';
import type { AuditActor, AuditChanges, AuditOutcome, AuditTarget } from '../../../shared/audit/audit-trail';
import { canonicalJson } from '../../../shared/json/canonical-json';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';

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
  /** SHA-256 of the previous event's hash and this event (hex); null until sealed. */
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

/** The hash the chain starts from: the "previous hash" of an organization's first event. */
export const GENESIS_HASH = '0'.repeat(64);

/** An event's link in the chain: SHA-256 over the previous hash and every field of the event, its sequence included. */
export function chainHash(previousHash: string, event: Omit<AuditEvent, 'hash' | 'previousHash'> & { sequence: number }): string {
  const fields = [
    event.sequence,
    event.id,
    event.organizationId,
    event.occurredAt.toISOString(),
    event.actor,
    event.action,
    event.target,
    event.outcome,
    event.requestId,
    event.changes,
  ];
  return createHash('sha256').update(previousHash).update('\n').update(canonicalJson(fields)).digest('hex');
}

/** What `verify` found walking an organization's chain. */
export interface ChainCheck {
  /** Sealed events checked. */
  checked: number;
  /** Events not sealed yet (written in the last seconds). */
  unsealed: number;
  /** The first event that does not follow from the one before; null when the chain holds. */
  firstBreak: { sequence: number; eventId: string | null; reason: string } | null;
}

/** Walks sealed events in sequence order, batch by batch; `start` is where the kept chain begins. */
export class ChainWalker {
  private expectedSequence: number;
  private previousHash: string;
  checked = 0;
  firstBreak: ChainCheck['firstBreak'] = null;

  constructor(start: { sequence: number; previousHash: string }) {
    this.expectedSequence = start.sequence;
    this.previousHash = start.previousHash;
  }

  /** Checks the next events; false once a break is found (the rest is not read). */
  next(events: AuditEvent[]): boolean {
    for (const event of events) {
      const sequence = event.sequence!;
      if (sequence !== this.expectedSequence) {
        this.firstBreak = { sequence: this.expectedSequence, eventId: null, reason: `event ${this.expectedSequence} is missing` };
        return false;
      }
      if (event.previousHash !== this.previousHash) {
        this.firstBreak = { sequence, eventId: event.id, reason: 'its previous hash is not the hash of the event before it' };
        return false;
      }
      const hash = chainHash(this.previousHash, { ...event, sequence });
      if (hash !== event.hash) {
        this.firstBreak = { sequence, eventId: event.id, reason: 'its content does not match its hash (it was changed)' };
        return false;
      }
      this.checked++;
      this.expectedSequence++;
      this.previousHash = hash;
    }
    return true;
  }

  /** The walk of the chain `head` ends: from after its last purged event, or from the first. */
  static from(head: ChainHead | null): ChainWalker {
    return new ChainWalker({ sequence: (head?.purgedThrough ?? 0) + 1, previousHash: head?.purgedHash ?? GENESIS_HASH });
  }

  /** The sequence the walk expects next. */
  get nextSequence(): number {
    return this.expectedSequence;
  }

  /**
   * Before the first event: a chain that begins later than its first event must have been
   * purged that far, as the latest `audit.purged` event recorded (`recordedThrough`).
   */
  start(head: ChainHead | null, recordedThrough: number): void {
    if (!head?.purgedThrough || head.purgedThrough === recordedThrough) return;
    this.firstBreak = {
      sequence: head.purgedThrough,
      eventId: null,
      reason: `the chain begins after event ${head.purgedThrough}, but the last recorded purge ended at ${recordedThrough}`,
    };
  }

  /** After the last event: the chain must end where its head says it does (the newest events were not removed). */
  end(head: { sequence: number; hash: string } | null): void {
    if (this.firstBreak || !head) return;
    const last = this.expectedSequence - 1;
    if (head.sequence > last) {
      this.firstBreak = {
        sequence: this.expectedSequence,
        eventId: null,
        reason: `events ${this.expectedSequence} to ${head.sequence} are missing`,
      };
    } else if (head.sequence === last && head.hash !== this.previousHash) {
      this.firstBreak = { sequence: last, eventId: null, reason: 'the chain does not end with the hash it was sealed with' };
    }
  }
}

/** Where an organization's chain ends (`sequence`, `hash`), and where it now begins: after the last purged event. */
export interface ChainHead {
  sequence: number;
  hash: string;
  purgedThrough: number;
  /** The hash of the last purged event, the first kept one's previous hash; null before any purge. */
  purgedHash: string | null;
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
      { path: 'retentionDays', message: `retentionDays must be a whole number from ${MIN_AUDIT_RETENTION_DAYS} to ${maxDays} (AUDIT_RETENTION_DAYS)` },
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
