import { briefError, byteSize, LivePart, LiveView, version } from '../../../shared/http/live-record';
import { isRunFinished, Run, RUN_STATUSES, StepRun, STEP_STATUSES } from '../domain/run';

/**
 * A run as its live stream shows it: a `step` part per step in definition order, then the
 * `run` part (so a final run comes after its steps' last events). Outputs are left out: an
 * event carries their size, the run's GET has them.
 */
export function runView(run: Run): LiveView {
  const steps = run.steps.map(stepData);
  const data = runData(run);
  return {
    parts: [
      ...run.steps.map((s, i): LivePart => ({ version: version(STEP_STATUSES, s.status, s.attempts), event: 'step', data: steps[i] })),
      { version: version(RUN_STATUSES, run.status, run.attempts), event: 'run', data },
    ],
    state: { run: data, steps },
    final: isRunFinished(run),
  };
}

function runData(run: Run): object {
  return {
    runId: run.id,
    status: run.status,
    attempts: run.attempts,
    outputBytes: byteSize(run.status === 'succeeded', run.output),
    error: briefError(run.error),
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
  };
}

function stepData(step: StepRun): object {
  return {
    stepId: step.id,
    status: step.status,
    attempts: step.attempts,
    outputBytes: byteSize(step.status === 'succeeded', step.output),
    error: briefError(step.error),
    resumeAt: step.resumeAt,
    reason: step.reason,
    executionId: step.executionId,
    childRunId: step.childRunId,
    waitingFor: step.waitingFor,
    startedAt: step.startedAt,
    finishedAt: step.finishedAt,
  };
}
