import { createHash, createHmac, createSecretKey, KeyObject } from 'node:crypto';
import { canonicalJson } from '../../../shared/json/canonical-json';
import type { AuditActor, AuditChanges, AuditOutcome, AuditTarget } from '../../../shared/audit/audit-trail';

/** An event as the chain links it (the shape of `AuditEvent`, kept here so the two files do not import each other). */
interface AuditEvent {
  id: string;
  organizationId: string;
  occurredAt: Date;
  actor: AuditActor;
  action: string;
  target: AuditTarget | null;
  outcome: AuditOutcome;
  requestId: string | null;
  changes: AuditChanges | null;
  sequence: number | null;
  hash: string | null;
  previousHash: string | null;
}

/**
 * The key of the chain: HMAC-SHA256 with it links each event to the one before. It is the
 * service's (AUDIT_CHAIN_KEY, or derived from SECRETS_KEY), never in the database, so someone
 * who can write the database but does not hold the key cannot compute a link: a rewritten
 * chain fails `verify`.
 */
export type ChainKey = KeyObject;

/** The chain key from its bytes: a KeyObject, since an HMAC keyed with a Buffer costs ten times more per event. */
export function chainKey(bytes: Buffer): ChainKey {
  return createSecretKey(bytes);
}

/** The hash the chain starts from: the "previous hash" of an organization's first event. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * An event's link in the chain, over the previous hash and every field of the event, its
 * sequence included: HMAC-SHA256 with the chain key, or, with `key` null, the plain SHA-256
 * that events sealed before the chain was keyed were linked with.
 */
export function chainHash(
  previousHash: string,
  event: Omit<AuditEvent, 'hash' | 'previousHash'> & { sequence: number },
  key: ChainKey | null,
): string {
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
  const digest = key ? createHmac('sha256', key) : createHash('sha256');
  return digest.update(previousHash).update('\n').update(canonicalJson(fields)).digest('hex');
}

/**
 * The signature of where a chain's keyed links begin (`keyedFrom`) and the hash they continue
 * from: 1 and the genesis hash for a chain sealed with the key from its first event; for a
 * chain that began before the key, the event after its last plain link and that link's hash.
 * Without it, someone with the database could relink keyed events with plain SHA-256 and move
 * the start past them.
 */
export function keyedStartMac(key: ChainKey, organizationId: string, keyedFrom: number, previousHash: string): string {
  return createHmac('sha256', key).update(`keyed-start\n${organizationId}\n${keyedFrom}\n${previousHash}`).digest('hex');
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

/**
 * Where an organization's chain ends (`sequence`, `hash`), where it now begins (after the last
 * purged event), and where its keyed links begin.
 */
export interface ChainHead {
  sequence: number;
  hash: string;
  purgedThrough: number;
  /** The hash of the last purged event, the first kept one's previous hash; null before any purge. */
  purgedHash: string | null;
  /** The first event linked with the chain key; the ones before it have plain SHA-256 links. */
  keyedFrom: number | null;
  /** `keyedStartMac` of `keyedFrom`; null until signed. */
  keyedMac: string | null;
}

const UNSIGNED_START = (from: number) => `the chain's keyed start (event ${from}) is not signed with the chain key`;

/** Walks sealed events in sequence order, batch by batch; `start` is where the kept chain begins. */
export class ChainWalker {
  private expectedSequence: number;
  private previousHash: string;
  private keyedStartChecked = false;
  checked = 0;
  firstBreak: ChainCheck['firstBreak'] = null;

  constructor(
    start: { sequence: number; previousHash: string },
    private readonly key: ChainKey,
    private readonly organizationId: string,
    /** Where the keyed links begin, and its signature; null (a chain without a head): from the first event, unsigned. */
    private readonly keyed: { from: number | null; mac: string | null } | null,
  ) {
    this.expectedSequence = start.sequence;
    this.previousHash = start.previousHash;
    // The keyed start is behind the kept chain (purged past it): every kept link is keyed.
    if (keyed?.from && keyed.from < start.sequence) this.keyedStartChecked = true;
  }

  /** Checks the next events; false once a break is found (the rest is not read). */
  next(events: AuditEvent[]): boolean {
    for (const event of events) {
      const sequence = event.sequence!;
      if (sequence !== this.expectedSequence) {
        this.firstBreak = { sequence: this.expectedSequence, eventId: null, reason: `event ${this.expectedSequence} is missing` };
        return false;
      }
      if (!this.checkKeyedStart()) return false;
      if (event.previousHash !== this.previousHash) {
        this.firstBreak = { sequence, eventId: event.id, reason: 'its previous hash is not the hash of the event before it' };
        return false;
      }
      const hash = chainHash(this.previousHash, { ...event, sequence }, sequence >= this.keyedFrom ? this.key : null);
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
  static from(head: ChainHead | null, key: ChainKey, organizationId: string): ChainWalker {
    return new ChainWalker(
      { sequence: (head?.purgedThrough ?? 0) + 1, previousHash: head?.purgedHash ?? GENESIS_HASH },
      key,
      organizationId,
      head ? { from: head.keyedFrom, mac: head.keyedMac } : null,
    );
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
    } else if (!this.keyedStartChecked && this.keyedFrom > this.expectedSequence) {
      // A start past the end would let plain links pass for events sealed with the key.
      this.firstBreak = { sequence: this.keyedFrom, eventId: null, reason: UNSIGNED_START(this.keyedFrom) };
    } else {
      // A chain that ends just before its keyed start (no event sealed since the key came): its last plain link is signed.
      this.checkKeyedStart();
    }
  }

  /** A head without a keyed start (sealed by a version before the key) is taken as keyed from the first event, unsigned. */
  private get keyedFrom(): number {
    return this.keyed?.from ?? 1;
  }

  /** At the keyed start: its signature covers it and the hash it continues from; false (a break) when it does not. */
  private checkKeyedStart(): boolean {
    if (this.keyedStartChecked || this.expectedSequence !== this.keyedFrom) return true;
    this.keyedStartChecked = true;
    const mac = this.keyed?.mac;
    if (mac && mac === keyedStartMac(this.key, this.organizationId, this.keyedFrom, this.previousHash)) return true;
    this.firstBreak = { sequence: this.keyedFrom, eventId: null, reason: UNSIGNED_START(this.keyedFrom) };
    return false;
  }
}
