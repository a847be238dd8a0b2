import { Logger } from '@nestjs/common';
import type { Job, JobResult, PgBoss } from 'pg-boss';
import { ClaimingFetch } from './claiming-fetch';

/** How often an idle worker looks for jobs (another process's sends are found this way). */
const POLL_MS = 250;
/**
 * How long a free slot waits for others before it is filled alone, and how long a completion
 * waits for others to be settled with it: a fetch, a start and a settle per job would cost the
 * database more than the jobs (a worker fetches at once when a batch's worth of slots is free,
 * or jobs were sent in this process).
 */
const REFILL_MS = 50;
const GATHER_MS = 20;
/** At most one log line per this many ms while fetching fails. */
const LOG_EVERY_MS = 10_000;

/** Jobs one group may hold at once in a worker, by tier (`default` for a tier not listed). */
export interface GroupLimits {
  default: number;
  tiers: Record<string, number>;
}

export interface QueueWorkerOptions<T extends object> {
  /** pg-boss's schema. */
  schema: string;
  name: string;
  /** Jobs this process works on at once. */
  capacity: number;
  /** Jobs fetched with one statement at most. */
  batchSize: number;
  /** What one group (an organization) may hold of this worker's capacity, by the group's tier. */
  groupLimits?: GroupLimits;
  /** Works a batch: one promise per job, each settling as its job ends. */
  handler: (jobs: Array<Job<T>>) => Array<Promise<JobResult>>;
}

/**
 * One queue's worker in this process: it keeps up to `capacity` jobs running and fills the
 * slots as jobs end, not once a whole batch has (a batch barrier would let one organization's
 * slow jobs keep a batch's slots from another's), a batch's worth at once, or what is free
 * after REFILL_MS.
 *
 * With the queue's group limits, each organization holds at most its limit of this worker's
 * slots: one at its limit is skipped by the fetch (jobs of it that one fetch brought beyond the
 * limit go back to the queue at once, unstarted), so what is free goes to the others. Each
 * worker process counts its own, so an organization's share of the whole is the same however
 * many there are. When a fetch comes back short, the worker knows the only jobs waiting are the
 * skipped organizations': it fetches again as their jobs end, or at its next poll, or when this
 * process sends, rather than scanning their backlog for nothing at every slot that frees.
 *
 * It does what pg-boss's own `work()` does around a handler: each job gets a signal that aborts
 * when its lease runs out (or, for jobs with a heartbeat, when it could not be touched for
 * that long) and is touched while it runs; outcomes are settled with the attempt they belong
 * to (a late settle never lands on a newer attempt), completions of the same moment in one statement.
 */
export class QueueWorker<T extends object> {
  private readonly logger: Logger;
  private readonly running = new Map<string, { job: Job<T>; lease: AbortController }>();
  /** Each job's end: its handler, then its settle with the queue. */
  private readonly settling = new Set<Promise<void>>();
  /** Completions waiting to be settled together, and when they will be. */
  private completions: Array<{ attempt: { id: string; retryCount: number }; settled: (error?: unknown) => void }> = [];
  private completing?: NodeJS.Timeout;
  private stopped = false;
  private loop?: Promise<void>;
  /** Jobs each group holds here, and the group's limit. */
  private readonly held = new Map<string, { count: number; limit: number }>();
  /**
   * The groups (and their limits) whose jobs are all that waited at the last fetch, which came
   * back short; null when anything may wait (jobs were sent, a poll is due).
   */
  private onlyWaiting: Map<string, number> | null = null;
  /** Wakes the loop sleeping until a poll, and the timer that fills a free slot alone. */
  private wakeUp?: () => void;
  private refill?: NodeJS.Timeout;
  private lastLog = 0;
  /** Counts wake(): a fetch that came back short while jobs were sent does not mean none wait. */
  private wakes = 0;
  private readonly claims: ClaimingFetch<T>;

  constructor(
    private readonly boss: PgBoss,
    private readonly options: QueueWorkerOptions<T>,
  ) {
    this.logger = new Logger(`Queue:${options.name}`);
    this.claims = new ClaimingFetch(boss, options.name);
  }

  start(): void {
    this.loop ??= this.fetchLoop();
  }

  /** Looks for jobs now instead of at the next poll: some were sent. */
  wake(): void {
    this.wakes++;
    this.onlyWaiting = null;
    this.nudge();
  }

