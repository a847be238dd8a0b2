import { Global, Module } from '@nestjs/common';
import { IdempotencyKeys } from '../shared/idempotency/idempotency-keys';
import { DurableJobs } from './durable-jobs';
import { JobQueue } from './job-queue';
import { JobReconciler } from './job-reconciler';
import { Signals } from './signals';

/** The durable-job core: the queue, cross-process signals, the reconciler and idempotent enqueue. */
@Global()
@Module({
  providers: [JobQueue, JobReconciler, Signals, IdempotencyKeys, DurableJobs],
  exports: [JobQueue, JobReconciler, Signals, DurableJobs],
})
export class QueueModule {}
