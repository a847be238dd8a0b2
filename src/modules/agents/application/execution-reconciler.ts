import { randomUUID } from 'node:crypto';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { AppConfig } from '../../../config/app-config';
import { JobQueue } from '../../../queue/job-queue';
import { Signals } from '../../../queue/signals';
import { IdempotencyKeys } from '../../../shared/idempotency/idempotency-keys';
import { ExecutionRepository, UnfinishedExecution } from '../domain/execution.repository';
import { AGENT_QUEUE, EXECUTION_FINISHED, ExecutionJob, jobOptions, LOST_WORKER_ALLOWANCE } from './execution-job';

const INTERVAL_MS = 10_000;
/** Younger executions are left alone: their transaction may have only just committed. */
const GRACE_MS = 2_000;
const SCAN_LIMIT = 500;

/**
 * Keeps the invariant "no unfinished execution without a live job". On worker processes it
 * looks every few seconds for executions `queued` or `running` whose job is gone (completed,
 * failed for good, deleted) and puts each on a new job, or fails it once lost workers have
 * used up its allowance. Every step is guarded on the job the execution was on, so two
 * reconcilers racing cannot queue it twice.
 */
@Injectable()
export class ExecutionReconciler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ExecutionReconciler');
  private timer?: NodeJS.Timeout;
  private running = false;

  constructor(
    private readonly config: AppConfig,
    private readonly executions: ExecutionRepository,
    private readonly queue: JobQueue,
    private readonly signals: Signals,
    private readonly idempotency: IdempotencyKeys,
    private readonly cls: ClsService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    this.timer = setInterval(() => void this.tick(), INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** One pass; answers how many executions were requeued and failed. */
  async reconcile(graceMs = GRACE_MS): Promise<{ requeued: number; failed: number }> {
    return this.cls.run(async () => {
      const candidates = await this.executions.unfinished(graceMs, SCAN_LIMIT);
      const live = await this.queue.liveJobs(
        AGENT_QUEUE,
        candidates.flatMap((c) => (c.jobId ? [c.jobId] : [])),
      );
      const result = { requeued: 0, failed: 0 };
      for (const orphan of candidates.filter((c) => !c.jobId || !live.has(c.jobId))) {
        if (orphan.attempts < orphan.maxAttempts + LOST_WORKER_ALLOWANCE) {
          if (await this.requeue(orphan)) result.requeued++;
        } else {
          const abandoned = await this.executions.abandon(orphan.id, orphan.jobId, EXECUTION_LOST);
          if (abandoned) {
            this.signals.publish(EXECUTION_FINISHED, orphan.id, abandoned);
            result.failed++;
          }
        }
      }
      if (result.requeued) this.queue.wake(AGENT_QUEUE);
      await this.idempotency.purgeExpired();
      return result;
    });
  }

  @Transactional()
  private async requeue(orphan: UnfinishedExecution): Promise<boolean> {
    const jobId = randomUUID();
    if (!(await this.executions.moveToJob(orphan.id, orphan.jobId, jobId))) return false;
    await this.queue.send(AGENT_QUEUE, { executionId: orphan.id } satisfies ExecutionJob, { ...jobOptions(orphan), id: jobId });
    return true;
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const { requeued, failed } = await this.reconcile();
      if (requeued || failed) this.logger.warn(`Executions without a live job: ${requeued} requeued, ${failed} failed`);
    } catch (error) {
      this.logger.warn(`Reconcile pass failed: ${(error as Error).message}`);
    } finally {
      this.running = false;
    }
  }
}

const EXECUTION_LOST = {
  code: 'EXECUTION_LOST',
  message: 'The execution was interrupted by lost workers more often than its attempts allow',
};