  /**
   * Stops fetching and waits up to `timeoutMs` for the jobs running; the rest have their lease
   * aborted and are failed, so the queue hands them out again at once.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.refill);
    this.nudge();
    await this.loop;
    const all = Promise.all(this.settling);
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!late) return;
    const left = [...this.running.values()];
    for (const { lease } of left) lease.abort(new Error('The worker is stopping'));
    const attempts = left.map(({ job }) => ({ id: job.id, retryCount: job.retryCount }));
    if (attempts.length) await this.boss.fail(this.options.name, attempts, { message: 'The worker stopped' }).catch(() => undefined);
  }

  private async fetchLoop(): Promise<void> {
    const { batchSize } = this.options;
    while (!this.stopped) {
      const asked = Math.min(this.room(), batchSize);
      if (asked > 0) {
        const skipped = this.groupsAtLimit();
        const wakes = this.wakes;
        try {
          // Jobs of a claim whose answer the connection lost, once the database says it committed.
          const recovered = await this.claims.recovered();
          if (recovered.length) {
            this.logger.warn(`${recovered.length} jobs claimed before the connection dropped are worked now`);
            await this.work(recovered);
            continue;
          }
          const ignoreGroups = [...skipped.keys()];
          const jobs = await this.claims.fetch({ batchSize: asked, ...(ignoreGroups.length ? { ignoreGroups } : {}) });
          // Jobs of a group beyond its room went back: they wait for its jobs to end, too.
          const putBack = jobs.length ? await this.work(jobs) : [];
          // Full, or jobs were sent meanwhile (the fetch may have missed them): fetch again.
          if (jobs.length === asked || this.wakes !== wakes) continue;
          // Short: what else waits (if anything) belongs to the groups skipped or put back.
          for (const job of putBack) skipped.set(job.groupId!, this.held.get(job.groupId!)?.limit ?? 0);
          this.onlyWaiting = skipped;
        } catch (error) {
          if (Date.now() - this.lastLog > LOG_EVERY_MS) {
            this.lastLog = Date.now();
            this.logger.warn(`Fetching jobs failed: ${(error as Error).message}`);
          }
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
          continue;
        }
      }
      await this.sleep();
    }
  }

  /** Slots a fetch could fill now with jobs that may be waiting. */
  private room(): number {
    const free = this.options.capacity - this.running.size;
    if (!this.onlyWaiting) return free;
    let room = 0;
    for (const [group, limit] of this.onlyWaiting) room += limit - (this.held.get(group)?.count ?? 0);
    return Math.min(free, room);
  }

  /** Until woken: a batch's worth of room, a free slot waiting REFILL_MS, jobs sent here, or the poll. */
  private sleep(): Promise<void> {
    return new Promise<void>((resolve) => {
      const poll = setTimeout(() => {
        this.onlyWaiting = null;
        this.nudge();
      }, POLL_MS);
      this.wakeUp = () => {
        clearTimeout(poll);
        resolve();
      };
      // Slots that freed while the loop was fetching.
      this.slotFreed();
    });
  }

  private nudge(): void {
    clearTimeout(this.refill);
    this.refill = undefined;
    const wakeUp = this.wakeUp;
    this.wakeUp = undefined;
    wakeUp?.();
  }

  /**
   * A job ended: fill its slot at once when a batch's worth is free (a quarter of the limit of
   * the groups waiting, when only groups at their limit wait), or else within REFILL_MS.
   */
  private slotFreed(): void {
    if (!this.wakeUp) return;
    const room = this.room();
    if (room >= this.enough()) this.nudge();
    else if (room > 0) this.refill ??= setTimeout(() => this.nudge(), REFILL_MS);
  }

  private enough(): number {
    if (!this.onlyWaiting?.size) return this.options.batchSize;
    let limits = 0;
    for (const limit of this.onlyWaiting.values()) limits += limit;
    return Math.min(this.options.batchSize, Math.ceil(limits / 4));
  }

  /** Groups holding their limit here, with their limits: the next fetch skips their jobs. */
  private groupsAtLimit(): Map<string, number> {
    const full = new Map<string, number>();
    for (const [group, { count, limit }] of this.held) if (count >= limit) full.set(group, limit);
    return full;
  }

  /**
   * Starts the fetched jobs their group has room for; the rest (one fetch can bring a group
   * more than its room) go back to the queue unstarted, claimable again as they were: answers those.
   */
  private async work(fetched: Array<Job<T>>): Promise<Array<Job<T>>> {
    const jobs = fetched.filter((job) => this.take(job));
    const excess = fetched.filter((job) => !jobs.includes(job));
    if (excess.length) {
      try {
        await this.putBack(excess);
      } catch (error) {
        // Still held by this worker: run them rather than leave them to their lease.
        this.logger.warn(`Jobs beyond their organization's share not put back: ${(error as Error).message}`);
        jobs.push(...excess.map((job) => this.hold(job)));
        excess.length = 0;
      }
    }
    if (jobs.length) this.run(jobs);
    return excess;
  }

