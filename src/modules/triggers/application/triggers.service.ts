import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { personOf, Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { expressionProblem } from '../../../shared/expressions/expression-check';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Trigger, TRIGGER_LIMITS, TriggerScheme, TriggerSettings } from '../domain/trigger';
import { Workflow } from '../../workflows/domain/workflow';
import { TriggerEvent, TriggerEventRepository, TriggerEventSummary, TriggerRepository } from '../domain/trigger.repository';
import { HookAnswer, Hooks, triggerNotFound } from './hooks';
import { RunsService } from '../../runs/application/runs.service';
import { WorkflowsService } from '../../workflows/application/workflows.service';

function eventNotFound(): DomainError {
  return new DomainError('TRIGGER_EVENT_NOT_FOUND', 'No such event of this trigger');
}

/** A workflow's inbound webhook triggers through the API; `Hooks` answers their public URLs. */
@Injectable()
export class TriggersService {
  constructor(
    private readonly workflows: WorkflowsService,
    private readonly triggers: TriggerRepository,
    private readonly eventRows: TriggerEventRepository,
    private readonly runs: RunsService,
    private readonly hooks: Hooks,
    private readonly audit: AuditTrail,
  ) {
    // A deleted workflow's webhook triggers (with their events) go with it.
    workflows.onDelete((organizationId, workflowId) => this.triggers.deleteOfWorkflow(organizationId, workflowId));
  }

  /** The new trigger, its secret readable this once. */
  @Transactional()
  async create(
    caller: Principal,
    workflowId: string,
    fields: TriggerSettings & { scheme: TriggerScheme; secret?: string },
  ): Promise<Trigger> {
    const workflow = await this.workflows.get(caller.organizationId, workflowId);
    await this.assertSettings(workflow.id, fields);
    if ((await this.triggers.countForCreate(workflow.id)) >= TRIGGER_LIMITS.perWorkflow) {
      throw new DomainError('TRIGGER_LIMIT_REACHED', `A workflow has at most ${TRIGGER_LIMITS.perWorkflow} webhook triggers`);
    }
    const trigger = Trigger.create({ organizationId: caller.organizationId, workflowId: workflow.id, ...fields });
    await this.triggers.insert(trigger);
    await this.audit.record({ ...audited(trigger, 'trigger.created'), changes: { after: described(trigger) } });
    return trigger;
  }

  async list(caller: Principal, workflowId: string, page: PageRequest): Promise<Page<Trigger>> {
    await this.workflows.get(caller.organizationId, workflowId);
    return this.triggers.list(caller.organizationId, workflowId, page);
  }

  get(caller: Principal, workflowId: string, id: string): Promise<Trigger> {
    return this.require(caller, workflowId, id);
  }

  @Transactional()
  async update(caller: Principal, workflowId: string, id: string, fields: TriggerSettings): Promise<Trigger> {
    const trigger = await this.require(caller, workflowId, id);
    await this.assertSettings(workflowId, fields);
    const before = described(trigger);
    trigger.change(fields);
    await this.triggers.update(trigger);
    await this.audit.record({ ...audited(trigger, 'trigger.updated'), changes: changedFields(before, described(trigger)) });
    return trigger;
  }

  @Transactional()
  async delete(caller: Principal, workflowId: string, id: string): Promise<void> {
    const trigger = await this.require(caller, workflowId, id);
    if (!(await this.triggers.delete(caller.organizationId, workflowId, id))) throw triggerNotFound();
    await this.audit.record({ ...audited(trigger, 'trigger.deleted'), changes: { before: described(trigger) } });
  }

  /** The trigger with a new secret (readable this once); the old one works `graceSeconds` more. */
  @Transactional()
  async rotateSecret(caller: Principal, workflowId: string, id: string, graceSeconds: number): Promise<Trigger> {
    const trigger = await this.require(caller, workflowId, id);
    trigger.rotateSecret(graceSeconds);
    await this.triggers.update(trigger);
    // A rotation is a change of the trigger; the new secret is never recorded, only that it was rotated.
    await this.audit.record({ ...audited(trigger, 'trigger.updated'), changes: { after: { rotated: true, graceSeconds } } });
    return trigger;
  }

  async events(caller: Principal, workflowId: string, id: string, page: PageRequest): Promise<Page<TriggerEventSummary>> {
    const trigger = await this.require(caller, workflowId, id);
    return this.eventRows.list(caller.organizationId, trigger.id, page);
  }

  async event(caller: Principal, workflowId: string, id: string, eventId: string): Promise<TriggerEvent> {
    const trigger = await this.require(caller, workflowId, id);
    const event = await this.eventRows.find(caller.organizationId, trigger.id, eventId);
    if (!event) throw eventNotFound();
    return event;
  }

  /** A new event and run from a stored request, mapped with the trigger's current mapping. */
  async replay(caller: Principal, workflowId: string, id: string, eventId: string): Promise<HookAnswer> {
    const { workflow, trigger } = await this.withWorkflow(caller, workflowId, id);
    const event = await this.eventRows.find(caller.organizationId, trigger.id, eventId);
    if (!event) throw eventNotFound();
    const { headers, query, body } = event;
    return this.hooks.fire(
      trigger,
      workflow.version,
      { headers, query, body },
      { source: event.source, dedupeKey: null, replayOf: event.id },
      personOf(caller),
    );
  }

  private async require(caller: Principal, workflowId: string, id: string): Promise<Trigger> {
    return (await this.withWorkflow(caller, workflowId, id)).trigger;
  }

  private async withWorkflow(caller: Principal, workflowId: string, id: string): Promise<{ workflow: Workflow; trigger: Trigger }> {
    const workflow = await this.workflows.get(caller.organizationId, workflowId);
    const trigger = await this.triggers.find(caller.organizationId, workflow.id, id);
    if (!trigger) throw triggerNotFound();
    return { workflow, trigger };
  }

  /** What the domain cannot check alone: the mapping compiles, a pinned version exists. */
  private async assertSettings(workflowId: string, fields: TriggerSettings): Promise<void> {
    if (fields.mapping) {
      const problem = expressionProblem(fields.mapping);
      if (problem) {
        throw new DomainError('VALIDATION_FAILED', `mapping is not a valid JSONata expression: ${problem}`, [
          { path: 'mapping', message: problem },
        ]);
      }
    }
    if (fields.workflowVersion) await this.runs.pinned(workflowId, fields.workflowVersion);
  }
}

function audited(trigger: Trigger, action: 'trigger.created' | 'trigger.updated' | 'trigger.deleted') {
  const { organizationId, id, name } = trigger.toProps();
  return { organizationId, action, target: { type: 'trigger', id, name } };
}

/** A trigger as the audit log shows it: its settings, never its secrets. */
function described(trigger: Trigger) {
  const { id: _id, organizationId: _org, secrets: _secrets, createdAt: _at, updatedAt: _up, ...settings } = trigger.toProps();
  return settings;
}
