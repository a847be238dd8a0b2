import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { escapeLiteral } from 'pg';
import { AppliedMigrations } from '../../../database/applied-migrations';
import { commitCarrier } from '../../../database/preparing-client';
import { decodeCursor, Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { ChainHead, GENESIS_HASH } from '../domain/audit-chain';
import { AuditEvent, AuditEventRepository, AuditFilters, AuditPurge, NewAuditEvent, Seal } from '../domain/audit-event';

/** The migration that gave each chain begun before the chain key its keyed start, for the boot that ran it to sign. */
const KEYED_START_MIGRATION = 'AuditChainKey1795840000000';

/** Held by the process sealing: one at a time, the others skip their turn. */
const SEALING_LOCK = "hashtext('platform.audit.sealing')";

@Injectable()
export class TypeOrmAuditEventRepository extends AuditEventRepository {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly migrations: AppliedMigrations,
  ) {
    super();
  }

  /**
   * Into the inbox (one index): the sealer moves it into the log. One statement, written by
   * hand: it runs with every audited change, and the ORM's insert costs more CPU than the row.
   * Inside a transaction it goes with the COMMIT, in the same round trip (the change pays no
   * round trip of its own for its event); it commits with the change or fails it.
   */
  async insert(events: NewAuditEvent[]): Promise<void> {
    if (!events.length) return;
    const rows = JSON.stringify(events.map(toRowJson));
    const runner = this.txHost.isTransactionActive() ? this.txHost.tx.queryRunner : undefined;
    const carrier = runner?.isTransactionActive ? commitCarrier((runner as { databaseConnection?: unknown }).databaseConnection) : null;
    if (carrier) {
      carrier.sendWithCommit(`${INSERT_INTO_INBOX}${escapeLiteral(rows)}::jsonb)`);
      return;
    }
    await this.txHost.tx.query(`${INSERT_INTO_INBOX}$1::jsonb)`, [rows]);
  }

  async list(organizationId: string, filters: AuditFilters, page: PageRequest): Promise<Page<AuditEvent>> {
    const { where, params } = filtered(organizationId, filters);
    if (page.cursor) {
      const { createdAt, id } = decodeCursor(page.cursor);
      where.push(`(occurred_at, id) < ($${params.push(createdAt)}, $${params.push(id)})`);
    }
    const rows = await this.rows(`${everything(where)} ORDER BY occurred_at DESC, id DESC LIMIT $${params.push(page.limit + 1)}`, params);
    return toPage(
      rows.map((event) => ({ ...event, createdAt: event.occurredAt })),
      page.limit,
      ({ createdAt: _, ...event }) => event,
    );
  }

  oldestFirst(organizationId: string, filters: AuditFilters, after: AuditEvent | null, limit: number): Promise<AuditEvent[]> {
    const { where, params } = filtered(organizationId, filters);
    if (after) where.push(`(occurred_at, id) > ($${params.push(after.occurredAt)}, $${params.push(after.id)})`);
    return this.rows(`${everything(where)} ORDER BY occurred_at, id LIMIT $${params.push(limit)}`, params);
  }

  chain(organizationId: string, fromSequence: number, limit: number): Promise<AuditEvent[]> {
    return this.rows(`SELECT * FROM audit_events WHERE organization_id = $1 AND sequence >= $2 ORDER BY sequence LIMIT $3`, [
      organizationId,
      fromSequence,
      limit,
    ]);
  }

  async countUnsealed(organizationId: string): Promise<number> {
    const [{ count }] = await this.txHost.tx.query<Array<{ count: number }>>(
      'SELECT count(*)::int AS count FROM audit_inbox WHERE organization_id = $1',
      [organizationId],
    );
    return count;
  }

  async head(organizationId: string): Promise<ChainHead | null> {
    const [head] = await this.txHost.tx.query<
      Array<Record<'sequence' | 'hash' | 'purged_through', string> & Record<'purged_hash' | 'keyed_from' | 'keyed_mac', string | null>>
    >('SELECT sequence, hash, purged_through, purged_hash, keyed_from, keyed_mac FROM audit_chain_heads WHERE organization_id = $1', [
      organizationId,
    ]);
    return head
      ? {
          sequence: Number(head.sequence),
          hash: head.hash,
          purgedThrough: Number(head.purged_through),
          purgedHash: head.purged_hash,
          keyedFrom: head.keyed_from === null ? null : Number(head.keyed_from),
          keyedMac: head.keyed_mac,
        }
      : null;
  }

  /**
   * The hash a marked start continues from is read from the log (the event before it, or the
   * last purged one), not from the head: another process may have sealed past it already.
   */
  async signKeyedStarts(sign: (organizationId: string, keyedFrom: number, previousHash: string) => string): Promise<number> {
    if (!this.migrations.ranThisBoot(KEYED_START_MIGRATION)) return 0;
    const starts = await this.txHost.tx.query<Array<{ organization_id: string; keyed_from: string; previous_hash: string | null }>>(
      `SELECT h.organization_id, h.keyed_from,
              CASE WHEN h.keyed_from = 1 THEN $1 WHEN h.purged_through = h.keyed_from - 1 THEN h.purged_hash ELSE e.hash END AS previous_hash
         FROM audit_chain_heads h
         LEFT JOIN audit_events e ON e.organization_id = h.organization_id AND e.sequence = h.keyed_from - 1
        WHERE h.keyed_mac IS NULL AND h.keyed_from IS NOT NULL`,
      [GENESIS_HASH],
    );
    let signed = 0;
    for (const start of starts) {
      if (!start.previous_hash) continue;
      await this.txHost.tx.query('UPDATE audit_chain_heads SET keyed_mac = $2 WHERE organization_id = $1 AND keyed_mac IS NULL', [
        start.organization_id,
        sign(start.organization_id, Number(start.keyed_from), start.previous_hash),
      ]);
      signed++;
    }
    return signed;
  }

  async recordedPurge(organizationId: string): Promise<number> {
    const [latest] = await this.txHost.tx.query<Array<{ changes: { after?: { throughSequence?: number } } | null }>>(
      `${everything(['organization_id = $1', "action = 'audit.purged'"])} ORDER BY occurred_at DESC, id DESC LIMIT 1`,
      [organizationId],
    );
    return Number(latest?.changes?.after?.throughSequence ?? 0);
  }

  async retention(organizationId: string): Promise<number | null> {
    const [row] = await this.txHost.tx.query<Array<{ retention_days: number }>>(
      'SELECT retention_days FROM audit_settings WHERE organization_id = $1',
      [organizationId],
    );
    return row?.retention_days ?? null;
  }

  async setRetention(organizationId: string, days: number): Promise<void> {
    await this.txHost.tx.query(
      `INSERT INTO audit_settings (organization_id, retention_days) VALUES ($1, $2)
       ON CONFLICT (organization_id) DO UPDATE SET retention_days = excluded.retention_days, updated_at = now()`,
      [organizationId, days],
    );
  }

  async chainedOrganizations(): Promise<string[]> {
    const rows = await this.txHost.tx.query<Array<{ organization_id: string }>>('SELECT organization_id FROM audit_chain_heads');
    return rows.map((row) => row.organization_id);
  }

  /** Through `audit_purge`, the function that runs as the one role the log lets delete (see the AuditRetention migration). */
  async purge(organizationId: string, maxDays: number, limit: number): Promise<AuditPurge> {
    const [row] = await this.txHost.tx.query<Array<{ purged: number; through_sequence: string; older_than: Date; retention_days: number }>>(
      'SELECT * FROM audit_purge($1, $2, $3)',
      [organizationId, maxDays, limit],
    );
    return {
      purged: row.purged,
      throughSequence: Number(row.through_sequence),
      olderThan: new Date(row.older_than),
      retentionDays: row.retention_days,
    };
  }

  sealPending(
    organizationId: string | null,
    limit: number,
    seal: (events: AuditEvent[], heads: Map<string, { sequence: number; hash: string }>) => Seal[],
    sealed: (events: AuditEvent[]) => Promise<void>,
  ): Promise<number> {
    return this.txHost.withTransaction(async () => {
      const tx = this.txHost.tx;
      const [{ locked }] = await tx.query<Array<{ locked: boolean }>>(`SELECT pg_try_advisory_xact_lock(${SEALING_LOCK}) AS locked`);
      if (!locked) return 0;
      const pending = await this.rows(
        `SELECT * FROM audit_inbox ${organizationId ? 'WHERE organization_id = $2' : ''} ORDER BY id LIMIT $1`,
        organizationId ? [limit, organizationId] : [limit],
      );
      if (!pending.length) return 0;
      const organizations = [...new Set(pending.map((e) => e.organizationId))];
      const heads = await tx.query<Array<{ organization_id: string; sequence: string; hash: string }>>(
        'SELECT organization_id, sequence, hash FROM audit_chain_heads WHERE organization_id = ANY($1::uuid[])',
        [organizations],
      );
      const seals = seal(pending, new Map(heads.map((h) => [h.organization_id, { sequence: Number(h.sequence), hash: h.hash }])));
      const byId = new Map(seals.map((s) => [s.id, s]));
      const sealedEvents = pending.map((event) => {
        const { sequence, previousHash, hash } = byId.get(event.id)!;
        return { ...event, sequence, previousHash, hash };
      });
      // Into the log, copied from the inbox with each one's seal (only the seals travel), then
      // out of the inbox (its trigger lets an event go only once it is in the log).
      await tx.query(
        `INSERT INTO audit_events (${CONTENT}, sequence, previous_hash, hash)
           SELECT ${CONTENT.split(', ')
             .map((column) => `i.${column}`)
             .join(', ')}, s.sequence, s.previous_hash, s.hash
             FROM jsonb_to_recordset($1::jsonb) AS s(id uuid, sequence bigint, previous_hash text, hash text)
             JOIN audit_inbox i ON i.id = s.id`,
        [
          JSON.stringify(
            seals.map((seal) => ({ id: seal.id, sequence: seal.sequence, previous_hash: seal.previousHash, hash: seal.hash })),
          ),
        ],
      );
      await tx.query('DELETE FROM audit_inbox WHERE id = ANY($1::uuid[])', [pending.map((e) => e.id)]);
      const last = new Map(seals.map((s) => [s.organizationId, s]));
      const starts = new Map(seals.filter((s) => s.startMac).map((s) => [s.organizationId, s.startMac]));
      await tx.query(
        `INSERT INTO audit_chain_heads (organization_id, sequence, hash, keyed_from, keyed_mac)
           SELECT organization_id, sequence, hash, 1, keyed_mac
             FROM jsonb_to_recordset($1::jsonb) AS h(organization_id uuid, sequence bigint, hash text, keyed_mac text)
         ON CONFLICT (organization_id) DO UPDATE SET sequence = excluded.sequence, hash = excluded.hash`,
        [
          JSON.stringify(
            [...last.values()].map((s) => ({
              organization_id: s.organizationId,
              sequence: s.sequence,
              hash: s.hash,
              // A new chain's head is inserted with its keyed start, signed on its first event.
              keyed_mac: starts.get(s.organizationId) ?? null,
            })),
          ),
        ],
      );
      await sealed(sealedEvents);
      return seals.length;
    });
  }

  private async rows(sql: string, params: unknown[]): Promise<AuditEvent[]> {
    const rows = await this.txHost.tx.query<RawEvent[]>(sql, params);
    return rows.map(toDomain);
  }
}

