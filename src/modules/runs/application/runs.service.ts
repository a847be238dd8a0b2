import { randomUUID } from 'node:crypto';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { Submission, Submitted } from '../../../queue/durable-jobs';
import { AuditTrail } from '../../../shared/audit/audit-trail';
import { personBehind, Principal, withPerson } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { CANCELED, Failure } from '../../../shared/jobs/outcome';
import { assertTenantSchema } from '../../../shared/json-schema/json-schema.validator';
import { decodeIndexCursor, encodeIndexCursor, Page, PageRequest } from '../../../shared/pagination/cursor';
import {
  ConcurrencyPolicy,
  effectiveNeeds,
  kindOf,
  recordedSteps,
  WORKFLOW_LIMITS,
  WorkflowDefinition,
} from '../../workflows/domain/definition';
import { assertRetryable, keptSteps, RetryGraph } from '../domain/retry';
import { pendingStep, Run, RunItem, runNotFound, StepRun } from '../domain/run';
import { HistoryFilter, RunRepository } from '../domain/run.repository';
import { WorkflowRepository } from '../../workflows/domain/workflow.repository';
import { overLimit, RunConcurrency } from './run-concurrency';
import { RunJobs, runJobOptions } from './run-jobs';
import { StepKinds } from './steps/step-kinds';
import { ChildRuns } from './steps/workflow.step';
import { workflowNotFound, WorkflowsService } from '../../workflows/application/workflows.service';
import { timeOrderedId } from '../../../shared/ids/time-ordered-id';

export interface RunRequest {
  workflowId: string;
  input: unknown;
  /** Seconds to wait for the final status; 0 answers at once. */
  waitSeconds: number;
  idempotencyKey?: string;
  triggeredBy: Run['triggeredBy'];
  /** A version to run; unset: the current one. */
  version?: number | null;
  /** The run's id, when the caller recorded it already (a trigger's event). */
  runId?: string;
  /**
   * What starts this one, and its depth (the new run is one deeper): a run's workflow step
   * (`runId`), or an agent's tool call (`runId` null: the run has no parent run).
   */
  parent?: { runId: string | null; depth: number };
  /** The run this one retries, and the step records it takes over from it by id (the others start pending). */
  retry?: { of: string; kept: ReadonlyMap<string, StepRun> };
}

export interface RetryRequest {
  /** The step to run again, with everything downstream of it; unset: the steps that did not succeed. */
  fromStep?: string;
  /** The old run's version, or the workflow's current one. */
  version: 'same' | 'latest';
  /** Seconds to wait for the final status; 0 answers at once. */
  waitSeconds: number;
  triggeredBy: Run['triggeredBy'];
}

const PARENT_CANCELED: Failure = { code: 'CANCELED', message: 'The run that started it was canceled' };

/** Workflow versions a process keeps read (oldest read first out). */
const VERSIONS_KEPT = 1000;

@Injectable()
export class RunsService implements ChildRuns {
  private readonly versions = new Map<string, { version: number; definition: WorkflowDefinition }>();

  constructor(
    private readonly workflows: WorkflowsService,
    private readonly workflowRows: WorkflowRepository,
    private readonly runs: RunRepository,
    private readonly jobs: RunJobs,
    private readonly kinds: StepKinds,
    private readonly concurrency: RunConcurrency,
    private readonly audit: AuditTrail,
  ) {}

  /** As agent execute: recorded and queued durably first, then waited for up to `waitSeconds`. */
  async run(organizationId: string, request: RunRequest): Promise<Run> {
    return this.settle(await this.enqueue(organizationId, request), request.waitSeconds);
  }

  /** Runs stay readable after their workflow is deleted. */
  async get(caller: Principal, workflowId: string, id: string): Promise<Run> {
    const run = await this.runs.find(caller.organizationId, workflowId, id);
    if (!run) throw runNotFound();
    return run;
  }

