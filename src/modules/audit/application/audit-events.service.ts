import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { JobReconciler } from '../../../queue/job-reconciler';
import { AuditTrail } from '../../../shared/audit/audit-trail';
import { EventOutbox } from '../../../shared/events/event-outbox';
import { Principal } from '../../../shared/auth/principal';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { TIER_AUDIT_VISIBLE_DAYS, TIER_FEATURES } from '../../licensing/domain/tiers';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { ChainCheck, ChainKey, chainHash, chainKey, ChainWalker, GENESIS_HASH, keyedStartMac } from '../domain/audit-chain';
import { AuditEvent, AuditEventRepository, AuditFilters, assertRetention, presented, Seal } from '../domain/audit-event';

/** Events sealed per transaction. */
const SEAL_BATCH = 1000;
/** Events read per query while verifying or exporting. */
const READ_BATCH = 1000;
const DAY_MS = 86_400_000;
/** Events a purge removes per transaction. */
const PURGE_BATCH = 10_000;
/** How often a process purges what is past its organization's retention. */
const PURGE_EVERY_MS = 3_600_000;

/** An organization's audit retention, and the most the instance allows. */
export interface AuditRetention {
  retentionDays: number;
  maxRetentionDays: number;
}

export type ExportFormat = 'csv' | 'jsonl';

/** The feature that reads the log (team and up, within its days), and the one that reads, checks and exports all of it (enterprise). */
export const AUDIT_LOG_FEATURE = 'audit.log';
export const AUDIT_FULL_FEATURE = 'audit.full';

/**
 * Reading an organization's audit log, and keeping its chain: events are written with their
 * change into the inbox (a plain insert, so concurrent changes never wait on one another), then
 * sealed in the order they were made, by one process at a time: each gets the next sequence
 * number of its organization and a hash over the previous one and itself, and moves into the
 * log. The reconciler's pass (every 10 s on worker processes) seals what is pending; so does a
 * verify, for its organization, before it walks the chain. Every hour the pass also purges
 * what is past each organization's retention, and records each purge.
 */
@Injectable()
export class AuditEventsService implements OnModuleInit {
  private nextPurgeAt = 0;
  private readonly key: ChainKey;

  constructor(
    private readonly config: AppConfig,
    private readonly events: AuditEventRepository,
    private readonly reconciler: JobReconciler,
    private readonly subscriptions: SubscriptionService,
    private readonly audit: AuditTrail,
    private readonly outbox: EventOutbox,
  ) {
    this.key = chainKey(config.audit.chainKey);
  }

  async onModuleInit(): Promise<void> {
    await this.events.signKeyedStarts((organizationId, keyedFrom, previousHash) =>
      keyedStartMac(this.key, organizationId, keyedFrom, previousHash),
    );
    this.reconciler.addChore(() => this.sealPending());
    this.reconciler.addChore(() => this.purgeWhenDue());
  }

  /** The organization's events, within what its tier sees (team: the last 90 days). */
  async list(caller: Principal, filters: AuditFilters, page: PageRequest): Promise<Page<AuditEvent>> {
    return this.events.list(caller.organizationId, await this.visible(caller.organizationId, filters), page);
  }

  /**
   * Every event the filters select, oldest first, as CSV or JSON lines, read a page at a time
   * (enterprise). The export is itself an event, written before the first line.
   */
  async export(caller: Principal, filters: AuditFilters, format: ExportFormat): Promise<AsyncIterable<string>> {
    await this.subscriptions.assertFeature(caller.organizationId, AUDIT_FULL_FEATURE);
    await this.audit.record({
      organizationId: caller.organizationId,
      action: 'audit.exported',
      target: { type: 'audit_log', id: caller.organizationId, name: format },
      changes: { after: { format, ...filters } },
    });
    return exportLines(this.events, caller.organizationId, filters, format);
  }

  /** Seals what is pending (of one organization, or all); answers how many were sealed. */
  async sealPending(organizationId: string | null = null): Promise<number> {
    let total = 0;
    for (;;) {
      const sealed = await this.events.sealPending(
        organizationId,
        SEAL_BATCH,
        (events, heads) => seal(events, heads, this.key),
        (events) => this.stream(events),
      );
      if (sealed) this.outbox.committed();
      total += sealed;
      if (sealed < SEAL_BATCH) return total;
    }
  }

