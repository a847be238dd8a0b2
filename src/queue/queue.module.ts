import { Global, Module } from '@nestjs/common';
import { LiveStreams } from '../shared/http/live-record';
import { IdempotencyKeys } from '../shared/idempotency/idempotency-keys';
import { DurableJobs } from './durable-jobs';
import { JobQueue } from './job-queue';
import { JobReconciler } from './job-reconciler';
import { Signals } from './signals';

/** The durable-job core: the queue, cross-process signals, the reconciler, idempotent enqueue and live streams of records. */
@Global()
@Module({
  providers: [JobQueue, JobReconciler, Signals, IdempotencyKeys, DurableJobs, LiveStreams],
  exports: [JobQueue, JobReconciler, Signals, DurableJobs, LiveStreams],
})
export class QueueModule {}