  /** As `get`, in one read and without a map's item counts (a live stream reads at every change). */
  async getLive(caller: Principal, workflowId: string, id: string): Promise<Run> {
    const run = await this.runs.findLive(caller.organizationId, workflowId, id);
    if (!run) throw runNotFound();
    return run;
  }

  /** For a live stream of run `id`: `check` again whenever it changed, in any process (see `DurableJobKind.watch`). */
  watch<T>(id: string, timeoutMs: number, check: () => Promise<T | null>): Promise<T | null> {
    return this.jobs.watch(id, timeoutMs, check);
  }

  /** One workflow's runs; WORKFLOW_NOT_FOUND unless it ever existed in the caller's organization. */
  async history(caller: Principal, workflowId: string, page: PageRequest, filter: Omit<HistoryFilter, 'workflowId'>): Promise<Page<Run>> {
    if (!(await this.workflowRows.existed(caller.organizationId, workflowId))) throw workflowNotFound();
    return this.runs.history(caller.organizationId, page, { ...filter, workflowId });
  }

  /** A page of a map step's items, in order; STEP_NOT_FOUND unless the run has the step and it is a map that began. */
  async items(caller: Principal, workflowId: string, runId: string, stepId: string, page: PageRequest): Promise<Page<RunItem>> {
    const run = await this.get(caller, workflowId, runId);
    if (!run.steps.find((s) => s.id === stepId)?.items)
      throw new DomainError('STEP_NOT_FOUND', `The run has no map step '${stepId}' with items`);
    const after = page.cursor ? decodeIndexCursor(page.cursor) : -1;
    const rows = await this.runs.itemPage(runId, stepId, after, page.limit + 1);
    const more = rows.length > page.limit;
    const data = more ? rows.slice(0, page.limit) : rows;
    return { data, nextCursor: more ? encodeIndexCursor(data[data.length - 1].index) : null };
  }

  /** The caller's organization's runs across workflows (`filter.workflowId` narrows to one; an unknown one finds none). */
  async list(caller: Principal, page: PageRequest, filter: HistoryFilter): Promise<Page<Run>> {
    return this.runs.history(caller.organizationId, page, filter);
  }

  /**
   * Queued, running or waiting -> canceled; running steps are aborted through their signal and
   * never recorded as done. The runs its workflow steps started are canceled with it. The
   * audit event is written in the cancel's transaction, once the guarded update canceled it.
   */
  async cancel(caller: Principal, workflowId: string, id: string): Promise<Run> {
    const canceled = await this.cancelTree(caller.organizationId, workflowId, id, CANCELED, (run) =>
      this.audit.record({
        organizationId: run.organizationId,
        action: 'run.canceled',
        target: { type: 'run', id: run.id, name: null },
        changes: { after: { status: run.status, workflowId: run.workflowId, workflowVersion: run.workflowVersion } },
      }),
    );
    if (!canceled) {
      const run = await this.get(caller, workflowId, id);
      throw new DomainError('NOT_CANCELABLE', `The run is already ${run.status} and cannot be canceled`);
    }
    return canceled;
  }

  /** `onCanceled`: in the cancel's transaction, when the run was canceled (not for the runs it started). */
  private async cancelTree(
    organizationId: string,
    workflowId: string,
    id: string,
    error: Failure,
    onCanceled?: (run: Run) => Promise<void>,
  ): Promise<Run | null> {
    const canceled = await this.jobs.cancel(async () => {
      const run = await this.runs.cancel(organizationId, workflowId, id, error);
      if (run && onCanceled) await onCanceled(run);
      return run;
    }, {});
    if (!canceled) return null;
    for (const child of await this.runs.unfinishedChildren(id)) {
      await this.cancelTree(child.organizationId, child.workflowId, child.id, PARENT_CANCELED);
    }
    return canceled;
  }

  /**
   * A new run of a finished run's workflow with its input (`retryOf` on it, `retriedBy` on the
   * old one), which takes over the steps `keptSteps` keeps and runs the rest; waited for up to
   * `waitSeconds`.
   */
  async retry(caller: Principal, workflowId: string, id: string, request: RetryRequest): Promise<Run> {
    return this.settle(await this.enqueueRetry(caller.organizationId, workflowId, id, request), request.waitSeconds);
  }

