import { Injectable } from '@nestjs/common';
import { DurableJobKind, DurableJobs } from '../../../queue/durable-jobs';
import { resourceEventData } from '../../../shared/events/event-data';
import { Execution } from '../domain/execution';
import { ExecutionRepository, StartedAttempt, UnfinishedExecution } from '../domain/execution.repository';
import { ExecutionResponse } from '../execution.response';

/** Restarts after lost workers allowed beyond the agent's own attempts before the execution is failed. */
export const LOST_WORKER_ALLOWANCE = 3;

/** Seconds a worker holds an execution's job beyond the agent's timeout before it is taken elsewhere. */
const LEASE_GRACE_SECONDS = 5;

/** The job options of an execution of an agent with these limits. */
export function jobOptions(agent: { timeoutMs: number; maxAttempts: number }) {
  return {
    leaseSeconds: Math.ceil(agent.timeoutMs / 1000) + LEASE_GRACE_SECONDS,
    retryLimit: agent.maxAttempts - 1 + LOST_WORKER_ALLOWANCE,
  };
}

/**
 * Agent executions as a kind of durable job on `agent-execution`: a job per attempt (each retry
 * waits for a new one, holding no worker), plus a few restarts after lost workers.
 */
@Injectable()
export class ExecutionJobs extends DurableJobKind<Execution, StartedAttempt, UnfinishedExecution> {
  constructor(core: DurableJobs, executions: ExecutionRepository) {
    super(core, {
      name: 'execution',
      queue: 'agent-execution',
      batchSize: 16,
      share: 'executions',
      records: executions,
      metrics: {
        total: 'agent_executions_total',
        duration: 'agent_execution_duration_seconds',
        noun: 'Agent executions',
        labelNames: ['kind'],
      },
      recordOf: (started) => started.execution,
      labels: (of) => ({ kind: of.kind }),
      jobData: (id) => ({ executionId: id }),
      recordId: (data) => (data as { executionId: string }).executionId,
      sendOptions: jobOptions,
      resumeOptions: (_waiting, started) => jobOptions(started),
      recoverable: (u) => u.attempts < u.maxAttempts + LOST_WORKER_ALLOWANCE,
      lost: {
        code: 'EXECUTION_LOST',
        message: 'The execution was interrupted by lost workers more often than its attempts allow',
      },
      // Events tell how an execution ended; a wait for the next attempt is not one.
      event: (execution) =>
        execution.status === 'waiting'
          ? null
          : {
              organizationId: execution.organizationId,
              type: `agent.execution.${execution.status}`,
              data: resourceEventData(ExecutionResponse.of(execution), `/api/agents/${execution.agentId}/history/${execution.id}`),
            },
    });
  }
}