/** The columns an event is written with (the seal's come with the move into the log). */
const CONTENT = 'id, organization_id, occurred_at, actor, actor_id, action, target, target_id, outcome, request_id, changes';
/** Events into the inbox, from a JSON array of rows (the parameter or literal follows). */
const INSERT_INTO_INBOX = `INSERT INTO audit_inbox (${CONTENT}) SELECT ${CONTENT} FROM jsonb_populate_recordset(NULL::audit_inbox, `;

/** Sealed and unsealed events together (an event is in one of the two), under the same conditions. */
function everything(where: string[]): string {
  const conditions = where.join(' AND ');
  return `SELECT * FROM (
      SELECT ${CONTENT}, sequence, previous_hash, hash FROM audit_events WHERE ${conditions}
      UNION ALL
      SELECT ${CONTENT}, NULL::bigint, NULL::char(64), NULL::char(64) FROM audit_inbox WHERE ${conditions}
    ) e`;
}

/** The conditions of the organization and the filters, and their parameters. */
function filtered(organizationId: string, filters: AuditFilters): { where: string[]; params: unknown[] } {
  const params: unknown[] = [organizationId];
  const where = ['organization_id = $1'];
  if (filters.action) where.push(`action = $${params.push(filters.action)}`);
  if (filters.actorId) where.push(`actor_id = $${params.push(filters.actorId)}`);
  if (filters.targetId) where.push(`target_id = $${params.push(filters.targetId)}`);
  if (filters.since) where.push(`occurred_at >= $${params.push(filters.since)}`);
  if (filters.until) where.push(`occurred_at < $${params.push(filters.until)}`);
  return { where, params };
}

