import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { keysetPage } from '../../../database/keyset';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { Occurrence, Schedule } from '../domain/schedule';
import { ScheduleRepository } from '../domain/schedule.repository';
import { ScheduleOccurrenceRow, WorkflowScheduleRow } from './trigger.orm-entities';

/** Recorded occurrences kept per schedule. */
const KEPT_OCCURRENCES = 200;

@Injectable()
export class TypeOrmScheduleRepository extends ScheduleRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(WorkflowScheduleRow);
  }

  async insert(schedule: Schedule): Promise<void> {
    await this.rows.insert(toRow(schedule));
  }

  async update(schedule: Schedule): Promise<void> {
    await this.rows.update({ id: schedule.id, organizationId: schedule.organizationId }, toRow(schedule));
  }

  async find(organizationId: string, workflowId: string, id: string): Promise<Schedule | null> {
    const row = await this.rows.findOneBy({ organizationId, workflowId, id });
    return row ? Schedule.rehydrate(row) : null;
  }

  async list(organizationId: string, workflowId: string, page: PageRequest): Promise<Page<Schedule>> {
    const qb = this.rows.createQueryBuilder('s').where('s.organizationId = :organizationId AND s.workflowId = :workflowId', {
      organizationId,
      workflowId,
    });
    return toPage(await keysetPage(qb, page).getMany(), page.limit, (row) => Schedule.rehydrate(row));
  }

  async countForCreate(organizationId: string, workflowId: string): Promise<{ workflow: number; organization: number }> {
    await this.txHost.tx.query(`SELECT pg_advisory_xact_lock(hashtext('organization-schedules:' || $1))`, [organizationId]);
    const [counts] = await this.txHost.tx.query<Array<{ workflow: string; organization: string }>>(
      `SELECT count(*) FILTER (WHERE workflow_id = $2) AS workflow, count(*) AS organization
         FROM workflow_schedules WHERE organization_id = $1`,
      [organizationId, workflowId],
    );
    return { workflow: Number(counts.workflow), organization: Number(counts.organization) };
  }

  async delete(organizationId: string, workflowId: string, id: string): Promise<boolean> {
    return ((await this.rows.delete({ organizationId, workflowId, id })).affected ?? 0) > 0;
  }

  async deleteOfWorkflow(organizationId: string, workflowId: string): Promise<void> {
    await this.rows.delete({ organizationId, workflowId });
  }

  async dueOrganizations(now: Date, limit: number): Promise<string[]> {
    const rows = await this.txHost.tx.query<Array<{ organization_id: string }>>(
      `SELECT DISTINCT organization_id FROM workflow_schedules WHERE enabled AND next_fire_at <= $1 LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => r.organization_id);
  }

  async claimDue(now: Date, organizationId: string): Promise<Schedule | null> {
    const row = await this.rows
      .createQueryBuilder('s')
      .where('s.organizationId = :organizationId AND s.enabled AND s.nextFireAt <= :now', { organizationId, now })
      .orderBy('s.nextFireAt')
      .limit(1)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .getOne();
    return row ? Schedule.rehydrate(row) : null;
  }

  async record(schedule: Schedule, occurrences: Occurrence[]): Promise<void> {
    if (!occurrences.length) return;
    const rows = this.txHost.tx.getRepository(ScheduleOccurrenceRow);
    await rows.insert(occurrences.map((o) => ({ ...o, scheduleId: schedule.id, organizationId: schedule.organizationId })));
    await this.txHost.tx.query(
      `DELETE FROM workflow_schedule_occurrences WHERE schedule_id = $1 AND id < (
         SELECT min(id) FROM (SELECT id FROM workflow_schedule_occurrences WHERE schedule_id = $1 ORDER BY id DESC LIMIT $2) kept)`,
      [schedule.id, KEPT_OCCURRENCES],
    );
  }

  async recent(scheduleId: string, limit: number): Promise<Occurrence[]> {
    const rows = await this.txHost.tx
      .getRepository(ScheduleOccurrenceRow)
      .find({ where: { scheduleId }, order: { id: 'DESC' }, take: limit });
    return rows.map(({ scheduledFor, outcome, runId, at }) => ({ scheduledFor, outcome, runId, at }));
  }
}

/** The input is any JSON; TypeORM writes a jsonb column's value as JSON text. */
function toRow(schedule: Schedule): QueryDeepPartialEntity<WorkflowScheduleRow> {
  const props = schedule.toProps();
  return { ...props, input: props.input as object };
}
