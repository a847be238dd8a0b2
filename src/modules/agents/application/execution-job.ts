/** The queue agent executions travel on, and what its jobs carry. */
export const AGENT_QUEUE = 'agent-execution';

export interface ExecutionJob {
  executionId: string;
}

/** Signal topic: an execution reached a final status. */
export const EXECUTION_FINISHED = 'execution.finished';
/** Signal topic: a cancel was asked; the worker running it aborts the plugin call. */
export const EXECUTION_CANCELED = 'execution.canceled';

/** Restarts after lost workers allowed beyond the agent's own attempts before the execution is failed. */
export const LOST_WORKER_ALLOWANCE = 3;

/** Seconds a worker holds an execution's job beyond the agent's timeout before it is taken elsewhere. */
const LEASE_GRACE_SECONDS = 5;

export function jobOptions(agent: { timeoutMs: number; maxAttempts: number }) {
  return {
    leaseSeconds: Math.ceil(agent.timeoutMs / 1000) + LEASE_GRACE_SECONDS,
    retryLimit: agent.maxAttempts - 1 + LOST_WORKER_ALLOWANCE,
  };
}
