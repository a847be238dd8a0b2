import { DomainError } from '../../../shared/errors/domain-error';
import { isNotTaken, isRunFinished, Run, StepRun } from './run';

/**
 * Refuses a retry of a run that goes on (RUN_NOT_FINISHED), that was retried before
 * (RUN_ALREADY_RETRIED, naming the retry: a double click never starts two runs, and the caller
 * retries the retry instead), or that succeeded with no `fromStep` to run again from
 * (NOTHING_TO_RETRY).
 */
export function assertRetryable(run: Pick<Run, 'status' | 'retriedBy'>, fromStep: string | undefined): void {
  if (!isRunFinished(run)) throw new DomainError('RUN_NOT_FINISHED', `The run is ${run.status}: retry it once it has finished`);
  if (run.retriedBy)
    throw new DomainError('RUN_ALREADY_RETRIED', `The run was retried already, by run ${run.retriedBy}: retry that run instead`);
  if (run.status === 'succeeded' && !fromStep)
    throw new DomainError('NOTHING_TO_RETRY', 'The run succeeded: name the step to run again from in fromStep');
}

/** The steps of the version a retry runs, as far as what is kept depends on them. */
export interface RetryGraph {
  /** The version's steps (its `onFailure` left out: it is never kept). */
  order: readonly string[];
  /** Each step's effective needs (its own, and the switch it is a branch of). */
  needs: ReadonlyMap<string, readonly string[]>;
  /** Each switch's branches. */
  branches: ReadonlyMap<string, readonly string[]>;
}

/**
 * The records of the old run a retry takes over as they are, by step id: a step that succeeded
 * is kept when it is not `fromStep` nor downstream of it, and everything it needs is kept (so
 * what follows a step that failed, was canceled or never ran runs again). A switch is kept only
 * when the old run has every one of its branches (with `version: latest` a new branch could
 * otherwise run untaken); a step a switch did not take stays skipped exactly when that switch
 * is kept, whatever `fromStep` says, since a kept switch does not decide again. A step skipped
 * only because it needs only steps not taken is kept when they are; any other skip is decided
 * again. Only ids in both the old run and `graph` are kept.
 */
export function keptSteps(graph: RetryGraph, old: readonly StepRun[], fromStep?: string): Map<string, StepRun> {
  const records = new Map(old.map((s) => [s.id, s]));
  const again = downstreamOf(graph, fromStep);
  const decider = new Map<string, string>();
  for (const [id, branches] of graph.branches) for (const b of branches) decider.set(b, id);
  const memo = new Map<string, boolean>();

  const kept = (id: string): boolean => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    // Definitions have no cycles; the mark ends a walk that met one all the same.
    memo.set(id, false);
    const result = decide(id);
    memo.set(id, result);
    return result;
  };
  const decide = (id: string): boolean => {
    const record = records.get(id);
    if (!record) return false;
    const needs = graph.needs.get(id) ?? [];
    if (record.status === 'skipped' && isNotTaken(record.reason)) {
      const switchId = decider.get(id);
      if (switchId) return kept(switchId);
      return needs.length > 0 && needs.every(kept);
    }
    if (record.status !== 'succeeded' || again.has(id)) return false;
    return needs.every(kept) && (graph.branches.get(id) ?? []).every((b) => records.has(b));
  };

  const result = new Map<string, StepRun>();
  // A map's item counts stay with the run that ran its items.
  for (const id of graph.order) if (kept(id)) result.set(id, { ...records.get(id)!, items: undefined });
  return result;
}

/** `fromStep` and every step that needs it, directly or not; empty without one. */
function downstreamOf(graph: RetryGraph, fromStep: string | undefined): Set<string> {
  const found = new Set<string>(fromStep ? [fromStep] : []);
  for (let grew = found.size > 0; grew;) {
    grew = false;
    for (const id of graph.order) {
      if (!found.has(id) && (graph.needs.get(id) ?? []).some((n) => found.has(n))) {
        found.add(id);
        grew = true;
      }
    }
  }
  return found;
}