  /** Sealed events of enterprise organizations, as `audit.<action>` webhook events (in the sealing transaction). */
  private async stream(events: AuditEvent[]): Promise<void> {
    const organizations = [...new Set(events.map((e) => e.organizationId))];
    const streaming = new Set<string>();
    for (const id of organizations) {
      const { tier } = await this.subscriptions.rateLimit(id).catch(() => ({ tier: 'starter' as const }));
      if (TIER_FEATURES[tier].includes(AUDIT_FULL_FEATURE)) streaming.add(id);
    }
    await this.outbox.publish(
      events
        .filter((event) => streaming.has(event.organizationId))
        .map((event) => ({ organizationId: event.organizationId, type: `audit.${event.action}`, data: presented(event) })),
    );
  }

  /**
   * Seals the organization's pending events, then walks its chain from where the last
   * recorded purge left it to its end; names the first break.
   */
  async verify(caller: Principal): Promise<ChainCheck> {
    const { organizationId } = caller;
    await this.subscriptions.assertFeature(organizationId, AUDIT_FULL_FEATURE);
    await this.sealPending(organizationId);
    const head = await this.events.head(organizationId);
    const walker = ChainWalker.from(head, this.key, organizationId);
    walker.start(head, await this.events.recordedPurge(organizationId));
    for (let from = walker.nextSequence; !walker.firstBreak; from += READ_BATCH) {
      const batch = await this.events.chain(organizationId, from, READ_BATCH);
      if (!walker.next(batch) || batch.length < READ_BATCH) break;
    }
    walker.end(head);
    return { checked: walker.checked, unsealed: await this.events.countUnsealed(organizationId), firstBreak: walker.firstBreak };
  }

  /** The organization's retention (enterprise). */
  async retention(caller: Principal): Promise<AuditRetention> {
    await this.subscriptions.assertFeature(caller.organizationId, AUDIT_FULL_FEATURE);
    return this.retentionOf(caller.organizationId);
  }

  /** Sets how many days the organization keeps its events, from 30 to the instance's AUDIT_RETENTION_DAYS (enterprise). */
  @Transactional()
  async setRetention(caller: Principal, days: number): Promise<AuditRetention> {
    const { organizationId } = caller;
    await this.subscriptions.assertFeature(organizationId, AUDIT_FULL_FEATURE);
    const maxDays = this.config.audit.retentionDays;
    assertRetention(days, maxDays);
    const before = await this.retentionOf(organizationId);
    await this.events.setRetention(organizationId, days);
    await this.audit.record({
      organizationId,
      action: 'audit.settings_updated',
      target: { type: 'audit_log', id: organizationId, name: null },
      changes: { before: { retentionDays: before.retentionDays }, after: { retentionDays: days } },
    });
    return { retentionDays: days, maxRetentionDays: maxDays };
  }

  /**
   * Removes every organization's sealed events older than its retention, oldest first, as the
   * purging database role; each batch is recorded as an `audit.purged` event in its
   * transaction. Answers how many events went.
   */
  async purgeExpired(): Promise<number> {
    let total = 0;
    for (const organizationId of await this.events.chainedOrganizations()) {
      for (;;) {
        const purged = await this.purgeBatch(organizationId);
        total += purged;
        if (purged < PURGE_BATCH) break;
      }
    }
    return total;
  }

  private async purgeWhenDue(): Promise<void> {
    if (Date.now() < this.nextPurgeAt) return;
    this.nextPurgeAt = Date.now() + PURGE_EVERY_MS;
    await this.purgeExpired();
  }

  @Transactional()
  private async purgeBatch(organizationId: string): Promise<number> {
    const { purged, throughSequence, olderThan, retentionDays } = await this.events.purge(
      organizationId,
      this.config.audit.retentionDays,
      PURGE_BATCH,
    );
    if (purged) {
      await this.audit.record({
        organizationId,
        action: 'audit.purged',
        target: { type: 'audit_log', id: organizationId, name: null },
        changes: { after: { purged, throughSequence, olderThan: olderThan.toISOString(), retentionDays } },
      });
    }
    return purged;
  }

