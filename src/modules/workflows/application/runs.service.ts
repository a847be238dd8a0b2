import { randomUUID } from 'node:crypto';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { awaitFinal } from '../../../queue/await-final';
import { JobQueue } from '../../../queue/job-queue';
import { Signals } from '../../../queue/signals';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { IdempotencyKeys } from '../../../shared/idempotency/idempotency-keys';
import { assertTenantSchema } from '../../../shared/json-schema/json-schema.validator';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { WORKFLOW_LIMITS } from '../domain/definition';
import { isRunFinished, Run } from '../domain/run';
import { HistoryFilter, RunRepository, WorkflowRepository } from '../domain/workflow.repository';
import { RUN_CANCELED, RUN_FINISHED, RUN_QUEUE, RunJob, runJobOptions } from './run-job';
import { workflowNotFound, WorkflowsService } from './workflows.service';

export interface RunRequest {
  workflowId: string;
  input: unknown;
  /** Seconds to wait for the final status; 0 answers at once. */
  waitSeconds: number;
  idempotencyKey?: string;
  triggeredBy: Run['triggeredBy'];
}

export function runNotFound(): DomainError {
  return new DomainError('RUN_NOT_FOUND', 'No such run of this workflow');
}

@Injectable()
export class RunsService {
  constructor(
    private readonly workflows: WorkflowsService,
    private readonly workflowRows: WorkflowRepository,
    private readonly runs: RunRepository,
    private readonly idempotency: IdempotencyKeys,
    private readonly queue: JobQueue,
    private readonly signals: Signals,
  ) {}

  /** As agent execute: recorded and queued durably first, then waited for up to `waitSeconds`. */
  async run(organizationId: string, request: RunRequest): Promise<Run> {
    const { run, created } = await this.enqueue(organizationId, request);
    return awaitFinal(this.signals, this.queue, {
      record: run,
      created,
      queue: RUN_QUEUE,
      finished: RUN_FINISHED,
      id: run.id,
      waitSeconds: request.waitSeconds,
      isFinal: isRunFinished,
      read: () => this.runs.findById(run.id),
    });
  }

  /** Runs stay readable after their workflow is deleted. */
  async get(caller: Principal, workflowId: string, id: string): Promise<Run> {
    const run = await this.runs.find(caller.organizationId, workflowId, id);
    if (!run) throw runNotFound();
    return run;
  }

  async history(caller: Principal, workflowId: string, page: PageRequest, filter: HistoryFilter): Promise<Page<Run>> {
    if (!(await this.workflowRows.existed(caller.organizationId, workflowId))) throw workflowNotFound();
    return this.runs.history(caller.organizationId, workflowId, page, filter);
  }

  /** Queued or running -> canceled; running steps are aborted through their signal and never recorded as done. */
  async cancel(caller: Principal, workflowId: string, id: string): Promise<Run> {
    const canceled = await this.runs.cancel(caller.organizationId, workflowId, id);
    if (!canceled) {
      const run = await this.get(caller, workflowId, id);
      throw new DomainError('NOT_CANCELABLE', `The run is already ${run.status} and cannot be canceled`);
    }
    this.signals.publish(RUN_CANCELED, id);
    this.signals.publish(RUN_FINISHED, id, canceled);
    return canceled;
  }

  @Transactional()
  private async enqueue(organizationId: string, request: RunRequest): Promise<{ run: Run; created: boolean }> {
    const workflow = await this.workflows.get(organizationId, request.workflowId);
    const { definition } = workflow;
    if (definition.inputSchema)
      assertTenantSchema(definition.inputSchema, request.input, 'input', `The input of workflow '${workflow.name}'`);

    const id = randomUUID();
    if (request.idempotencyKey) {
      const scope = { organizationId, scope: `workflow:${workflow.id}`, key: request.idempotencyKey, body: { input: request.input } };
      const earlier = await this.idempotency.claim(scope, id);
      if (earlier) {
        const run = await this.runs.findById(earlier);
        if (run) return { run, created: false };
      }
    }
    const run: Run = {
      id,
      organizationId,
      workflowId: workflow.id,
      workflowVersion: workflow.version,
      status: 'queued',
      input: request.input ?? null,
      output: null,
      error: null,
      attempts: 0,
      timeoutMs: definition.timeoutMs ?? WORKFLOW_LIMITS.runTimeoutMs.default,
      jobId: randomUUID(),
      triggeredBy: request.triggeredBy,
      createdAt: new Date(),
      startedAt: null,
      finishedAt: null,
      steps: definition.steps.map((s) => ({
        id: s.id,
        status: 'pending',
        attempts: 0,
        input: null,
        output: null,
        error: null,
        executionId: null,
        startedAt: null,
        finishedAt: null,
      })),
    };
    await this.runs.insert(
      run,
      definition.steps.map((s) => s.id),
    );
    await this.queue.send(RUN_QUEUE, { runId: id } satisfies RunJob, { ...runJobOptions(run), id: run.jobId! });
    return { run, created: true };
  }
}
