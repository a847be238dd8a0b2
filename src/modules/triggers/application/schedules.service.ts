import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { personOf, Principal, withPerson } from '../../../shared/auth/principal';
import { OrganizationShares } from '../../../shared/fairness/organization-shares';
import { DomainError } from '../../../shared/errors/domain-error';
import { assertTenantSchema } from '../../../shared/json-schema/json-schema.validator';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Run } from '../../runs/domain/run';
import { CatchUp, Occurrence, Overlap, Schedule, SCHEDULE_LIMITS } from '../domain/schedule';
import { ScheduleRepository } from '../domain/schedule.repository';
import { Workflow } from '../../workflows/domain/workflow';
import { RunsService } from '../../runs/application/runs.service';
import { WorkflowsService } from '../../workflows/application/workflows.service';

export interface ScheduleFields {
  cron?: string;
  timezone?: string;
  input?: unknown;
  overlap?: Overlap;
  catchUp?: CatchUp;
  enabled?: boolean;
}

/** A schedule with the occurrences it recorded last, as GET shows it. */
export interface ScheduleDetail {
  schedule: Schedule;
  recent: Occurrence[];
}

export function scheduleNotFound(): DomainError {
  return new DomainError('SCHEDULE_NOT_FOUND', 'No such schedule of this workflow');
}

/** A workflow's schedules through the API; the scheduler fires them. */
@Injectable()
export class SchedulesService {
  constructor(
    private readonly workflows: WorkflowsService,
    private readonly schedules: ScheduleRepository,
    private readonly runs: RunsService,
    private readonly shares: OrganizationShares,
    private readonly audit: AuditTrail,
  ) {
    // A deleted workflow's schedules go with it.
    workflows.onDelete((organizationId, workflowId) => this.schedules.deleteOfWorkflow(organizationId, workflowId));
  }

  @Transactional()
  async create(
    caller: Principal,
    workflowId: string,
    fields: ScheduleFields & { cron: string; timezone: string },
  ): Promise<ScheduleDetail> {
    const workflow = await this.workflows.get(caller.organizationId, workflowId);
    assertInput(workflow, fields.input ?? null);
    const counts = await this.schedules.countForCreate(caller.organizationId, workflow.id);
    if (counts.workflow >= SCHEDULE_LIMITS.perWorkflow) {
      throw new DomainError('SCHEDULE_LIMIT_REACHED', `A workflow has at most ${SCHEDULE_LIMITS.perWorkflow} schedules`);
    }
    const quota = await this.shares.limit(caller.organizationId, 'schedules');
    if (counts.organization >= quota) {
      throw new DomainError('SCHEDULE_LIMIT_REACHED', `The organization has used its ${quota} schedules (its tier's quota)`);
    }
    const schedule = Schedule.create({ organizationId: caller.organizationId, workflowId: workflow.id, ...fields });
    await this.schedules.insert(schedule);
    await this.audit.record({ ...audited(schedule, 'schedule.created'), changes: { after: described(schedule) } });
    return { schedule, recent: [] };
  }

  async list(caller: Principal, workflowId: string, page: PageRequest): Promise<Page<Schedule>> {
    await this.workflows.get(caller.organizationId, workflowId);
    return this.schedules.list(caller.organizationId, workflowId, page);
  }

  async get(caller: Principal, workflowId: string, id: string): Promise<ScheduleDetail> {
    const schedule = await this.require(caller, workflowId, id);
    return { schedule, recent: await this.schedules.recent(schedule.id, SCHEDULE_LIMITS.recent) };
  }

  @Transactional()
  async update(caller: Principal, workflowId: string, id: string, fields: ScheduleFields): Promise<ScheduleDetail> {
    const schedule = await this.require(caller, workflowId, id);
    if (fields.input !== undefined) assertInput(await this.workflows.get(caller.organizationId, workflowId), fields.input);
    const before = described(schedule);
    schedule.change(fields);
    await this.schedules.update(schedule);
    await this.audit.record({ ...audited(schedule, 'schedule.updated'), changes: changedFields(before, described(schedule)) });
    return { schedule, recent: await this.schedules.recent(schedule.id, SCHEDULE_LIMITS.recent) };
  }

  @Transactional()
  async delete(caller: Principal, workflowId: string, id: string): Promise<void> {
    const schedule = await this.require(caller, workflowId, id);
    if (!(await this.schedules.delete(caller.organizationId, workflowId, id))) throw scheduleNotFound();
    await this.audit.record({ ...audited(schedule, 'schedule.deleted'), changes: { before: described(schedule) } });
  }

  /** The next `count` fire times from now, in UTC: what the cron and the time zone (DST) make of them. */
  async occurrences(caller: Principal, workflowId: string, id: string, count: number): Promise<Date[]> {
    return (await this.require(caller, workflowId, id)).upcoming(count);
  }

  /** A run now, with the schedule's input, paused or not. */
  async trigger(caller: Principal, workflowId: string, id: string): Promise<Run> {
    const schedule = await this.require(caller, workflowId, id);
    return this.runs.run(caller.organizationId, {
      workflowId,
      input: schedule.input,
      waitSeconds: 0,
      triggeredBy: { type: 'schedule', id: schedule.id, scheduledFor: new Date().toISOString(), ...withPerson(personOf(caller)) },
    });
  }

  private async require(caller: Principal, workflowId: string, id: string): Promise<Schedule> {
    await this.workflows.get(caller.organizationId, workflowId);
    const schedule = await this.schedules.find(caller.organizationId, workflowId, id);
    if (!schedule) throw scheduleNotFound();
    return schedule;
  }
}

/** A schedule has no name: the audit log names it by its cron expression and time zone. */
function audited(schedule: Schedule, action: 'schedule.created' | 'schedule.updated' | 'schedule.deleted') {
  const { organizationId, id, cron, timezone } = schedule.toProps();
  return { organizationId, action, target: { type: 'schedule', id, name: `${cron} (${timezone})` } };
}

/** A schedule as the audit log shows it: what a user sets (not when it fires next). */
function described(schedule: Schedule) {
  const { workflowId, cron, timezone, input, overlap, catchUp, enabled } = schedule.toProps();
  return { workflowId, cron, timezone, input, overlap, catchUp, enabled };
}

/** A schedule's input is checked against the workflow's inputSchema when saved (and again at each run). */
function assertInput(workflow: Workflow, input: unknown): void {
  if (workflow.definition.inputSchema) {
    assertTenantSchema(workflow.definition.inputSchema, input, 'input', `The input of workflow '${workflow.name}'`);
  }
}
