import { Global, Module } from '@nestjs/common';
import { JobQueue } from './job-queue';
import { Signals } from './signals';

/** The durable job queue and cross-process signals, shared by agents and workflows. */
@Global()
@Module({ providers: [JobQueue, Signals], exports: [JobQueue, Signals] })
export class QueueModule {}
