import { Injectable, OnModuleInit } from '@nestjs/common';
import { DurableRecords, JobReconciler, UnfinishedRecord } from '../../../queue/job-reconciler';
import { Signals } from '../../../queue/signals';
import { RunRepository } from '../domain/workflow.repository';
import { RUN_FINISHED, RUN_LOST_WORKER_ALLOWANCE, RUN_QUEUE, RunJob, runJobOptions } from './run-job';

const RUN_LOST = { code: 'RUN_LOST', message: 'The run was interrupted by lost workers more often than allowed' };

/** Workflow runs as the job reconciler sees them. */
@Injectable()
export class RunRecords implements DurableRecords, OnModuleInit {
  readonly queue = RUN_QUEUE;

  constructor(
    private readonly runs: RunRepository,
    private readonly signals: Signals,
    private readonly reconciler: JobReconciler,
  ) {}

  onModuleInit(): void {
    this.reconciler.register(this);
  }

  async unfinished(olderThanMs: number, limit: number): Promise<UnfinishedRecord[]> {
    return (await this.runs.unfinished(olderThanMs, limit)).map((r) => ({
      id: r.id,
      jobId: r.jobId,
      recoverable: r.attempts <= RUN_LOST_WORKER_ALLOWANCE,
      sendOptions: runJobOptions(r),
    }));
  }

  moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean> {
    return this.runs.moveToJob(id, fromJobId, toJobId);
  }

  jobData(id: string): RunJob {
    return { runId: id };
  }

  async abandon(id: string, jobId: string | null): Promise<boolean> {
    const abandoned = await this.runs.abandon(id, jobId, RUN_LOST);
    if (abandoned) this.signals.publish(RUN_FINISHED, id, abandoned);
    return abandoned !== null;
  }
}
