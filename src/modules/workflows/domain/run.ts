import type { ApiTrigger, ScheduleTrigger, WebhookTrigger } from '../../../shared/auth/principal';
import { Failure } from '../../../shared/jobs/outcome';
import { StepDefinition } from './definition';

export const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled', 'timed_out'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const STEP_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'skipped', 'canceled'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

export interface StepRun {
  id: string;
  status: StepStatus;
  attempts: number;
  input: unknown;
  output: unknown;
  error: Failure | null;
  /** The agent execution of an agent step, reused by every attempt of it. */
  executionId: string | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface Run {
  id: string;
  organizationId: string;
  workflowId: string;
  workflowVersion: number;
  status: RunStatus;
  input: unknown;
  output: unknown;
  error: Failure | null;
  /** Times a worker took it up (more than one after a lost worker). */
  attempts: number;
  /** The run's bound, from its version. */
  timeoutMs: number;
  jobId: string | null;
  triggeredBy: ApiTrigger | ScheduleTrigger | WebhookTrigger;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  steps: StepRun[];
}

export function isRunFinished(run: Pick<Run, 'status'>): boolean {
  return run.status !== 'queued' && run.status !== 'running';
}

/**
 * What to do next with a run's steps: the pending steps whose needs all succeeded are ready;
 * a pending step with a need that failed, was skipped or canceled is skipped. Steps are
 * taken in definition order.
 */
export function nextSteps(steps: StepDefinition[], status: ReadonlyMap<string, StepStatus>): { ready: string[]; skip: string[] } {
  const ready: string[] = [];
  const skip: string[] = [];
  for (const step of steps) {
    if (status.get(step.id) !== 'pending') continue;
    const needs = (step.needs ?? []).map((n) => status.get(n));
    if (needs.some((s) => s === 'failed' || s === 'skipped' || s === 'canceled')) skip.push(step.id);
    else if (needs.every((s) => s === 'succeeded')) ready.push(step.id);
  }
  return { ready, skip };
}