interface RawEvent {
  id: string;
  organization_id: string;
  occurred_at: Date;
  actor: AuditEvent['actor'];
  action: string;
  target: AuditEvent['target'];
  outcome: AuditEvent['outcome'];
  request_id: string | null;
  changes: AuditEvent['changes'];
  sequence: string | null;
  previous_hash: string | null;
  hash: string | null;
}

function toDomain(row: RawEvent): AuditEvent {
  return {
    id: row.id,
    organizationId: row.organization_id,
    occurredAt: row.occurred_at,
    actor: row.actor,
    action: row.action,
    target: row.target,
    outcome: row.outcome,
    requestId: row.request_id,
    changes: row.changes,
    sequence: row.sequence === null ? null : Number(row.sequence),
    previousHash: row.previous_hash,
    hash: row.hash,
  };
}

/** An event's content by column name, for jsonb_populate_recordset (into the inbox, and from it into the log). */
function toRowJson(event: NewAuditEvent): Record<string, unknown> {
  return {
    id: event.id,
    organization_id: event.organizationId,
    occurred_at: event.occurredAt,
    actor: event.actor,
    actor_id: event.actor.id,
    action: event.action,
    target: event.target,
    target_id: event.target?.id ?? null,
    outcome: event.outcome,
    request_id: event.requestId,
    changes: event.changes,
  };
}
