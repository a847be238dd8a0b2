import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { JobRef } from '../../../shared/jobs/job-ref';
import { Failure, Outcome } from '../../../shared/jobs/outcome';
import { Execution, HistoryFilter } from './execution';
import { Statement } from '../../../shared/jobs/statement';

/** An execution taken by a worker, with what it needs to run. */
export interface StartedAttempt {
  execution: Execution;
  kind: string;
  config: Record<string, unknown>;
  timeoutMs: number;
  maxAttempts: number;
}

/** An unfinished execution as the reconciler sees it. */
export interface UnfinishedExecution {
  id: string;
  organizationId: string;
  /** The agent's kind, for metrics. */
  kind: string;
  jobId: string | null;
  attempts: number;
  maxAttempts: number;
  timeoutMs: number;
}

/**
 * Every status change is one guarded UPDATE (`... WHERE status IN ('queued', 'running', 'waiting')`):
 * a late or duplicate worker can never move a finished execution backwards.
 */
export abstract class ExecutionRepository {
  abstract insert(execution: Execution): Promise<void>;
  /**
   * Inserts the executions in one statement with `alongside` (the statement queueing their jobs)
   * inside it: they commit together, without a transaction around them.
   */
  abstract insertAll(executions: Execution[], alongside: Statement): Promise<void>;
  /**
   * Marks a finished execution of the organization as retried by `retryId`, unless another
   * retry marked it first; false when it is not (so of two concurrent retries, one commits).
   */
  abstract markRetried(organizationId: string, id: string, retryId: string): Promise<boolean>;
  abstract find(organizationId: string, agentId: string, id: string): Promise<Execution | null>;
  abstract findById(id: string): Promise<Execution | null>;
  /** The organization's executions (one agent's with `filter.agentId`), newest first. */
  abstract history(organizationId: string, page: PageRequest, filter: HistoryFilter): Promise<Page<Execution>>;
  /** Moves unfinished executions to `running`, counting the attempt; finished or gone ones are left out. */
  abstract start(jobs: JobRef[]): Promise<StartedAttempt[]>;
  /**
   * Records final outcomes of running executions, answering each updated execution, or null
   * where it was no longer running (canceled meanwhile).
   */
  abstract finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<Execution | null>>;
  /**
   * Starts an attempt of an execution a workflow step owns: inserted as `running` the first
   * time, attempts + 1 after; answers the attempts counted (not the input the caller just
   * gave). Null when it is already final (the answer is on record).
   */
  abstract startOwned(execution: Execution): Promise<Pick<Execution, 'attempts'> | null>;
  /** `waiting` for its next attempt on the job `toJobId`, with the last attempt's error; null when it no longer runs on `fromJobId`. */
  abstract wait(id: string, fromJobId: string, toJobId: string, at: Date, error: Failure | null): Promise<Execution | null>;
  abstract cancel(organizationId: string, agentId: string, id: string, error: Failure): Promise<Execution | null>;
  /**
   * Unfinished executions on their own jobs (not steps of a workflow run, which the run's job
   * carries) older than `olderThanMs`, oldest first, for the reconciler.
   */
  abstract unfinished(olderThanMs: number, limit: number): Promise<UnfinishedExecution[]>;
  /** Points the execution at a new job, if it is still unfinished and on the old one. */
  abstract moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean>;
  /** Fails an unfinished execution that is on the given job. */
  abstract abandon(id: string, jobId: string | null, error: Failure): Promise<Execution | null>;
}
