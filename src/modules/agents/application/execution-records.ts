import { Injectable, OnModuleInit } from '@nestjs/common';
import { DurableRecords, JobReconciler, UnfinishedRecord } from '../../../queue/job-reconciler';
import { Signals } from '../../../queue/signals';
import { IdempotencyKeys } from '../../../shared/idempotency/idempotency-keys';
import { ExecutionRepository } from '../domain/execution.repository';
import { AGENT_QUEUE, EXECUTION_FINISHED, ExecutionJob, jobOptions, LOST_WORKER_ALLOWANCE } from './execution-job';

const EXECUTION_LOST = {
  code: 'EXECUTION_LOST',
  message: 'The execution was interrupted by lost workers more often than its attempts allow',
};

/** Agent executions as the job reconciler sees them; also forgets expired idempotency keys. */
@Injectable()
export class ExecutionRecords implements DurableRecords, OnModuleInit {
  readonly queue = AGENT_QUEUE;

  constructor(
    private readonly executions: ExecutionRepository,
    private readonly signals: Signals,
    private readonly reconciler: JobReconciler,
    private readonly idempotency: IdempotencyKeys,
  ) {}

  onModuleInit(): void {
    this.reconciler.register(this);
    this.reconciler.addChore(() => this.idempotency.purgeExpired());
  }

  async unfinished(olderThanMs: number, limit: number): Promise<UnfinishedRecord[]> {
    return (await this.executions.unfinished(olderThanMs, limit)).map((e) => ({
      id: e.id,
      jobId: e.jobId,
      recoverable: e.attempts < e.maxAttempts + LOST_WORKER_ALLOWANCE,
      sendOptions: jobOptions(e),
    }));
  }

  moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean> {
    return this.executions.moveToJob(id, fromJobId, toJobId);
  }

  jobData(id: string): ExecutionJob {
    return { executionId: id };
  }

  async abandon(id: string, jobId: string | null): Promise<boolean> {
    const abandoned = await this.executions.abandon(id, jobId, EXECUTION_LOST);
    if (abandoned) this.signals.publish(EXECUTION_FINISHED, id, abandoned);
    return abandoned !== null;
  }
}
