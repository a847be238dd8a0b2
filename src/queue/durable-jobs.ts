import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import type { Job, JobResult } from 'pg-boss';
import { Coalescer } from '../shared/batching/coalescer';
import { EventOutbox, PlatformEvent } from '../shared/events/event-outbox';
import { OrganizationShares } from '../shared/fairness/organization-shares';
import { IdempotencyKeys, IdempotentRequest } from '../shared/idempotency/idempotency-keys';
import { isDatabaseUnavailable, isUnstorableWrite } from '../shared/errors/postgres-errors';
import { JobRef } from '../shared/jobs/job-ref';
import { Statement } from '../shared/jobs/statement';
import { Failure, Outcome } from '../shared/jobs/outcome';
import { Metrics } from '../shared/metrics/metrics';
import { awaitFinal } from './await-final';
import { JobMetricNames, JobMetrics } from './job-metrics';
import { JobQueue, SendOptions } from './job-queue';
import { JobReconciler, UnfinishedRecord } from './job-reconciler';
import { Signals } from './signals';

/** What the core reads of a record that lives on a queue's jobs (an execution, a run). */
export interface JobRecord {
  id: string;
  organizationId: string;
  status: string;
  jobId: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/** An unfinished record as the reconciler sees it. */
export interface UnfinishedJobRecord {
  id: string;
  organizationId: string;
  jobId: string | null;
  attempts: number;
}

/**
 * How a kind's records are kept: the module's repository port. Every status change is a
 * guarded UPDATE, so a late or duplicate worker never moves a record backwards.
 * `S` is a started record with what running it needs; `U` an unfinished one.
 */
export interface JobRecords<R extends JobRecord, S, U extends UnfinishedJobRecord> {
  insert(record: R): Promise<void>;
  /**
   * Inserts records in one statement with `alongside` (the statement queueing their jobs)
   * inside it, so they commit together in one round trip. Kinds without it enqueue in a transaction.
   */
  insertAll?(records: R[], alongside: Statement): Promise<void>;
  findById(id: string): Promise<R | null>;
  /**
   * Moves unfinished records to `running` where they are still on the job that asks (a record
   * waiting for a later job, or moved to another, is left to that job); a lost worker's retake
   * counts an attempt, a resume from `waiting` does not. Finished or gone ones are left out.
   */
  start(jobs: JobRef[]): Promise<S[]>;
  /**
   * For kinds whose runs answer `later`: parks a running record on `fromJobId` until `at` on the job `toJobId` (sent in the same
   * transaction); null when it no longer runs there. `error` is what the attempt that asked
   * for the wait failed with, where the kind shows it (a delivery's last failure).
   */
  wait?(id: string, fromJobId: string, toJobId: string, at: Date, error: Failure | null): Promise<R | null>;
  /** Records final outcomes of running records; null where one was no longer running (canceled meanwhile). */
  finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<R | null>>;
  /** Unfinished records older than `olderThanMs`, oldest first, that should be on a job of their own. */
  unfinished(olderThanMs: number, limit: number): Promise<U[]>;
  /** Points the record at a new job, if it is still unfinished and on `fromJobId`. */
  moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean>;
  /** Fails a record that is still unfinished and on `jobId`. */
  abandon(id: string, jobId: string | null, error: Failure): Promise<R | null>;
}

/** One kind of durable job: a page of configuration. */
export interface JobKindDefinition<R extends JobRecord, S, U extends UnfinishedJobRecord> {
  /** Names the signal topics (`<name>.finished`, `<name>.canceled`, `<name>.changed`) and log lines. */
  name: string;
  queue: string;
  /** Jobs one worker loop takes at a time. */
  batchSize: number;
  /** The share of the workers an organization may hold (its jobs in flight, by tier). */
  share: 'executions' | 'runs' | 'deliveries';
  records: JobRecords<R, S, U>;
  metrics: JobMetricNames;
  /** The record a started one is about. */
  recordOf(started: S): R;
  /** Metric labels besides `status`. */
  labels(of: S | U): Labels;
  /** What a job carries, and back. */
  jobData(id: string): object;
  recordId(data: object): string;
  /** Lease and retries of the job carrying an unfinished record, when the reconciler queues it again. */
  sendOptions(unfinished: U): Omit<SendOptions, 'id'>;
  /** For kinds whose runs answer `later`: lease and retries of the job that resumes a waiting record (`started` as it ran). */
  resumeOptions?(waiting: R, started: S): Omit<SendOptions, 'id'>;
  /** False once lost workers have used up the record's allowance: it is failed with `lost` instead. */
  recoverable(unfinished: U): boolean;
  lost: Failure;
  /** The event a record reaching its final status raises, written in the same transaction as the status (outbox). */
  event?(finished: R): PlatformEvent | null;
  /**
   * In the transaction that ends records (finish, cancel, abandon): what else their end moves
   * (a parent waiting for them); answers what to do once it committed.
   */
  ended?(records: R[]): Promise<(() => void) | void>;
  /** In the transaction that parks a record: when its job starts, brought forward when what it waits for already happened. */
  resumeAt?(parked: R, at: Date): Promise<Date>;
}

/**
 * Resume the record at `at`, or sooner when something it waits for wakes it (`DurableJobKind.wake`):
 * it becomes `waiting` and lets go of its worker; a new job, written in the same transaction,
 * takes it up again.
 */
export interface Later {
  later: { at: Date; error: Failure | null };
}

export function later(at: Date, error: Failure | null = null): Later {
  return { later: { at, error } };
}

/** What a worker's run of one started record answers. */
export type RunResult =
  /** Record this final outcome. */
  | Outcome
  /** Park the record until later (a retry's backoff, a sleep). */
  | Later
  /** Nothing to record here: a cancel was recorded already, or the lease is gone (the job then runs again). */
  | null;

type Labels = Record<string, string>;

export interface RunSignals {
  /** Aborted when a cancel is asked through the API. */
  cancel: AbortSignal;
  /** Aborted when the job's lease ran out (another worker may take the record). */
  lease: AbortSignal;
}

export interface Submission<R> {
  /** The new record, `queued`, with a fresh `jobId`. */
  record: R;
  /** Lease and retries of its job. */
  sendOptions: Omit<SendOptions, 'id'>;
  /** The caller's Idempotency-Key and what it covers; a repeat answers the earlier record. */
  idempotency?: IdempotentRequest;
  /**
   * What the new record becomes just before it is recorded (not for a repeat): a run takes its
   * concurrency place, or is left on no job (`jobId` null) until one is handed to it.
   */
  place?: (record: R) => Promise<R>;
}

export interface Submitted<R> {
  record: R;
  /** False when an earlier request with the same Idempotency-Key made it. */
  created: boolean;
}

/** The services every kind shares, injected once. */
@Injectable()
export class DurableJobs {
  constructor(
    readonly queue: JobQueue,
    readonly signals: Signals,
    readonly reconciler: JobReconciler,
    readonly idempotency: IdempotencyKeys,
    readonly metrics: Metrics,
    readonly outbox: EventOutbox,
    readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    readonly shares: OrganizationShares,
  ) {
    reconciler.addChore(() => idempotency.purgeExpired());
  }
}

/**
 * The durable-job core: a kind of record carried by jobs on a queue, from the idempotent
 * enqueue to the final status. A module configures it once (a subclass whose constructor
 * passes its definition) and gets:
 *
 * - `enqueue` (in the caller's transaction: the record, its idempotency key and its job
 *   commit together) and `settle` (the `?wait=` of the API);
 * - `work(run)` on worker processes: batches of jobs, one guarded UPDATE starts a batch, a
 *   cancel registry that aborts a running record when a cancel is asked anywhere, and outcomes
 *   finishing in the same turn written in one statement, then counted, then announced;
 * - `canceled` for the API's cancel, so a canceled record is counted and announced the same way;
 * - `changed` and `watch`: every status change the core writes (start, park, end) is signalled,
 *   so a live stream of the record wakes in any process as soon as it committed;
 * - the reconciler's view of the kind ("no unfinished record without a live job").
 */
export abstract class DurableJobKind<R extends JobRecord, S, U extends UnfinishedJobRecord> {
  readonly metrics: JobMetrics;
  private readonly logger: Logger;
  private readonly running = new Map<string, AbortController>();
  private readonly finishes: Coalescer<{ id: string; outcome: Outcome }, R | null | Refused>;
  /** Plain submissions of the moment, recorded and queued together (for kinds with `insertAll`). */
  private readonly inserts?: Coalescer<Submission<R>, Submitted<R> | Error>;