  private async retentionOf(organizationId: string): Promise<AuditRetention> {
    const maxDays = this.config.audit.retentionDays;
    const own = await this.events.retention(organizationId);
    return { retentionDays: Math.min(own ?? maxDays, maxDays), maxRetentionDays: maxDays };
  }

  /** FEATURE_NOT_AVAILABLE below team; the filters narrowed to the days the tier sees. */
  private async visible(organizationId: string, filters: AuditFilters): Promise<AuditFilters> {
    await this.subscriptions.assertFeature(organizationId, AUDIT_LOG_FEATURE);
    const days = TIER_AUDIT_VISIBLE_DAYS[(await this.subscriptions.rateLimit(organizationId)).tier];
    if (days === null) return filters;
    const from = new Date(Date.now() - days * DAY_MS);
    return { ...filters, since: filters.since && filters.since > from ? filters.since : from };
  }
}

/** The lines of an export, oldest first, a page of events at a time. */
async function* exportLines(
  events: AuditEventRepository,
  organizationId: string,
  filters: AuditFilters,
  format: ExportFormat,
): AsyncIterable<string> {
  if (format === 'csv') yield `${CSV_COLUMNS.map(([name]) => name).join(',')}\r\n`;
  for (let after: AuditEvent | null = null; ;) {
    const batch: AuditEvent[] = await events.oldestFirst(organizationId, filters, after, READ_BATCH);
    for (const event of batch) yield format === 'csv' ? csvLine(event) : `${JSON.stringify(presented(event))}\n`;
    if (batch.length < READ_BATCH) return;
    after = batch[batch.length - 1];
  }
}

const CSV_COLUMNS: Array<[string, (event: AuditEvent) => unknown]> = [
  ['id', (e) => e.id],
  ['occurredAt', (e) => e.occurredAt.toISOString()],
  ['organizationId', (e) => e.organizationId],
  ['actorType', (e) => e.actor.type],
  ['actorId', (e) => e.actor.id],
  ['actorName', (e) => e.actor.name],
  ['actorIp', (e) => e.actor.ip],
  ['actorUserAgent', (e) => e.actor.userAgent],
  ['actorVia', (e) => e.actor.via],
  ['action', (e) => e.action],
  ['targetType', (e) => e.target?.type],
  ['targetId', (e) => e.target?.id],
  ['targetName', (e) => e.target?.name],
  ['outcome', (e) => e.outcome],
  ['requestId', (e) => e.requestId],
  ['changes', (e) => (e.changes ? JSON.stringify(e.changes) : null)],
  ['sequence', (e) => e.sequence],
  ['hash', (e) => e.hash],
];

/** One CSV record (RFC 4180), a field per column of CSV_COLUMNS. */
function csvLine(event: AuditEvent): string {
  return `${CSV_COLUMNS.map(([, read]) => csvCell(read(event))).join(',')}\r\n`;
}

/**
 * A text a spreadsheet would take for a formula: a tab or a carriage return first, or one of
 * = + - @ or their full-width forms (＝ ＋ － ＠, which spreadsheets also read as operators) first
 * or after leading whitespace (some spreadsheets trim it before they look).
 */
const FORMULA_START = /^(?:[\t\r]|\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/;

/** One CSV field: quoted, quotes doubled, and a text that would start a formula gets a leading `'`. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  return `"${text.replace(/"/g, '""')}"`;
}

/**
 * The seals of `events` (oldest first), each chained with the key to its organization's head or
 * the one sealed before it; the first event of a new chain also signs its keyed start.
 */
function seal(events: AuditEvent[], heads: Map<string, { sequence: number; hash: string }>, key: ChainKey): Seal[] {
  const tips = new Map(heads);
  return events.map((event) => {
    const tip = tips.get(event.organizationId) ?? { sequence: 0, hash: GENESIS_HASH };
    const sequence = tip.sequence + 1;
    const hash = chainHash(tip.hash, { ...event, sequence }, key);
    tips.set(event.organizationId, { sequence, hash });
    const startMac = sequence === 1 ? keyedStartMac(key, event.organizationId, 1, GENESIS_HASH) : null;
    return {
      id: event.id,
      organizationId: event.organizationId,
      occurredAt: event.occurredAt,
      sequence,
      previousHash: tip.hash,
      hash,
      startMac,
    };
  });
}
