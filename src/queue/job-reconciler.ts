import { randomUUID } from 'node:crypto';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { AppConfig } from '../config/app-config';
import { JobQueue, SendOptions } from './job-queue';

const INTERVAL_MS = 10_000;
/** Younger records are left alone: their transaction may have only just committed. */
const GRACE_MS = 2_000;
const SCAN_LIMIT = 500;

/** An unfinished record (an execution, a run) and the job that should be carrying it. */
export interface UnfinishedRecord {
  id: string;
  jobId: string | null;
  /** False once lost workers have used up its allowance: it is failed instead of requeued. */
  recoverable: boolean;
  sendOptions: Omit<SendOptions, 'id'>;
}

/** Records that live on a queue's jobs: what the reconciler needs to keep them moving. */
export interface DurableRecords<T extends UnfinishedRecord = UnfinishedRecord> {
  queue: string;
  /** Unfinished records older than `olderThanMs`, oldest first. */
  unfinished(olderThanMs: number, limit: number): Promise<T[]>;
  /** Points the record at a new job, if it is still unfinished and on `fromJobId`. */
  moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean>;
  /** The job data that carries the record. */
  jobData(id: string): object;
  /** Fails a record that is still unfinished and on its job; true when it did. */
  abandon(record: T): Promise<boolean>;
}

/**
 * Keeps the invariant "no unfinished record without a live job". On worker processes it
 * looks every few seconds for executions or runs `queued` or `running` whose job is gone
 * (completed, failed for good, deleted), and puts each on a new job, or fails it once lost
 * workers have used up its allowance. Every step is guarded on the job the record was on,
 * and the new job is sent in the same transaction, so two reconcilers racing cannot queue a
 * record twice.
 */
@Injectable()
export class JobReconciler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('JobReconciler');
  private readonly sources: Array<DurableRecords<UnfinishedRecord>> = [];
  private readonly chores: Array<() => Promise<unknown>> = [];
  private timer?: NodeJS.Timeout;
  private running = false;

  constructor(
    private readonly config: AppConfig,
    private readonly queue: JobQueue,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
  ) {}

  register<T extends UnfinishedRecord>(source: DurableRecords<T>): void {
    this.sources.push(source as unknown as DurableRecords<UnfinishedRecord>);
  }

  /** Housekeeping run on every pass (e.g. forgetting expired idempotency keys). */
  addChore(chore: () => Promise<unknown>): void {
    this.chores.push(chore);
  }

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    this.timer = setInterval(() => void this.tick(), INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** One pass over every source; answers how many records were requeued and failed. */
  async reconcile(graceMs = GRACE_MS): Promise<{ requeued: number; failed: number }> {
    return this.cls.run(async () => {
      const result = { requeued: 0, failed: 0 };
      for (const source of this.sources) {
        const candidates = await source.unfinished(graceMs, SCAN_LIMIT);
        const live = await this.queue.liveJobs(
          source.queue,
          candidates.flatMap((c) => (c.jobId ? [c.jobId] : [])),
        );
        for (const orphan of candidates.filter((c) => !c.jobId || !live.has(c.jobId))) {
          if (!orphan.recoverable) {
            if (await source.abandon(orphan)) result.failed++;
          } else if (await this.requeue(source, orphan)) {
            result.requeued++;
          }
        }
        if (result.requeued) this.queue.wake(source.queue);
      }
      for (const chore of this.chores) await chore();
      return result;
    });
  }

  private requeue(source: DurableRecords, orphan: UnfinishedRecord): Promise<boolean> {
    return this.txHost.withTransaction(async () => {
      const jobId = randomUUID();
      if (!(await source.moveToJob(orphan.id, orphan.jobId, jobId))) return false;
      await this.queue.send(source.queue, source.jobData(orphan.id), { ...orphan.sendOptions, id: jobId });
      return true;
    });
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const { requeued, failed } = await this.reconcile();
      if (requeued || failed) this.logger.warn(`Records without a live job: ${requeued} requeued, ${failed} failed`);
    } catch (error) {
      this.logger.warn(`Reconcile pass failed: ${(error as Error).message}`);
    } finally {
      this.running = false;
    }
  }
}