  protected constructor(
    private readonly core: DurableJobs,
    readonly definition: JobKindDefinition<R, S, U>,
  ) {
    this.metrics = new JobMetrics(core.metrics, definition.metrics);
    this.logger = new Logger(`Jobs:${definition.name}`);
    core.queue.declare(definition.queue);
    this.finishes = new Coalescer((outcomes) => this.finishTogether(outcomes));
    // Two statements under way at most: what arrives meanwhile waits for the next one.
    if (definition.records.insertAll)
      this.inserts = new Coalescer((batch) => this.insertTogether(batch), { maxInFlight: INSERTS_IN_FLIGHT });
    core.reconciler.register({
      queue: definition.queue,
      unfinished: (olderThanMs, limit) => this.unfinished(olderThanMs, limit),
      moveToJob: (id, fromJobId, toJobId) => definition.records.moveToJob(id, fromJobId, toJobId),
      jobData: (id) => definition.jobData(id),
      abandon: (orphan) => this.abandon(orphan),
    });
    core.signals.on(this.topic('canceled'), (id) => this.running.get(id)?.abort());
  }

  /**
   * Records and queues a new record, or answers the record an earlier request with the same
   * Idempotency-Key made. A record that `place` leaves without a job is only recorded.
   *
   * In the caller's transaction when one is open. Otherwise a plain submission (no key, no
   * place) goes with the others of the moment: the records and their jobs in one statement,
   * which commits on its own (group commit: one round trip for all of them); one that needs
   * reads first (a key, a place) gets a transaction of its own.
   */
  async enqueue(submission: Submission<R>): Promise<Submitted<R>> {
    const { txHost } = this.core;
    if (txHost.isTransactionActive()) return this.enqueueInTransaction(submission);
    if (this.inserts && !submission.idempotency && !submission.place) {
      const result = await this.inserts.add(submission);
      if (result instanceof Error) throw result;
      return result;
    }
    return txHost.withTransaction(() => this.enqueueInTransaction(submission));
  }