  /** The retry, its kept steps, its job and the old run's `retriedBy` commit together, or not at all. */
  @Transactional()
  private async enqueueRetry(organizationId: string, workflowId: string, id: string, request: RetryRequest): Promise<Submitted<Run>> {
    const old = await this.runs.find(organizationId, workflowId, id);
    if (!old) throw runNotFound();
    assertRetryable(old, request.fromStep);
    const current = await this.workflows.get(organizationId, workflowId);
    const version = request.version === 'latest' ? current.version : old.workflowVersion;
    const { definition } = await this.pinned(workflowId, version);
    if (request.fromStep !== undefined && !definition.steps.some((s) => s.id === request.fromStep)) {
      throw new DomainError('VALIDATION_FAILED', `Version ${version} of the workflow has no step '${request.fromStep}'`, [
        { path: 'fromStep', message: `fromStep '${request.fromStep}' is not a step of version ${version}` },
      ]);
    }
    const submitted = await this.enqueue(organizationId, {
      workflowId,
      input: old.input,
      version,
      triggeredBy: request.triggeredBy,
      retry: { of: old.id, kept: keptSteps(this.retryGraph(definition), old.steps, request.fromStep) },
    });
    // Guarded on it not being retried yet: of two retries at once, the second waits for the first to commit, then fails here.
    if (!(await this.runs.markRetried(organizationId, old.id, submitted.record.id))) {
      assertRetryable((await this.runs.find(organizationId, workflowId, id)) ?? old, request.fromStep);
      throw runNotFound(); // deleted meanwhile, with its workflow
    }
    await this.audit.record({
      organizationId,
      action: 'run.retried',
      target: { type: 'run', id: old.id, name: null },
      changes: {
        after: { retriedBy: submitted.record.id, fromStep: request.fromStep ?? null, workflowId, workflowVersion: version },
      },
    });
    return submitted;
  }

  private retryGraph(definition: WorkflowDefinition): RetryGraph {
    const kinds = this.kinds.all;
    return {
      order: definition.steps.map((s) => s.id),
      needs: effectiveNeeds(definition.steps, kinds),
      branches: new Map(definition.steps.map((s) => [s.id, kindOf(s, kinds)?.decides?.(s) ?? []])),
    };
  }

  /** After the transaction of an `enqueue` committed: counted, its worker woken, waited for up to `waitSeconds`. */
  settle(submitted: Submitted<Run>, waitSeconds: number): Promise<Run> {
    return this.jobs.settle(submitted, {}, waitSeconds);
  }

  /** A workflow step's child run: recorded and queued, then waited for up to `waitMs`; a repeat of `key` answers the first. */
  async startChild(parent: Run, workflowId: string, input: unknown, key: string, waitMs: number): Promise<Run> {
    const submitted = await this.enqueue(parent.organizationId, {
      workflowId,
      input,
      idempotencyKey: key,
      triggeredBy: { type: 'workflow_run', id: parent.id, ...withPerson(personBehind(parent.triggeredBy)) },
      parent: { runId: parent.id, depth: parent.depth },
    });
    return this.settle(submitted, waitMs / 1000);
  }

  /**
   * Records and queues a run; `settle` it after the commit. In the caller's transaction when one
   * is open; otherwise as the kind does it (DurableJobKind.enqueue: one statement shared with the
   * runs of the moment), or, for a workflow with a concurrency limit, in a transaction of its
   * own, as its place (and its cancel over the limit) commit with it.
   */
  async enqueue(organizationId: string, request: Omit<RunRequest, 'waitSeconds'>): Promise<Submitted<Run>> {
    // A version given is one the caller found live in this organization (a trigger's lookup).
    const { version, definition } = request.version
      ? await this.pinned(request.workflowId, request.version)
      : await this.workflows.get(organizationId, request.workflowId);
    if (definition.inputSchema)
      assertTenantSchema(definition.inputSchema, request.input, 'input', `The input of workflow '${definition.name}'`);
    const workflow = { version, definition };
    if (!definition.concurrency) return this.jobs.enqueue(this.submission(organizationId, request, workflow, null));
    return this.enqueueWithPlace(organizationId, request, workflow, definition.concurrency);
  }

