import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../../database/keyset';
import { ReadDatabase } from '../../../database/read-database';
import { openSecrets, sealSecrets } from '../../../shared/crypto/rotating-secrets';
import { SecretBox } from '../../../shared/crypto/secret-box';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { Trigger } from '../domain/trigger';
import { TriggerEvent, TriggerEventRepository, TriggerEventSummary, TriggerRepository } from '../domain/trigger.repository';
import { TriggerEventRow, WorkflowTriggerRow } from './trigger.orm-entities';

/** Triggers with their secrets sealed (AES-256-GCM, bound to the trigger's id). */
@Injectable()
export class TypeOrmTriggerRepository extends TriggerRepository {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly box: SecretBox,
  ) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(WorkflowTriggerRow);
  }

  async insert(trigger: Trigger): Promise<void> {
    await this.rows.insert(this.toRow(trigger));
  }

  async update(trigger: Trigger): Promise<void> {
    await this.rows.update({ id: trigger.id, organizationId: trigger.organizationId }, this.toRow(trigger));
  }

  async find(organizationId: string, workflowId: string, id: string): Promise<Trigger | null> {
    const row = await this.rows.findOneBy({ organizationId, workflowId, id });
    return row ? this.toDomain(row) : null;
  }

  async findLive(id: string): Promise<{ trigger: Trigger; currentVersion: number } | null> {
    // Plain SQL: every hook request starts here.
    const [row] = await this.txHost.tx.query(
      `SELECT t.*, w.version AS current_version FROM workflow_triggers t
         JOIN workflows w ON w.id = t.workflow_id AND w.deleted_at IS NULL
        WHERE t.id = $1 AND t.enabled`,
      [id],
    );
    if (!row) return null;
    const trigger = this.toDomain({
      id: row.id,
      organizationId: row.organization_id,
      workflowId: row.workflow_id,
      name: row.name,
      scheme: row.scheme,
      signatureHeader: row.signature_header,
      signatureEncoding: row.signature_encoding,
      signaturePrefix: row.signature_prefix,
      sealedSecrets: row.sealed_secrets,
      mapping: row.mapping,
      dedupe: row.dedupe,
      dedupeHeader: row.dedupe_header,
      responseMode: row.response_mode,
      waitSeconds: row.wait_seconds,
      workflowVersion: row.workflow_version,
      enabled: row.enabled,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    });
    return { trigger, currentVersion: row.current_version };
  }

  async list(organizationId: string, workflowId: string, page: PageRequest): Promise<Page<Trigger>> {
    const qb = this.rows.createQueryBuilder('t').where('t.organizationId = :organizationId AND t.workflowId = :workflowId', {
      organizationId,
      workflowId,
    });
    return toPage(await keysetPage(qb, page).getMany(), page.limit, (row) => this.toDomain(row));
  }

  async countForCreate(workflowId: string): Promise<number> {
    await this.txHost.tx.query(`SELECT pg_advisory_xact_lock(hashtext('workflow-triggers:' || $1))`, [workflowId]);
    return this.rows.countBy({ workflowId });
  }

  async delete(organizationId: string, workflowId: string, id: string): Promise<boolean> {
    return ((await this.rows.delete({ organizationId, workflowId, id })).affected ?? 0) > 0;
  }

  async deleteOfWorkflow(organizationId: string, workflowId: string): Promise<void> {
    await this.rows.delete({ organizationId, workflowId });
  }

  private toRow(trigger: Trigger): WorkflowTriggerRow {
    const { secrets, ...props } = trigger.toProps();
    return { ...props, sealedSecrets: sealSecrets(this.box, secrets, `trigger:${trigger.id}`) };
  }

  private toDomain(row: WorkflowTriggerRow): Trigger {
    const { sealedSecrets, organization: _o, workflow: _w, ...props } = row;
    return Trigger.rehydrate({ ...props, secrets: openSecrets(this.box, sealedSecrets, `trigger:${row.id}`) });
  }
}

const SUMMARY: Array<keyof TriggerEventRow> = [
  'id',
  'triggerId',
  'organizationId',
  'createdAt',
  'source',
  'status',
  'runId',
  'dedupeKey',
  'error',
  'replayOf',
];

@Injectable()
export class TypeOrmTriggerEventRepository extends TriggerEventRepository {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly reads: ReadDatabase,
  ) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(TriggerEventRow);
  }

  async insert(event: TriggerEvent): Promise<boolean> {
    // A dedupe key is unique within each week's partition by its index; across partitions, the
    // insert holds the key's lock until commit and looks for an earlier event with it.
    if (event.dedupeKey !== null) {
      await this.txHost.tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`${event.triggerId}/${event.dedupeKey}`]);
    }
    // Plain SQL: every accepted hook request writes one.
    const rows: unknown[] = await this.txHost.tx.query(
      `INSERT INTO workflow_trigger_events
         (id, trigger_id, organization_id, created_at, source, status, run_id, dedupe_key, error, replay_of, headers, query, body)
       SELECT $1::uuid, $2::uuid, $3::uuid, $4::timestamptz, $5::varchar, $6::varchar, $7::uuid, $8::varchar, $9::text, $10::uuid,
              $11::jsonb, $12::jsonb, $13::jsonb
        WHERE $8::varchar IS NULL
           OR NOT EXISTS (SELECT 1 FROM workflow_trigger_events WHERE trigger_id = $2::uuid AND dedupe_key = $8::varchar)
       ON CONFLICT DO NOTHING RETURNING id`,
      [
        event.id,
        event.triggerId,
        event.organizationId,
        event.createdAt,
        event.source,
        event.status,
        event.runId,
        event.dedupeKey,
        event.error,
        event.replayOf,
        JSON.stringify(event.headers),
        JSON.stringify(event.query),
        event.body === null ? null : JSON.stringify(event.body),
      ],
    );
    return rows.length > 0;
  }

  async findByDedupeKey(triggerId: string, dedupeKey: string): Promise<TriggerEvent | null> {
    return this.rows.findOneBy({ triggerId, dedupeKey });
  }

  async find(organizationId: string, triggerId: string, id: string): Promise<TriggerEvent | null> {
    return this.rows.findOneBy({ organizationId, triggerId, id });
  }

  /** From the read replica when there is one (ReadDatabase): a page of events may lag. */
  async list(organizationId: string, triggerId: string, page: PageRequest): Promise<Page<TriggerEventSummary>> {
    const qb = this.reads.manager
      .getRepository(TriggerEventRow)
      .createQueryBuilder('e')
      .select(SUMMARY.map((column) => `e.${column}`))
      .where('e.organizationId = :organizationId AND e.triggerId = :triggerId', { organizationId, triggerId });
    return toPage(await keysetPage(qb, page).getMany(), page.limit, (row) => row);
  }
}