  /**
   * Plain submissions together: their records and jobs in one statement. When it fails, each
   * is tried alone, so one that cannot be recorded (its agent deleted meanwhile) fails only its own.
   */
  private async insertTogether(batch: Array<Submission<R>>): Promise<Array<Submitted<R> | Error>> {
    const insert = async (submissions: Array<Submission<R>>) => {
      const jobs = await Promise.all(
        submissions.map(async ({ record, sendOptions }) => ({
          data: this.definition.jobData(record.id),
          options: {
            ...this.prioritized(record, sendOptions),
            id: record.jobId ?? randomUUID(),
            group: await this.core.shares.group(record.organizationId),
          },
        })),
      );
      const records = submissions.map((s) => s.record);
      await this.definition.records.insertAll!(records, await this.core.queue.insertStatement(this.definition.queue, jobs));
      return records.map((record) => ({ record, created: true }));
    };
    try {
      return await insert(batch);
    } catch (error) {
      if (batch.length === 1) return [error instanceof Error ? error : new Error(String(error))];
      return Promise.all(
        batch.map((one) =>
          insert([one]).then(
            ([done]) => done,
            (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
          ),
        ),
      );
    }
  }

  private async enqueueInTransaction(submission: Submission<R>): Promise<Submitted<R>> {
    const { idempotency, place } = submission;
    const { records } = this.definition;
    if (idempotency) {
      const earlier = await this.core.idempotency.claim(idempotency, submission.record.id);
      const found = earlier ? await records.findById(earlier) : null;
      if (found) return { record: found, created: false };
    }
    const record = place ? await place(submission.record) : submission.record;
    await records.insert(record);
    if (record.jobId) await this.send(record, this.prioritized(record, submission.sendOptions));
    return { record, created: true };
  }

  /** Queues a job for a record already written in the current transaction (a new one, one sent again by hand, one given its turn). */
  async send(record: Pick<JobRecord, 'id' | 'organizationId' | 'jobId'>, sendOptions: Omit<SendOptions, 'id'>): Promise<void> {
    await this.core.queue.send(this.definition.queue, this.definition.jobData(record.id), {
      ...sendOptions,
      id: record.jobId ?? randomUUID(),
      group: await this.core.shares.group(record.organizationId),
    });
  }

  /** The options of a new record's job, with the organization's priority (see OrganizationShares.priority). */
  prioritized(record: Pick<JobRecord, 'organizationId'>, sendOptions: Omit<SendOptions, 'id'>): Omit<SendOptions, 'id'> {
    return { ...sendOptions, priority: this.core.shares.priority(record.organizationId) };
  }

  /** Records waiting on jobs held back for a later start (retries) may be taken up now; `wake` after the commit. */
  startNow(jobIds: string[]): Promise<number> {
    return this.core.queue.startNow(this.definition.queue, jobIds);
  }

  /** Wakes one of this process's idle workers for the kind (after a commit that queued jobs). */
  wake(): void {
    this.core.queue.wake(this.definition.queue);
  }

  /**
   * After the enqueue committed: counts a new record, wakes a worker for it and waits up to
   * `waitSeconds` for its final status. Answers the record as it then stands.
   */
  settle(submitted: Submitted<R>, labels: Labels, waitSeconds: number): Promise<R> {
    if (submitted.created) this.metrics.reached(labels, 'queued');
    return awaitFinal(this.core.signals, this.core.queue, {
      ...submitted,
      queue: this.definition.queue,
      finished: this.topic('finished'),
      id: submitted.record.id,
      waitSeconds,
      isFinal: (record) => !['queued', 'running', 'waiting'].includes(record.status),
      read: () => this.definition.records.findById(submitted.record.id),
    });
  }

  /**
   * A cancel through the API: `change` is the guarded UPDATE (null when the record was already
   * final); with its event in one transaction. The worker running it (in any process) aborts
   * it, and waiters get the record.
   */
  async cancel(change: () => Promise<R | null>, labels: Labels): Promise<R | null> {
    const [canceled] = await this.withEvents(async () => [await change()], 'end');
    if (!canceled) return null;
    this.core.signals.publish(this.topic('canceled'), canceled.id);
    this.announceFinished(canceled, labels);
    return canceled;
  }

  /** Records the final outcome of a record that another part of the service runs (a workflow step's execution). */
  async finishOwned(id: string, outcome: Outcome, labels: Labels): Promise<void> {
    await this.finish(id, outcome, labels);
  }

  /** A record reached its final status (here, or where another part of the service ran it): counted, then announced. */
  announceFinished(record: R, labels: Labels): void {
    this.metrics.finished(labels, record);
    this.core.signals.publish(this.topic('finished'), record.id, record);
    this.changed(record.id);
  }

  /** Tells live streams in every process that the record changed (after the change committed). */
  changed(id: string): void {
    this.core.signals.publish(this.topic('changed'), id);
  }

  /**
   * For a live stream: calls `check` at once, whenever the record `changed` (in any process) and
   * every WATCH_POLL_MS, until it answers non-null or `timeoutMs` passes (then null).
   */
  watch<T>(id: string, timeoutMs: number, check: () => Promise<T | null>): Promise<T | null> {
    return this.core.signals.waitFor(this.topic('changed'), id, timeoutMs, check, WATCH_POLL_MS);
  }

  /** On worker processes: takes this kind's jobs and runs each started record with `run`. */
  work(run: (started: S, signals: RunSignals) => Promise<RunResult>): void {
    const { queue, batchSize, share } = this.definition;
    this.core.queue.register<object>({
      name: queue,
      batchSize,
      handler: (jobs) => this.each(jobs, run),
      slots: (base) => this.core.shares.workerSlots(share, base),
    });
  }

  /**
   * One batch: the records are moved to `running` in one statement and run concurrently. While
   * the database is away, starting the batch and recording an outcome are tried again every
   * few hundred ms for as long as the job's lease lasts, so work caught by an outage resumes as
   * soon as the database is back (not once the lease ran out); a job whose record could not be
   * started or recorded within its lease is failed, so the queue runs it again. What was
   * committed stays. Answers a promise per job, each settling as its job ends.
   */
  private each(jobs: Array<Job<object>>, run: (started: S, signals: RunSignals) => Promise<RunResult>): Array<Promise<JobResult>> {
    const { records, recordOf, recordId, labels } = this.definition;
    const starting = this.start(
      jobs.map((job) => ({ id: recordId(job.data), jobId: job.id })),
      jobs[0].signal,
    );
    return jobs.map(async (job): Promise<JobResult> => {
      const attempt = (await starting).get(job.id);
      if (attempt instanceof Error) return retried(job, attempt);
      // Canceled, already finished, or gone: nothing to run.
      if (!attempt) return { id: job.id, status: 'completed' };
      const { id } = recordOf(attempt);
      const cancel = new AbortController();
      this.running.set(id, cancel);
      try {
        this.metrics.reached(labels(attempt), 'running');
        const result = await run(attempt, { cancel: cancel.signal, lease: job.signal });
        // A lost lease with nothing recorded: fail the job, so the queue hands it out again.
        if (result === null && job.signal.aborted) return { id: job.id, status: 'failed' };
        if (result && 'later' in result) await untilLeaseEnds(() => this.park(attempt, job.id, result, labels(attempt)), job.signal);
        else if (result) await untilLeaseEnds(() => this.finish(id, result, labels(attempt)), job.signal);
        return { id: job.id, status: 'completed' };
      } catch (error) {
        this.logger.warn(`${id} interrupted: ${(error as Error).message}`);
        // The queue can fail the job (for another attempt) only once the database answers.
        await untilLeaseEnds(() => records.findById(id), job.signal).catch(() => null);
        return retried(job, error);
      } finally {
        this.running.delete(id);
      }
    });
  }

  /**
   * Starts the batch's records in one statement, tried again while the database is away. When
   * it fails otherwise, each is started on its own, so that a record that cannot start (its
   * endpoint's secret sealed with another key, say) fails only its own job, not the other
   * organizations' in the batch.
   */
  private async start(refs: JobRef[], lease: AbortSignal): Promise<Map<string, S | Error>> {
    const { records, recordOf } = this.definition;
    // Keyed by job: a record is started only for the job it is on.
    const startSome = async (some: JobRef[]) => {
      const started = await untilLeaseEnds(() => records.start(some), lease, isDatabaseUnavailable);
      for (const s of started) this.changed(recordOf(s).id);
      return new Map<string, S | Error>(started.map((s) => [recordOf(s).jobId!, s]));
    };
    try {
      return await startSome(refs);
    } catch (error) {
      if (refs.length === 1 || lease.aborted) {
        this.logger.warn(`Not started: ${(error as Error).message}`);
        return new Map(refs.map((ref) => [ref.jobId, error as Error]));
      }
    }
    const started = new Map<string, S | Error>();
    for (const ref of refs) {
      try {
        for (const [jobId, record] of await startSome([ref])) started.set(jobId, record);
      } catch (error) {
        this.logger.warn(`Not started: ${ref.id}: ${(error as Error).message}`);
        started.set(ref.jobId, error as Error);
      }
    }
    return started;
  }

  /**
   * A run that answered `later`: in one transaction the record becomes `waiting` on a new job
   * that starts at the time asked (its event with it); the job that ran it then completes, so
   * no worker holds it meanwhile.
   */
  private async park(attempt: S, fromJobId: string, { later: { at, error } }: Later, labels: Labels): Promise<void> {
    const { records, queue, jobData, resumeOptions, recordOf, name } = this.definition;
    if (!records.wait || !resumeOptions) throw new Error(`Records of kind '${name}' cannot wait`);
    const { id, organizationId } = recordOf(attempt);
    const toJobId = randomUUID();
    const group = await this.core.shares.group(organizationId);
    let startAt = at;
    const [waiting] = await this.withEvents(async () => {
      const parked = await records.wait!(id, fromJobId, toJobId, at, error);
      if (parked) {
        startAt = (await this.definition.resumeAt?.(parked, at)) ?? at;
        const priority = this.core.shares.priority(organizationId);
        await this.core.queue.send(queue, jobData(id), { ...resumeOptions(parked, attempt), id: toJobId, group, priority, startAt });
      }
      return [parked];
    }, 'park');
    if (!waiting) return;
    this.changed(id);
    // A kind that shows the wait as a status of its own counts it (a delivery's retry stays `queued`).
    if (waiting.status === 'waiting') this.metrics.reached(labels, 'waiting');
    if (startAt.getTime() <= Date.now()) this.wake();
  }

  /**
   * A record's outcome whose value the database refuses (its output over a size limit, text
   * it cannot hold) is recorded as OUTPUT_UNSTORABLE instead, at once: recording it again would
   * fail the same way, and its job would be run again until the record is lost.
   */
  private async finish(id: string, outcome: Outcome, labels: Labels): Promise<void> {
    let finished = await this.finishes.add({ id, outcome });
    if (finished instanceof Refused) {
      this.logger.warn(`${id}: its outcome cannot be stored: ${(finished.error as Error).message}`);
      finished = await this.finishes.add({ id, outcome: { status: 'failed', error: unstorableOutcome(outcome, finished.error) } });
      if (finished instanceof Refused) throw finished.error;
    }
    if (finished) this.announceFinished(finished, labels);
  }

  /** Outcomes in one statement; when the database refuses a value in them, each alone, so only the refused one answers Refused. */
  private async finishTogether(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<R | null | Refused>> {
    const end = (some: Array<{ id: string; outcome: Outcome }>) => this.withEvents(() => this.definition.records.finish(some), 'end');
    try {
      return await end(outcomes);
    } catch (error) {
      if (!isUnstorableWrite(error)) throw error;
      if (outcomes.length === 1) return [new Refused(error)];
    }
    return Promise.all(
      outcomes.map((one) =>
        end([one]).then(
          ([finished]) => finished,
          (error: unknown) => {
            if (isUnstorableWrite(error)) return new Refused(error);
            throw error;
          },
        ),
      ),
    );
  }

  private async unfinished(olderThanMs: number, limit: number): Promise<Array<UnfinishedRecord & { labels: Labels }>> {
    const { records, recoverable, sendOptions, labels } = this.definition;
    const unfinished = await records.unfinished(olderThanMs, limit);
    return Promise.all(
      unfinished.map(async (u) => ({
        id: u.id,
        jobId: u.jobId,
        recoverable: recoverable(u),
        sendOptions: { ...sendOptions(u), group: await this.core.shares.group(u.organizationId) },
        labels: labels(u),
      })),
    );
  }

  private async abandon(orphan: UnfinishedRecord & { labels: Labels }): Promise<boolean> {
    const [abandoned] = await this.withEvents(
      async () => [await this.definition.records.abandon(orphan.id, orphan.jobId, this.definition.lost)],
      'end',
    );
    if (abandoned) this.announceFinished(abandoned, orphan.labels);
    return abandoned !== null;
  }

  /**
   * Runs a status change and writes the events of the records it changed, in one transaction:
   * with what the kind's end moves when it `end`s records; a `park` is one even without events.
   */
  private async withEvents(change: () => Promise<Array<R | null>>, what: 'end' | 'park'): Promise<Array<R | null>> {
    const { event, ended } = this.definition;
    if (!event && !(what === 'end' && ended) && what !== 'park') return change();
    let published = false;
    let committed: (() => void) | void = undefined;
    const finished = await this.core.txHost.withTransaction(async () => {
      const records = await change();
      if (what === 'end' && ended) committed = await ended(records.filter((r): r is R => r !== null));
      const events = event
        ? records.flatMap((record) => (record ? [event(record)] : [])).filter((e): e is PlatformEvent => e !== null)
        : [];
      if (events.length) await this.core.outbox.publish(events);
      published = events.length > 0;
      return records;
    });
    if (published) this.core.outbox.committed();
    (committed as (() => void) | void)?.();
    return finished;
  }

  private topic(event: 'finished' | 'canceled' | 'changed'): string {
    return `${this.definition.name}.${event}`;
  }
}

/**
 * How often a live stream reads its record when no signal came (a lost NOTIFY): each open
 * stream costs a read this often, so not every second.
 */
const WATCH_POLL_MS = 5000;
/**
 * Insert statements of new records under way at once, per kind and process (group commit):
 * enough to keep a connection busy while the other's commit is flushed, few enough that under
 * load each carries many records.
 */
const INSERTS_IN_FLIGHT = 2;

/** Backoff between tries of a write while the database is away. */
const RETRY_WRITE_MS = [100, 250, 500, 1000];

/**
 * `write`, tried again while it fails, until it succeeds or `lease` ends (then its last error).
 * With `retryIf`, an error it does not accept is thrown at once.
 */
async function untilLeaseEnds<T>(
  write: () => Promise<T>,
  lease: AbortSignal,
  retryIf: (error: unknown) => boolean = () => true,
): Promise<T> {
  for (let failures = 0; ; failures++) {
    try {
      return await write();
    } catch (error) {
      if (lease.aborted || !retryIf(error)) throw error;
      await sleep(RETRY_WRITE_MS[Math.min(failures, RETRY_WRITE_MS.length - 1)], undefined, { signal: lease }).catch(() => undefined);
      if (lease.aborted) throw error;
    }
  }
}

/** An outcome the database refused to store. */
class Refused {
  constructor(readonly error: unknown) {}
}

function unstorableOutcome(outcome: Outcome, error: unknown): Failure {
  const e = error as { message?: unknown; detail?: unknown; driverError?: { detail?: unknown } };
  const reason = [e.message, e.detail ?? e.driverError?.detail].filter((t) => typeof t === 'string').join(': ');
  const what = outcome.status === 'succeeded' ? 'output' : 'error';
  return { code: 'OUTPUT_UNSTORABLE', message: `The ${what} cannot be stored (${reason || 'refused by the database'})` };
}

function retried(job: Job<object>, error: unknown): JobResult {
  return { id: job.id, status: 'failed', output: { message: (error as Error).message } };
}
