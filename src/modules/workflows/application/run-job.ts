/** The queue workflow runs travel on, and what its jobs carry. */
export const RUN_QUEUE = 'workflow-run';

export interface RunJob {
  runId: string;
}

/** Signal topic: a run reached a final status (the local value is the run). */
export const RUN_FINISHED = 'run.finished';
/** Signal topic: a cancel was asked; the worker running it aborts its steps. */
export const RUN_CANCELED = 'run.canceled';

/** Times a lost worker may cost a run before it is failed. */
export const RUN_LOST_WORKER_ALLOWANCE = 5;

/** The worker touches a run's job this often (halved); a run not touched for this long is taken over. */
const HEARTBEAT_SECONDS = 10;

export function runJobOptions(run: { timeoutMs: number }) {
  return {
    // The heartbeat, not the lease, notices a dead worker; the lease only bounds a stuck one.
    leaseSeconds: Math.ceil(run.timeoutMs / 1000) + 60,
    retryLimit: RUN_LOST_WORKER_ALLOWANCE,
    heartbeatSeconds: HEARTBEAT_SECONDS,
  };
}
