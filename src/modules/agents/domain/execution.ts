import { Failure } from '../../../shared/jobs/outcome';

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

export interface HistoryFilter {
  status?: ExecutionStatus;
  since?: Date;
  /** One agent's executions; unset: every agent's of the organization. */
  agentId?: string;
}
