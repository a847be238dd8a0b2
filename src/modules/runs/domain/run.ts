import type { Trigger } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { Failure } from '../../../shared/jobs/outcome';
import type { WaitingFor } from './wait';

export const RUN_STATUSES = ['queued', 'running', 'waiting', 'succeeded', 'failed', 'canceled', 'timed_out'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** `waiting`: the step resumes at `resumeAt` (a sleep, the next attempt of a retry); no worker holds it meanwhile. */
export const STEP_STATUSES = ['pending', 'running', 'waiting', 'succeeded', 'failed', 'skipped', 'canceled'] as const;
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
  /** When a `waiting` step goes on. */
  resumeAt: Date | null;
  /** Why a step was skipped. */
  reason: string | null;
  /** The run a workflow step started. */
  childRunId: string | null;
  /** What a waiting wait step waits for. */
  waitingFor: WaitingFor | null;
  /** A map step's items by status (on one run's read). */
  items?: ItemCounts;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** One item of a map step. */
export interface RunItem {
  index: number;
  status: Exclude<StepStatus, 'skipped'>;
  attempts: number;
  output: unknown;
  error: Failure | null;
  executionId: string | null;
  resumeAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A map step's items by status. */
export type ItemCounts = Partial<Record<RunItem['status'], number>> & { total: number };

/**
 * A run of a workflow with `concurrency`: the key it counts under and the limit it was started
 * with. A run holds one of the key's places from its start to its end, unless it waits for one
 * (`queued`, on no job until a place is handed to it).
 */
export interface RunPlace {
  key: string;
  limit: number;
  waitsForPlace: boolean;
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
  triggeredBy: Trigger;
  /** The run whose workflow step started this one. */
  parentRunId: string | null;
  /** 0, or its parent's + 1. */
  depth: number;
  /** The run this one retries (it took over that run's kept steps). */
  retryOf: string | null;
  /** The run that retries this one; a run is retried at most once. */
  retriedBy: string | null;
  /** Its place among the runs of its workflow and key; null for a workflow without `concurrency`. */
  concurrency: RunPlace | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  steps: StepRun[];
}

/** A step of a new run: pending, nothing recorded yet. */
export function pendingStep(id: string): StepRun {
  return {
    id,
    status: 'pending',
    attempts: 0,
    input: null,
    output: null,
    error: null,
    executionId: null,
    resumeAt: null,
    reason: null,
    childRunId: null,
    waitingFor: null,
    startedAt: null,
    finishedAt: null,
  };
}

export function runNotFound(): DomainError {
  return new DomainError('RUN_NOT_FOUND', 'No such run of this workflow');
}

export function isRunFinished(run: Pick<Run, 'status'>): boolean {
  return run.status !== 'queued' && run.status !== 'running' && run.status !== 'waiting';
}

/** The reason of a step skipped because a switch did not take its branch; what needs only such steps is not taken either. */
export const NOT_TAKEN = 'not taken';

export function isNotTaken(reason: string | null | undefined): boolean {
  return reason?.startsWith(NOT_TAKEN) ?? false;
}

/** The steps as the engine walks them: in definition order, each with what it waits for. */
export interface StepGraph {
  order: string[];
  /** Its needs and the switch it is a branch of. */
  needs: ReadonlyMap<string, string[]>;
  /** Steps with `onError: continue`: their failure lets what needs them run. */
  continues: ReadonlySet<string>;
}

/**
 * What to do next with a run's steps: the pending steps whose needs all succeeded (or failed
 * with `onError: continue`) are ready; a pending step with a need that failed, was canceled or
 * skipped is skipped, with the reason. A need whose branch a switch did not take counts as met
 * for a step that needs other steps too, and a step that needs only such steps is not taken
 * either. Steps are taken in definition order.
 */
export function nextSteps(
  graph: StepGraph,
  status: ReadonlyMap<string, StepStatus>,
  notTaken: ReadonlySet<string>,
): { ready: string[]; skip: Array<{ id: string; reason: string }> } {
  const ready: string[] = [];
  const skip: Array<{ id: string; reason: string }> = [];
  for (const id of graph.order) {
    if (status.get(id) !== 'pending') continue;
    const needs = graph.needs.get(id) ?? [];
    const blocking = needs.find((n) => {
      const s = status.get(n);
      return s === 'canceled' || (s === 'failed' && !graph.continues.has(n)) || (s === 'skipped' && !notTaken.has(n));
    });
    if (blocking) {
      const s = status.get(blocking);
      skip.push({ id, reason: `needs '${blocking}', which ${s === 'skipped' ? 'was skipped' : s}` });
    } else if (needs.length && needs.every((n) => notTaken.has(n))) {
      skip.push({ id, reason: `${NOT_TAKEN}: it needs only steps not taken` });
    } else if (needs.every((n) => status.get(n) === 'succeeded' || status.get(n) === 'failed' || notTaken.has(n))) {
      ready.push(id);
    }
  }
  return { ready, skip };
}
