import { Global, Module } from '@nestjs/common';
import { JobQueue } from './job-queue';
import { JobReconciler } from './job-reconciler';
import { Signals } from './signals';

/** The durable job queue and cross-process signals, shared by agents and workflows. */
@Global()
@Module({ providers: [JobQueue, JobReconciler, Signals], exports: [JobQueue, JobReconciler, Signals] })
export class QueueModule {}
