import { briefError, byteSize, LiveView, version } from '../../../shared/http/live-record';
import { Execution, EXECUTION_STATUSES, isFinished } from '../domain/execution';

/** An execution as its live stream shows it: one part, its `execution` events (the output's size, not the output). */
export function executionView(execution: Execution): LiveView {
  const data = {
    executionId: execution.id,
    status: execution.status,
    attempts: execution.attempts,
    outputBytes: byteSize(execution.status === 'succeeded', execution.output),
    error: briefError(execution.error),
    startedAt: execution.startedAt,
    finishedAt: execution.finishedAt,
  };
  return {
    parts: [{ version: version(EXECUTION_STATUSES, execution.status, execution.attempts), event: 'execution', data }],
    state: { execution: data },
    final: isFinished(execution),
  };
}