  /**
   * Back to the queue, unstarted: with its start cleared, the next claim is the same attempt
   * (as pg-boss's own restore of jobs beyond a local group limit does).
   */
  private async putBack(jobs: Array<Job<T>>): Promise<void> {
    await this.boss.getDb().executeSql(
      `UPDATE ${this.options.schema}.job SET state = 'created', started_on = NULL, heartbeat_on = NULL
        WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'active'`,
      [this.options.name, jobs.map((job) => job.id)],
    );
  }

  /** Counts the job against its group's limit; false when the group has no room. */
  private take(job: Job<T>): boolean {
    const held = job.groupId ? this.held.get(job.groupId) : undefined;
    if (held && held.count >= held.limit) return false;
    this.hold(job);
    return true;
  }

  private hold(job: Job<T>): Job<T> {
    const limits = this.options.groupLimits;
    if (!limits || !job.groupId) return job;
    const held = this.held.get(job.groupId);
    if (held) held.count++;
    else this.held.set(job.groupId, { count: 1, limit: (job.groupTier && limits.tiers[job.groupTier]) || limits.default });
    return job;
  }

  private release(job: Job<T>): void {
    const held = job.groupId ? this.held.get(job.groupId) : undefined;
    if (held && --held.count <= 0) this.held.delete(job.groupId!);
  }

  private run(jobs: Array<Job<T>>): void {
    const leases = jobs.map((job) => this.lease(job));
    const withSignals = jobs.map((job, i) => ({ ...job, signal: leases[i].controller.signal }));
    const results = this.options.handler(withSignals);
    jobs.forEach((job, i) => {
      // The slot frees as the handler ends (its outcome is recorded by then); the queue's
      // settle follows, gathered with others'.
      const done = results[i]
        .catch((error: unknown): JobResult => ({ id: job.id, status: 'failed', output: { message: (error as Error).message } }))
        .finally(() => {
          leases[i].release();
          this.running.delete(job.id);
          this.release(job);
          this.slotFreed();
        })
        .then((result) => this.settle(job, result))
        .catch((error: unknown) => this.logger.warn(`Job ${job.id} not settled: ${(error as Error).message}`))
        .finally(() => this.settling.delete(done));
      this.running.set(job.id, { job, lease: leases[i].controller });
      this.settling.add(done);
    });
  }

  private async settle(job: Job<T>, result: JobResult): Promise<void> {
    const attempt = { id: job.id, retryCount: job.retryCount };
    if (result.status === 'completed') await this.complete(attempt);
    else await this.boss.fail(this.options.name, attempt, result.output ?? null);
  }

  /**
   * Settles a completion with those of the next GATHER_MS, in one statement: the jobs are
   * deleted, not marked completed, as the record each carried (an execution, a run, a
   * delivery) is the history. The queue's table holds only jobs in flight, and a completion
   * leaves one dead tuple instead of an update's and, later, retention's delete's.
   */
  private complete(attempt: { id: string; retryCount: number }): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.completions.push({ attempt, settled: (error) => (error ? reject(error) : resolve()) });
      this.completing ??= setTimeout(() => {
        const batch = this.completions;
        this.completions = [];
        this.completing = undefined;
        this.boss
          .deleteJob(
            this.options.name,
            batch.map((c) => c.attempt),
          )
          .then(
            () => batch.forEach((c) => c.settled()),
            (error: unknown) => batch.forEach((c) => c.settled(error)),
          );
      }, GATHER_MS);
    });
  }

  /** The job's lease: aborted when it runs out, or, with a heartbeat, when the job could not be touched for that long. */
  private lease(job: Job<T>): { controller: AbortController; release: () => void } {
    const controller = new AbortController();
    const expire = () => controller.abort(new Error('The lease ran out'));
    if (!job.heartbeatSeconds) {
      const timer = setTimeout(expire, job.expireInSeconds * 1000);
      return { controller, release: () => clearTimeout(timer) };
    }
    const heartbeatMs = job.heartbeatSeconds * 1000;
    let touched = Date.now();
    let deadline = setTimeout(expire, heartbeatMs);
    const beat = setInterval(() => {
      this.boss
        .touch(this.options.name, { id: job.id, retryCount: job.retryCount })
        .then((response) => {
          // The job is no longer this attempt's (it expired and another worker may hold it).
          if ((response as { affected?: number }).affected === 0) return expire();
          touched = Date.now();
          clearTimeout(deadline);
          deadline = setTimeout(expire, heartbeatMs - (Date.now() - touched));
        })
        .catch(() => undefined);
    }, heartbeatMs / 2);
    return {
      controller,
      release: () => {
        clearInterval(beat);
        clearTimeout(deadline);
      },
    };
  }
}
