import { HistoryFilters, Page, PageRequest } from '../../../shared/pagination/cursor';
import { JobRef } from '../../../shared/jobs/job-ref';
import { Failure, Outcome } from '../../../shared/jobs/outcome';
import { Run, RunItem, RunStatus, StepStatus } from './run';
import { WaitingFor } from './wait';
import { Statement } from '../../../shared/jobs/statement';

export interface StepWrite {
  runId: string;
  stepId: string;
  status: StepStatus;
  attempts?: number;
  input?: unknown;
  output?: unknown;
  error?: Failure | null;
  executionId?: string | null;
  /** A `waiting` step's time to go on (cleared by any other write). */
  resumeAt?: Date | null;
  /** A `skipped` step's reason (cleared by any other write). */
  reason?: string | null;
  /** The run a workflow step started (kept once set). */
  childRunId?: string | null;
  /** What a `waiting` wait step waits for (cleared by any other write). */
  waitingFor?: WaitingFor | null;
}

/** A change of one map item, guarded like a step's. */
export interface ItemWrite {
  runId: string;
  stepId: string;
  index: number;
  status: RunItem['status'];
  attempts: number;
  output?: unknown;
  error?: Failure | null;
  executionId?: string | null;
  resumeAt?: Date | null;
}

/** An unfinished run as the reconciler sees it. */
export interface UnfinishedRun {
  id: string;
  organizationId: string;
  jobId: string | null;
  attempts: number;
  timeoutMs: number;
}

/** A run that was handed a place: now on the job `jobId`, to be sent. */
export interface AdmittedRun {
  id: string;
  organizationId: string;
  jobId: string;
  timeoutMs: number;
}

/** A workflow's key with runs waiting for a place, and the limit of the oldest of them. */
export interface WaitingKey {
  workflowId: string;
  key: string;
  limit: number;
}

export interface HistoryFilter extends HistoryFilters {
  status?: RunStatus;
  /** One workflow's runs; unset: every workflow's of the organization. */
  workflowId?: string;
}

/**
 * Runs and their steps. Every write is guarded in SQL: steps change only while their run is
 * `running` and they are not final; a run finishes only from `running`; so a canceled run
 * never turns `succeeded`, and a late worker cannot undo a recorded step.
 */
export abstract class RunRepository {
  /** The run and its steps: `pending`, or as recorded (the steps a retry keeps). */
  abstract insert(run: Run): Promise<void>;
  /** Runs as `insert` does, in one statement with `alongside` (the statement queueing their jobs) inside it: they commit together. */
  abstract insertAll(runs: Run[], alongside: Statement): Promise<void>;
  /**
   * Marks a finished run of the organization as retried by `retryId`, unless another retry
   * marked it first; false when it is not (so of two concurrent retries, one commits).
   */
  abstract markRetried(organizationId: string, id: string, retryId: string): Promise<boolean>;
  abstract find(organizationId: string, workflowId: string, id: string): Promise<Run | null>;
  /** The run and its steps in one read, without a map's item counts: what a live stream reads at each change. */
  abstract findLive(organizationId: string, workflowId: string, id: string): Promise<Run | null>;
  abstract findById(id: string): Promise<Run | null>;
  /** The organization's runs (one workflow's with `filter.workflowId`), newest first, without steps. */
  abstract history(organizationId: string, page: PageRequest, filter: HistoryFilter): Promise<Page<Run>>;
  /** Takes up unfinished runs still on the job that asks (`running`; attempts + 1 unless it resumes from `waiting`). */
  abstract start(jobs: JobRef[]): Promise<Run[]>;
  /** A running run on `fromJobId` becomes `waiting` on the job `toJobId`; null when it no longer runs there. */
  abstract wait(id: string, fromJobId: string, toJobId: string): Promise<Run | null>;
  /** Applies step changes; answers, per write, whether it applied. */
  abstract writeSteps(writes: StepWrite[]): Promise<boolean[]>;
  /** Finishes running runs: running and waiting steps become canceled, pending ones skipped. Null where it was no longer running. */
  abstract finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<Run | null>>;
  abstract cancel(organizationId: string, workflowId: string, id: string, error: Failure): Promise<Run | null>;
  /** Unfinished runs older than `olderThanMs`, oldest first, for the reconciler. */
  abstract unfinished(olderThanMs: number, limit: number): Promise<UnfinishedRun[]>;
  abstract moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean>;
  abstract abandon(id: string, jobId: string | null, error: Failure): Promise<Run | null>;
  /** A map step begins: `running`, with the items it goes over as its input, and a `pending` record per item. False when the run no longer runs. */
  abstract beginItems(runId: string, stepId: string, items: unknown[]): Promise<boolean>;
  /** The map step's items not yet final, in order. */
  abstract openItems(runId: string, stepId: string): Promise<RunItem[]>;
  /** Every item's status, output and error, in order (a map step that ends). */
  abstract allItems(runId: string, stepId: string): Promise<RunItem[]>;
  /** Applies item changes; answers, per write, whether it applied. */
  abstract writeItems(writes: ItemWrite[]): Promise<boolean[]>;
  /**
   * In the transaction of what wakes runs (a child's end, a wait's answer): locks the runs (so a
   * run that is only now parking waits for this commit, then sees what woke it) and answers
   * the jobs of those that wait, to start now.
   */
  abstract waitingJobs(runIds: string[]): Promise<string[]>;
  /** Whether what the run's waiting steps wait for came (a child ended, a wait was answered): checked as the run parks. */
  abstract awakened(runId: string): Promise<boolean>;
  /** The run's children that are not final. */
  abstract unfinishedChildren(runId: string): Promise<Array<{ id: string; workflowId: string; organizationId: string }>>;
  /**
   * Takes the claim on the places of a workflow's key until the transaction ends: every count
   * of them and every hand-over is made under it, so two processes cannot both take the last.
   */
  abstract claimPlaces(workflowId: string, key: string): Promise<void>;
  /**
   * Under the claim: the places free under `limit` go to the runs waiting for one, oldest
   * first, each on a new job. Answers those runs and the places still free.
   */
  abstract admit(workflowId: string, key: string, limit: number): Promise<{ admitted: AdmittedRun[]; free: number }>;
  /** Under the claim: the oldest run holding a place that no other transaction is changing now. */
  abstract oldestHolder(workflowId: string, key: string): Promise<{ id: string; organizationId: string } | null>;
  /** Keys with a run waiting for a place for longer than `olderThanMs` (a hand-over missed: the reconciler's chore). */
  abstract waitingKeys(olderThanMs: number): Promise<WaitingKey[]>;
  /** A page of a map step's items, from after `afterIndex`, in order. */
  abstract itemPage(runId: string, stepId: string, afterIndex: number, limit: number): Promise<RunItem[]>;
}