  @Transactional()
  private async enqueueWithPlace(
    organizationId: string,
    request: Omit<RunRequest, 'waitSeconds'>,
    workflow: { version: number; definition: WorkflowDefinition },
    policy: ConcurrencyPolicy,
  ): Promise<Submitted<Run>> {
    const concurrency = {
      key: await this.concurrency.keyOf(organizationId, policy, request.input ?? null),
      limit: policy.limit,
      waitsForPlace: false,
    };
    const submitted = await this.jobs.enqueue({
      ...this.submission(organizationId, request, workflow, concurrency),
      place: (run) => this.concurrency.place(run, policy, (r, reason) => this.cancelOf(r, reason)),
    });
    const { record, created } = submitted;
    if (!created || !record.concurrency?.waitsForPlace || policy.onLimit !== 'cancelNew') return submitted;
    // Beyond the limit with cancelNew: recorded, and canceled with the reason, in the same transaction.
    const canceled = await this.cancelTree(organizationId, record.workflowId, record.id, overLimit(record.concurrency));
    return { record: canceled ?? record, created };
  }

  /** A new run of the workflow's version, queued, with its steps pending (or as a retry keeps them). */
  private submission(
    organizationId: string,
    request: Omit<RunRequest, 'waitSeconds'>,
    { version, definition }: { version: number; definition: WorkflowDefinition },
    concurrency: Run['concurrency'],
  ): Submission<Run> {
    const timeoutMs = definition.timeoutMs ?? WORKFLOW_LIMITS.runTimeoutMs.default;
    return {
      record: {
        id: request.runId ?? timeOrderedId(),
        organizationId,
        workflowId: request.workflowId,
        workflowVersion: version,
        status: 'queued',
        input: request.input ?? null,
        output: null,
        error: null,
        attempts: 0,
        timeoutMs,
        jobId: randomUUID(),
        triggeredBy: request.triggeredBy,
        parentRunId: request.parent?.runId ?? null,
        depth: request.parent ? request.parent.depth + 1 : 0,
        retryOf: request.retry?.of ?? null,
        retriedBy: null,
        concurrency,
        createdAt: new Date(),
        startedAt: null,
        finishedAt: null,
        steps: recordedSteps(definition).map((s) => request.retry?.kept.get(s.id) ?? pendingStep(s.id)),
      },
      sendOptions: runJobOptions({ timeoutMs }),
      idempotency: request.idempotencyKey
        ? { organizationId, scope: `workflow:${request.workflowId}`, key: request.idempotencyKey, body: { input: request.input } }
        : undefined,
    };
  }

  /** Cancels a run and the runs it started, with the reason; false when it had ended. */
  private async cancelOf(run: Pick<Run, 'id' | 'organizationId' | 'workflowId'>, reason: Failure): Promise<boolean> {
    return (await this.cancelTree(run.organizationId, run.workflowId, run.id, reason)) !== null;
  }

  /**
   * A version of the workflow that was saved (a trigger pins one, or names the current one it
   * found). Versions never change once committed: each is read once per process.
   */
  async pinned(workflowId: string, version: number): Promise<{ version: number; definition: WorkflowDefinition }> {
    const key = `${workflowId}:${version}`;
    const cached = this.versions.get(key);
    if (cached) return cached;
    const found = await this.workflowRows.version(workflowId, version);
    if (!found) {
      throw new DomainError('VALIDATION_FAILED', `The workflow has no version ${version}`, [
        { path: 'workflowVersion', message: `workflowVersion ${version} does not exist` },
      ]);
    }
    if (this.versions.size >= VERSIONS_KEPT) this.versions.delete(this.versions.keys().next().value!);
    this.versions.set(key, found);
    return found;
  }
}
