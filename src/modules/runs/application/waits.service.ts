import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { JobReconciler } from '../../../queue/job-reconciler';
import { AuditTrail } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { assertTenantSchema } from '../../../shared/json-schema/json-schema.validator';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Run, runNotFound } from '../domain/run';
import { RunRepository } from '../domain/run.repository';
import { answeredBy, isApprover, startedRun, StepWait, WaitAnswer } from '../domain/wait';
import { WaitRepository } from '../domain/wait.repository';
import { RunJobs } from './run-jobs';

/** An event for the event waits of an organization (`POST /api/events`). */
export interface WorkflowEvent {
  name: string;
  key: string;
  data: unknown;
}

export function stepNotWaiting(stepId: string, why: string): DomainError {
  return new DomainError('STEP_NOT_WAITING', `Step '${stepId}' ${why}`);
}

/**
 * The waits of wait steps: opened by the step as it begins (taking an event kept for it),
 * answered through the API (an approval, by an approver) or by an event, and listed for the
 * approvers. An answer is recorded and wakes the run in one transaction; the run's worker takes
 * the answer as the step's output.
 */
@Injectable()
export class WaitsService {
  constructor(
    private readonly waits: WaitRepository,
    private readonly runs: RunRepository,
    private readonly jobs: RunJobs,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly config: AppConfig,
    reconciler: JobReconciler,
    private readonly audit: AuditTrail,
  ) {
    reconciler.addChore(() => this.waits.purgeKept(new Date()));
  }

  /** Records the step's wait, or answers the one recorded (a step resumed after a crash); an event wait takes a kept event. */
  open(wait: StepWait): Promise<StepWait> {
    return this.txHost.withTransaction(async () => {
      if (wait.kind === 'event') await this.waits.lockEvent(wait.organizationId, wait.eventName!, wait.eventKey!);
      const opened = await this.waits.open(wait);
      if (opened.status !== 'pending' || opened.kind !== 'event') return opened;
      const kept = await this.waits.kept(opened.organizationId, opened.eventName!, opened.eventKey!, new Date());
      if (!kept) return opened;
      const answer: WaitAnswer = { data: kept.data, by: kept.by, at: kept.createdAt.toISOString() };
      await this.waits.answer(opened.runId, opened.stepId, answer);
      return { ...opened, status: 'answered', answer };
    });
  }

  find(runId: string, stepId: string): Promise<StepWait | null> {
    return this.waits.find(runId, stepId);
  }

  /** Closes a wait at its timeout; false when an answer came first (the step takes it). */
  expire(runId: string, stepId: string): Promise<boolean> {
    return this.waits.expire(runId, stepId);
  }

  /**
   * Answers a waiting step: the caller must be an approver of an approval (and not its run's
   * starter where `selfApproval` is false), the data must match the wait's schema; the step's
   * output is `{ data, by, at }` and its run goes on.
   */
  async complete(caller: Principal, workflowId: string, runId: string, stepId: string, data: unknown): Promise<WaitAnswer> {
    let wake = () => {};
    const answer = await this.txHost.withTransaction(async () => {
      const run = await this.runs.find(caller.organizationId, workflowId, runId);
      if (!run) throw runNotFound();
      const wait = await this.waits.find(runId, stepId);
      if (!wait) throw this.noWait(run, stepId);
      if (wait.status !== 'pending' || (wait.timeoutAt && wait.timeoutAt.getTime() <= Date.now()))
        throw stepNotWaiting(
          stepId,
          wait.status === 'answered' ? 'was answered already' : 'no longer waits (it timed out or its run ended)',
        );
      if (wait.kind === 'approval') this.assertMayApprove(caller, run, wait);
      if (wait.schema) assertTenantSchema(wait.schema, data, 'data', `The answer to step '${stepId}'`);
      const answer: WaitAnswer = { data: data ?? null, by: answeredBy(caller), at: new Date().toISOString() };
      // The run is locked (and its job moved up) first: a worker parking it now sees the answer once this commits.
      const resumed = await this.jobs.resume([runId]);
      if (!(await this.waits.answer(runId, stepId, answer))) throw stepNotWaiting(stepId, 'was answered already');
      await this.audit.record({
        organizationId: run.organizationId,
        action: 'run.approved',
        target: { type: 'run', id: run.id, name: null },
        changes: { after: { stepId, for: wait.kind, workflowId: run.workflowId, answer: answer.data } },
      });
      wake = resumed;
      return answer;
    });
    wake();
    return answer;
  }

  /**
   * Answers every event wait of the organization for the event's name and key, and wakes their
   * runs; an event none waited for is kept (WORKFLOW_EVENT_KEEP_SECONDS) for a wait that begins
   * just after it. Answers how many waits it answered and whether it was kept.
   */
  async publish(caller: Principal, event: WorkflowEvent): Promise<{ answered: number; kept: boolean }> {
    const { organizationId } = caller;
    let wake = () => {};
    const result = await this.txHost.withTransaction(async () => {
      await this.waits.lockEvent(organizationId, event.name, event.key);
      const now = new Date();
      const answer: WaitAnswer = { data: event.data ?? null, by: { type: 'event', name: event.name }, at: now.toISOString() };
      const runIds = await this.waits.answerEvent(organizationId, event.name, event.key, answer);
      if (runIds.length) {
        wake = await this.jobs.resume(runIds);
        return { answered: runIds.length, kept: false };
      }
      const keepSeconds = this.config.workflowEvents.keepSeconds;
      if (!keepSeconds) return { answered: 0, kept: false };
      const expiresAt = new Date(now.getTime() + keepSeconds * 1000);
      await this.waits.keep({ organizationId, ...event, by: answer.by!, createdAt: now, expiresAt });
      return { answered: 0, kept: true };
    });
    wake();
    return result;
  }

  /** The approvals the caller may give now, oldest first. */
  pendingApprovals(caller: Principal, page: PageRequest): Promise<Page<StepWait>> {
    const keyId = caller.credential.type === 'api_key' ? caller.credential.keyId : null;
    return this.waits.pendingApprovals({ ...caller, keyId }, page);
  }

  private assertMayApprove(caller: Principal, run: Run, wait: StepWait): void {
    if (!isApprover(wait.approvers, caller))
      throw new DomainError('FORBIDDEN', `You are not one of the approvers of step '${wait.stepId}'`);
    if (!wait.selfApproval && startedRun(run.triggeredBy, caller))
      throw new DomainError('FORBIDDEN', `Step '${wait.stepId}' may not be approved by whoever started its run`);
  }

  private noWait(run: Run, stepId: string): DomainError {
    const step = run.steps.find((s) => s.id === stepId);
    if (!step) return new DomainError('STEP_NOT_FOUND', `The run has no step '${stepId}'`);
    return stepNotWaiting(stepId, step.status === 'pending' ? 'has not begun' : `is ${step.status} and waits for no answer`);
  }
}
