import { DomainError } from '../../../shared/errors/domain-error';
import { Failure } from '../../../shared/jobs/outcome';
import { HistoryFilters } from '../../../shared/pagination/cursor';

/** Where an execution is: `waiting` for its next attempt (no worker holds it); the last four are final. */
export const EXECUTION_STATUSES = ['queued', 'running', 'waiting', 'succeeded', 'failed', 'canceled', 'timed_out'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

/** Statuses an execution can still leave; every status write is guarded on these in SQL. */
export const UNFINISHED: readonly ExecutionStatus[] = ['queued', 'running', 'waiting'];

/** Who started it: a user or an API key through the API, or a workflow run's step. */
import type { Trigger } from '../../../shared/auth/principal';
export type { Trigger };

export interface Execution {
  id: string;
  organizationId: string;
  agentId: string;
  status: ExecutionStatus;
  input: unknown;
  output: unknown;
  error: Failure | null;
  attempts: number;
  jobId: string | null;
  triggeredBy: Trigger;
  /** The execution this one retries. */
  retryOf: string | null;
  /** The execution that retries this one; an execution is retried at most once. */
  retriedBy: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export function isFinished(execution: Pick<Execution, 'status'>): boolean {
  return !UNFINISHED.includes(execution.status);
}

export function durationMs(execution: Pick<Execution, 'startedAt' | 'finishedAt'>): number | null {
  return execution.startedAt && execution.finishedAt ? execution.finishedAt.getTime() - execution.startedAt.getTime() : null;
}

export interface HistoryFilter extends HistoryFilters {
  status?: ExecutionStatus;
  /** One agent's executions; unset: every agent's of the organization. */
  agentId?: string;
}

/**
 * Refuses a retry of an execution that goes on (EXECUTION_NOT_FINISHED), that was retried
 * before (EXECUTION_ALREADY_RETRIED, naming the retry: the caller retries that one instead), or
 * that succeeded (NOTHING_TO_RETRY: execute the agent again for another result).
 */
export function assertRetryable(execution: Pick<Execution, 'status' | 'retriedBy'>): void {
  if (!isFinished(execution))
    throw new DomainError('EXECUTION_NOT_FINISHED', `The execution is ${execution.status}: retry it once it has finished`);
  if (execution.retriedBy)
    throw new DomainError(
      'EXECUTION_ALREADY_RETRIED',
      `The execution was retried already, by execution ${execution.retriedBy}: retry that execution instead`,
    );
  if (execution.status === 'succeeded')
    throw new DomainError('NOTHING_TO_RETRY', 'The execution succeeded: execute the agent for another result');
}
