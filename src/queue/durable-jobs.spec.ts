import type { Job, JobResult } from 'pg-boss';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { inlineTransactions } from '../../test/support/inline-transactions';
import { DatabaseConnection } from '../database/database-connection';
import { EventOutbox, PlatformEvent } from '../shared/events/event-outbox';
import { IdempotencyKeys, IdempotentRequest } from '../shared/idempotency/idempotency-keys';
import { JobRef } from '../shared/jobs/job-ref';
import { Statement } from '../shared/jobs/statement';
import { Failure, Outcome } from '../shared/jobs/outcome';
import { Metrics } from '../shared/metrics/metrics';
import { DurableJobKind, DurableJobs, JobRecords, later, RunResult, RunSignals } from './durable-jobs';
import { JobQueue, QueueDefinition, SendOptions, unhandledQueues } from './job-queue';
import { DurableRecords, JobReconciler, UnfinishedRecord } from './job-reconciler';
import { Signals } from './signals';
import { AppConfig } from '../config/app-config';
import { OrganizationShares, Shares } from '../shared/fairness/organization-shares';

const SHARES: Shares = { expressions: 50, executions: 50, runs: 50, deliveries: 50, schedules: 20 };

interface Thing {
  id: string;
  organizationId: string;
  status: string;
  jobId: string | null;
  createdAt: Date;
  finishedAt: Date | null;
  attempts: number;
  color: string;
  error: Failure | null;
  output: unknown;
}

type Unfinished = { id: string; organizationId: string; jobId: string | null; attempts: number; color: string };

/** Records in a map, with the guarded transitions of the real repositories. */
class InMemoryThings implements JobRecords<Thing, Thing, Unfinished> {
  readonly rows = new Map<string, Thing>();
  finishCalls = 0;
  failStart = false;
  /** Records whose start throws, whatever else is in the batch (a secret no key opens). */
  readonly unstartable = new Set<string>();
  /** Finishes that throw (the database is away) before they go through. */
  failFinishes = 0;
  /** Outputs PostgreSQL refuses to store (as jsonb refuses `\u0000`): a finish with one throws a 22P05. */
  refusedOutput: unknown = undefined;

  async insert(record: Thing): Promise<void> {
    this.rows.set(record.id, { ...record });
  }
  async findById(id: string): Promise<Thing | null> {
    const row = this.rows.get(id);
    return row ? { ...row } : null;
  }
  async start(jobs: JobRef[]): Promise<Thing[]> {
    if (this.failStart) throw new Error('connection terminated');
    const bad = jobs.find(({ id }) => this.unstartable.has(id));
    if (bad) throw new Error(`the secret of ${bad.id} cannot be opened`);
    return jobs.flatMap(({ id, jobId }) => {
      const row = this.rows.get(id);
      if (!row || row.jobId !== jobId || !['queued', 'running', 'waiting'].includes(row.status)) return [];
      Object.assign(row, { status: 'running', attempts: row.attempts + (row.status === 'waiting' ? 0 : 1) });
      return [{ ...row }];
    });
  }
  async wait(id: string, fromJobId: string, toJobId: string): Promise<Thing | null> {
    const row = this.rows.get(id);
    if (!row || row.jobId !== fromJobId || row.status !== 'running') return null;
    Object.assign(row, { status: 'waiting', jobId: toJobId });
    return { ...row };
  }
  async finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<Thing | null>> {
    this.finishCalls++;
    if (this.failFinishes-- > 0) throw new Error('connection terminated');
    if (outcomes.some(({ outcome }) => outcome.status === 'succeeded' && outcome.output === this.refusedOutput))
      throw Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });
    return outcomes.map(({ id, outcome }) => {
      const row = this.rows.get(id);
      if (!row || row.status !== 'running') return null;
      Object.assign(row, {
        status: outcome.status,
        finishedAt: new Date(),
        output: outcome.status === 'succeeded' ? outcome.output : null,
        error: outcome.status === 'succeeded' ? null : outcome.error,
      });
      return { ...row };
    });
  }
  async unfinished(): Promise<Unfinished[]> {
    return [...this.rows.values()]
      .filter((r) => ['queued', 'running'].includes(r.status))
      .map((r) => ({ id: r.id, organizationId: r.organizationId, jobId: r.jobId, attempts: r.attempts, color: r.color }));
  }
  async moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean> {
    const row = this.rows.get(id);
    if (!row || row.jobId !== fromJobId) return false;
    row.jobId = toJobId;
    return true;
  }
  async abandon(id: string, jobId: string | null, error: Failure): Promise<Thing | null> {
    const row = this.rows.get(id);
    if (!row || row.jobId !== jobId || !['queued', 'running'].includes(row.status)) return null;
    Object.assign(row, { status: 'failed', error, finishedAt: new Date() });
    return { ...row };
  }
}

/** The queue as the core uses it: jobs sent are kept, the handler is called by the test. */
class FakeQueue {
  readonly sent: Array<{ name: string; data: object; options: SendOptions }> = [];
  readonly woken: string[] = [];
  definition?: QueueDefinition<object>;

  readonly declared: string[] = [];
  declare(name: string): void {
    this.declared.push(name);
  }
  register<T extends object>(definition: QueueDefinition<T>): void {
    this.definition = definition as unknown as QueueDefinition<object>;
  }
  async send(name: string, data: object, options: SendOptions): Promise<string> {
    this.sent.push({ name, data, options });
    return options.id!;
  }
  wake(name: string): void {
    this.woken.push(name);
  }
  /** The statement that would queue these jobs: here, the jobs themselves. */
  async insertStatement(name: string, jobs: Array<{ data: object; options: SendOptions }>): Promise<Statement> {
    return { sql: `insert into ${name}`, params: jobs };
  }
  /** Hands these jobs to the registered handler, as a worker would. */
  deliver(...jobs: Array<Job<object>>): Promise<JobResult[]> {
    return Promise.all(this.definition!.handler(jobs));
  }
}

class FakeReconciler {
  source?: DurableRecords<UnfinishedRecord>;
  readonly chores: Array<() => Promise<unknown>> = [];
  register<T extends UnfinishedRecord>(source: DurableRecords<T>): void {
    this.source = source as unknown as DurableRecords<UnfinishedRecord>;
  }
  addChore(chore: () => Promise<unknown>): void {
    this.chores.push(chore);
  }
}

/** Things recorded a batch at a time with the statement that queues their jobs (the real repository runs both as one). */
class BatchingThings extends InMemoryThings {
  readonly batches: Array<{ ids: string[]; alongside: Statement }> = [];
  /** Records whose insert fails (their organization deleted meanwhile), failing any batch they are in. */
  readonly refused = new Set<string>();
  /** Whether each batch ran inside a transaction. */
  readonly inTransaction: boolean[] = [];

  async insertAll(batch: Thing[], alongside: Statement): Promise<void> {
    this.inTransaction.push(TransactionHost.getInstance().isTransactionActive());
    if (batch.some((r) => this.refused.has(r.id))) throw new Error('violates foreign key constraint');
    this.batches.push({ ids: batch.map((r) => r.id), alongside });
    for (const record of batch) await this.insert(record);
  }
}

/** Idempotency keys in a map (the real one claims a row in the transaction). */
class InMemoryKeys {
  private readonly keys = new Map<string, string>();
  purged = 0;
  async claim(request: IdempotentRequest, resourceId: string): Promise<string | null> {
    const key = `${request.organizationId}:${request.scope}:${request.key}`;
    const earlier = this.keys.get(key);
    if (earlier) return earlier;
    this.keys.set(key, resourceId);
    return null;
  }
  async purgeExpired(): Promise<number> {
    this.purged++;
    return 0;
  }
}

/** Events as the core publishes them, each with whether it ran inside the change's transaction. */
class RecordingOutbox extends EventOutbox {
  readonly published: Array<{ event: PlatformEvent; inTransaction: boolean }> = [];
  wakes = 0;
  async publish(events: PlatformEvent[]): Promise<void> {
    for (const event of events) this.published.push({ event, inTransaction: TransactionHost.getInstance().isTransactionActive() });
  }
  committed(): void {
    this.wakes++;
  }
}

class Things extends DurableJobKind<Thing, Thing, Unfinished> {
  constructor(core: DurableJobs, records: InMemoryThings) {
    super(core, {
      name: 'thing',
      queue: 'things',
      batchSize: 4,
      share: 'executions',
      records,
      metrics: { total: 'things_total', duration: 'thing_duration_seconds', noun: 'Things', labelNames: ['color'] },
      recordOf: (thing) => thing,
      labels: (of) => ({ color: of.color }),
      jobData: (id) => ({ thingId: id }),
      recordId: (data) => (data as { thingId: string }).thingId,
      sendOptions: () => ({ leaseSeconds: 5, retryLimit: 2 }),
      resumeOptions: () => ({ leaseSeconds: 6, retryLimit: 2 }),
      recoverable: (u) => u.attempts < 3,
      lost: { code: 'THING_LOST', message: 'Lost too often' },
      event: (thing) => ({ organizationId: 'org', type: `thing.${thing.status}`, data: { id: thing.id } }),
    });
  }
}

let counter = 0;
function newThing(overrides: Partial<Thing> = {}): Thing {
  counter++;
  return {
    id: `thing-${counter}`,
    organizationId: 'org-1',
    status: 'queued',
    jobId: `job-${counter}`,
    createdAt: new Date(Date.now() - 50),
    finishedAt: null,
    attempts: 0,
    color: 'red',
    error: null,
    output: null,
    ...overrides,
  };
}

function jobFor(thing: Thing, signal = new AbortController().signal): Job<object> {
  return { id: thing.jobId!, name: 'things', data: { thingId: thing.id }, signal } as unknown as Job<object>;
}

describe('DurableJobKind (the durable-job core)', () => {
  let records: InMemoryThings;
  let queue: FakeQueue;
  let reconciler: FakeReconciler;
  let keys: InMemoryKeys;
  let metrics: Metrics;
  let signals: Signals;
  let things: Things;
  let outbox: RecordingOutbox;
  let batchingKind: (records: BatchingThings) => Things;

  beforeEach(() => {
    outbox = new RecordingOutbox();
    records = new InMemoryThings();
    queue = new FakeQueue();
    reconciler = new FakeReconciler();
    keys = new InMemoryKeys();
    metrics = new Metrics();
    signals = new Signals(new DatabaseConnection('postgres://unused', true));
    const shares = new OrganizationShares({ shareOverrides: {} } as unknown as AppConfig);
    shares.use({ tierOf: () => Promise.resolve('team'), byTier: { default: SHARES, team: { ...SHARES, executions: 25 } } });
    const transactions = inlineTransactions() as TransactionHost<TransactionalAdapterTypeOrm>;
    const coreWith = (registry: Metrics) =>
      new DurableJobs(
        queue as unknown as JobQueue,
        signals,
        reconciler as unknown as JobReconciler,
        keys as unknown as IdempotencyKeys,
        registry,
        outbox,
        transactions,
        shares,
      );
    things = new Things(coreWith(metrics), records);
    // A second kind of the same name on the same queue, its metrics in a registry of their own.
    batchingKind = (batching) => new Things(coreWith(new Metrics()), batching);
  });

  async function metric(text: RegExp): Promise<number> {
    const match = text.exec(await metrics.registry.metrics());
    return match ? Number(match[1]) : 0;
  }

  async function enqueued(overrides: Partial<Thing> = {}): Promise<Thing> {
    const thing = newThing(overrides);
    await things.enqueue({ record: thing, sendOptions: { leaseSeconds: 5, retryLimit: 2 } });
    return thing;
  }

  describe('enqueue and settle', () => {
    it('records the thing and sends its job with its id, data and options', async () => {
      const thing = newThing();
      const submitted = await things.enqueue({ record: thing, sendOptions: { leaseSeconds: 7, retryLimit: 1 } });
      expect(submitted).toEqual({ record: thing, created: true });
      expect(records.rows.get(thing.id)?.status).toBe('queued');
      expect(queue.sent).toEqual([
        {
          name: 'things',
          data: { thingId: thing.id },
          options: { leaseSeconds: 7, retryLimit: 1, id: thing.jobId, group: { id: 'org-1', tier: 'team' }, priority: 0 },
        },
      ]);
    });

    it('records the plain submissions of a moment and queues their jobs in one statement, outside any transaction', async () => {
      const batching = new BatchingThings();
      const kind = batchingKind(batching);
      const [a, b, c] = [newThing(), newThing({ organizationId: 'org-2' }), newThing()];
      const submitted = await Promise.all(
        [a, b, c].map((record) => kind.enqueue({ record, sendOptions: { leaseSeconds: 5, retryLimit: 2 } })),
      );
      expect(submitted).toEqual([a, b, c].map((record) => ({ record, created: true })));
      expect(batching.batches.map((batch) => batch.ids)).toEqual([[a.id, b.id, c.id]]);
      expect(batching.inTransaction).toEqual([false]);
      expect(batching.batches[0].alongside).toEqual({
        sql: 'insert into things',
        params: [a, b, c].map((thing) => ({
          data: { thingId: thing.id },
          options: {
            leaseSeconds: 5,
            retryLimit: 2,
            id: thing.jobId,
            group: { id: thing.organizationId, tier: 'team' },
            priority: expect.any(Number),
          },
        })),
      });
      expect(queue.sent).toEqual([]);
    });

    it('tries each submission of a failed batch alone, so only the one that cannot be recorded fails', async () => {
      const batching = new BatchingThings();
      const kind = batchingKind(batching);
      const [a, refused, c] = [newThing(), newThing(), newThing()];
      batching.refused.add(refused.id);
      const results = await Promise.allSettled(
        [a, refused, c].map((record) => kind.enqueue({ record, sendOptions: { leaseSeconds: 5, retryLimit: 2 } })),
      );
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toEqual(new Error('violates foreign key constraint'));
      expect(batching.batches.map((batch) => batch.ids)).toEqual([[a.id], [c.id]]);
      expect([...batching.rows.keys()]).toEqual([a.id, c.id]);
    });

    it("enqueues a submission with an Idempotency-Key in a transaction of its own, and one in a caller's transaction in it", async () => {
      const batching = new BatchingThings();
      const kind = batchingKind(batching);
      const idempotency = { organizationId: 'org', scope: 'thing:1', key: 'k', body: {} };
      const keyed = newThing();
      await kind.enqueue({ record: keyed, sendOptions: { leaseSeconds: 5, retryLimit: 2 }, idempotency });
      const joined = newThing();
      await TransactionHost.getInstance().withTransaction(() =>
        kind.enqueue({ record: joined, sendOptions: { leaseSeconds: 5, retryLimit: 2 } }),
      );
      expect(batching.batches).toEqual([]);
      expect(queue.sent.map((job) => job.options.id)).toEqual([keyed.jobId, joined.jobId]);
      expect([...batching.rows.keys()]).toEqual([keyed.id, joined.id]);
    });

    it("caps an organization's jobs in flight at its tier's share on the queue it works", () => {
      things.work(() => Promise.resolve({ status: 'succeeded', output: null }));
      // Room beyond the 16 of its batches so that the top share (50 %) of the whole is 16.
      expect(queue.definition?.slots?.(16)).toEqual({ capacity: 32, limits: { default: 16, tiers: { default: 16, team: 8 } } });
    });

    it('answers the earlier record for a repeated Idempotency-Key, with no second job', async () => {
      const idempotency = { organizationId: 'org', scope: 'thing:1', key: 'k', body: {} };
      const first = await things.enqueue({ record: newThing(), sendOptions: { leaseSeconds: 5, retryLimit: 2 }, idempotency });
      const second = await things.enqueue({ record: newThing(), sendOptions: { leaseSeconds: 5, retryLimit: 2 }, idempotency });
      expect(second).toEqual({ record: first.record, created: false });
      expect(records.rows.size).toBe(1);
      expect(queue.sent).toHaveLength(1);
    });

    it('settle with no wait counts a new thing as queued, wakes a worker and answers at once', async () => {
      const thing = newThing();
      const answer = await things.settle({ record: thing, created: true }, { color: 'red' }, 0);
      expect(answer).toBe(thing);
      expect(queue.woken).toEqual(['things']);
      expect(await metric(/things_total\{color="red",status="queued"\} (\d+)/)).toBe(1);
    });

    it('settle of a repeat neither counts nor wakes', async () => {
      await things.settle({ record: newThing(), created: false }, { color: 'red' }, 0);
      expect(queue.woken).toEqual([]);
      expect(await metric(/things_total\{color="red",status="queued"\} (\d+)/)).toBe(0);
    });

    it('settle waits for the finished signal and answers the finished record', async () => {
      const thing = await enqueued();
      things.work(async () => ({ status: 'succeeded', output: { done: true } }));
      const waiting = things.settle({ record: thing, created: true }, { color: 'red' }, 5);
      await queue.deliver(jobFor(thing));
      expect(await waiting).toMatchObject({ id: thing.id, status: 'succeeded', output: { done: true } });
    });
  });

  describe('work', () => {
    it('runs a batch: outcomes recorded in one statement, counted, and announced', async () => {
      const [a, b] = [await enqueued(), await enqueued({ color: 'blue' })];
      things.work(async (thing) => ({ status: 'succeeded', output: thing.id }));
      const announced: string[] = [];
      signals.on('thing.finished', (id) => announced.push(id));

      const results = await queue.deliver(jobFor(a), jobFor(b));

      expect(results).toEqual([
        { id: a.jobId, status: 'completed' },
        { id: b.jobId, status: 'completed' },
      ]);
      expect(records.rows.get(a.id)).toMatchObject({ status: 'succeeded', output: a.id, attempts: 1 });
      expect(records.rows.get(b.id)).toMatchObject({ status: 'succeeded', output: b.id });
      expect(records.finishCalls).toBe(1);
      expect(announced.sort()).toEqual([a.id, b.id].sort());
      // Each finish wrote its event in the transaction of the status change, then woke the senders.
      expect(outbox.published).toEqual([
        { event: { organizationId: 'org', type: 'thing.succeeded', data: { id: a.id } }, inTransaction: true },
        { event: { organizationId: 'org', type: 'thing.succeeded', data: { id: b.id } }, inTransaction: true },
      ]);
      expect(outbox.wakes).toBe(1);
      expect(await metric(/things_total\{color="red",status="running"\} (\d+)/)).toBe(1);
      expect(await metric(/things_total\{color="blue",status="succeeded"\} (\d+)/)).toBe(1);
      expect(await metric(/thing_duration_seconds_count\{color="red",status="succeeded"\} (\d+)/)).toBe(1);
    });

    it('completes the job of a thing that is already final, without running it', async () => {
      const done = await enqueued();
      records.rows.get(done.id)!.status = 'canceled';
      const run = jest.fn();
      things.work(run);
      expect(await queue.deliver(jobFor(done))).toEqual([{ id: done.jobId, status: 'completed' }]);
      expect(run).not.toHaveBeenCalled();
    });

    it('records nothing for null, and fails the job for null once the lease is gone (the queue hands it out again)', async () => {
      const [nothing, lost] = [await enqueued(), await enqueued()];
      const lease = new AbortController();
      lease.abort();
      things.work(async (): Promise<RunResult> => null);
      expect(await queue.deliver(jobFor(nothing))).toEqual([{ id: nothing.jobId, status: 'completed' }]);
      expect(await queue.deliver(jobFor(lost, lease.signal))).toEqual([{ id: lost.jobId, status: 'failed' }]);
      expect(records.finishCalls).toBe(0);
      expect(records.rows.get(nothing.id)?.status).toBe('running');
    });

    it('fails only the job whose run threw (the database went away); the rest of the batch is recorded', async () => {
      const [broken, fine] = [await enqueued(), await enqueued()];
      things.work(async (thing) => {
        if (thing.id === broken.id) throw new Error('connection terminated');
        return { status: 'succeeded', output: null };
      });
      const results = await queue.deliver(jobFor(broken), jobFor(fine));
      expect(results[0]).toEqual({ id: broken.jobId, status: 'failed', output: { message: 'connection terminated' } });
      expect(results[1]).toEqual({ id: fine.jobId, status: 'completed' });
      expect(records.rows.get(fine.id)?.status).toBe('succeeded');
    });

    it('records an output the database refuses as OUTPUT_UNSTORABLE at once; the rest of its batch is recorded as it was', async () => {
      const [refused, fine] = [await enqueued(), await enqueued()];
      records.refusedOutput = 'too much';
      things.work(async (thing) => ({ status: 'succeeded', output: thing.id === refused.id ? 'too much' : 'fine' }));

      const results = await queue.deliver(jobFor(refused), jobFor(fine));

      // Completed, not failed: a failed job would run the thing again, and refuse the same output again.
      expect(results).toEqual([
        { id: refused.jobId, status: 'completed' },
        { id: fine.jobId, status: 'completed' },
      ]);
      expect(records.rows.get(refused.id)).toMatchObject({
        status: 'failed',
        output: null,
        error: { code: 'OUTPUT_UNSTORABLE', message: 'The output cannot be stored (unsupported Unicode escape sequence)' },
      });
      expect(records.rows.get(fine.id)).toMatchObject({ status: 'succeeded', output: 'fine' });
    });

    it('fails every job of a batch that could not be started before its lease ran out', async () => {
      const [a, b] = [await enqueued(), await enqueued()];
      const run = jest.fn();
      things.work(run);
      records.failStart = true;
      const lease = new AbortController();
      setTimeout(() => lease.abort(), 300);
      const results = await queue.deliver(jobFor(a, lease.signal), jobFor(b, lease.signal));
      expect(results.map((r) => r.status)).toEqual(['failed', 'failed']);
      expect(run).not.toHaveBeenCalled();
    });

    it("fails only the job of a record that cannot start; the batch's others start on their own and run", async () => {
      const [a, poisoned, b] = [await enqueued(), await enqueued(), await enqueued()];
      records.unstartable.add(poisoned.id);
      things.work(async () => ({ status: 'succeeded', output: null }));
      const results = await queue.deliver(jobFor(a), jobFor(poisoned), jobFor(b));
      expect(results).toEqual([
        { id: a.jobId, status: 'completed' },
        { id: poisoned.jobId, status: 'failed', output: { message: `the secret of ${poisoned.id} cannot be opened` } },
        { id: b.jobId, status: 'completed' },
      ]);
      expect([a, poisoned, b].map((t) => records.rows.get(t.id)?.status)).toEqual(['succeeded', 'queued', 'succeeded']);
    });

    it('starts a batch and records its outcomes as soon as the database is back, within the lease', async () => {
      const [a, b] = [await enqueued(), await enqueued()];
      things.work(async () => ({ status: 'succeeded', output: null }));
      records.failStart = true;
      records.failFinishes = 2;
      setTimeout(() => (records.failStart = false), 300);
      const results = await queue.deliver(jobFor(a), jobFor(b));
      expect(results.map((r) => r.status)).toEqual(['completed', 'completed']);
      expect([records.rows.get(a.id)?.status, records.rows.get(b.id)?.status]).toEqual(['succeeded', 'succeeded']);
      expect(records.finishCalls).toBeGreaterThanOrEqual(3);
    });

    it('a cancel aborts the running thing through its cancel signal; its outcome is not recorded over the cancel', async () => {
      const thing = await enqueued();
      let seen: RunSignals | undefined;
      things.work(
        (_thing, runSignals) =>
          new Promise<RunResult>((resolve) => {
            seen = runSignals;
            runSignals.cancel.addEventListener('abort', () => resolve({ status: 'canceled', error: { code: 'CANCELED', message: '' } }));
          }),
      );
      const finished: unknown[] = [];
      signals.on('thing.finished', (id) => finished.push(id));
      const delivered = queue.deliver(jobFor(thing));
      await new Promise((resolve) => setImmediate(resolve));

      // The API's guarded UPDATE, run by the core with the event.
      const row = records.rows.get(thing.id)!;
      const canceled = await things.cancel(async () => Object.assign(row, { status: 'canceled', finishedAt: new Date() }), {
        color: 'red',
      });
      expect(canceled?.status).toBe('canceled');

      expect(await delivered).toEqual([{ id: thing.jobId, status: 'completed' }]);
      expect(seen?.cancel.aborted).toBe(true);
      expect(records.rows.get(thing.id)?.status).toBe('canceled');
      expect(finished).toEqual([thing.id]);
      expect(await metric(/things_total\{color="red",status="canceled"\} (\d+)/)).toBe(1);
      expect(outbox.published).toEqual([
        { event: { organizationId: 'org', type: 'thing.canceled', data: { id: thing.id } }, inTransaction: true },
      ]);
    });

    it('hands the job lease to the run; a lost lease with nothing recorded fails the job, so it runs again', async () => {
      const thing = await enqueued();
      const lease = new AbortController();
      lease.abort();
      let leaseAborted = false;
      things.work(async (_thing, runSignals) => {
        leaseAborted = runSignals.lease.aborted;
        return null;
      });
      expect(await queue.deliver(jobFor(thing, lease.signal))).toEqual([{ id: thing.jobId, status: 'failed' }]);
      expect(leaseAborted).toBe(true);
      expect(records.rows.get(thing.id)?.status).toBe('running');
    });
  });

  describe('declared queues', () => {
    it('declares its queue when made, so a boot where nothing calls work() on it fails', () => {
      expect(queue.declared).toEqual(['things']);
      expect(unhandledQueues(new Set(queue.declared), new Map())).toEqual(['things']);
      things.work(async () => ({ status: 'succeeded', output: null }));
      expect(unhandledQueues(new Set(queue.declared), new Map([['things', queue.definition]]))).toEqual([]);
    });
  });

  describe('later', () => {
    it('parks the thing waiting on a new job that starts at the time asked, with its event, and lets the job end', async () => {
      const thing = await enqueued();
      const at = new Date(Date.now() + 60_000);
      things.work(async () => later(at));
      queue.sent.length = 0;

      expect(await queue.deliver(jobFor(thing))).toEqual([{ id: thing.jobId, status: 'completed' }]);
      const row = records.rows.get(thing.id)!;
      expect(row.status).toBe('waiting');
      expect(row.jobId).not.toBe(thing.jobId);
      expect(queue.sent).toEqual([
        {
          name: 'things',
          data: { thingId: thing.id },
          options: { leaseSeconds: 6, retryLimit: 2, id: row.jobId, group: { id: 'org-1', tier: 'team' }, priority: 0, startAt: at },
        },
      ]);
      expect(outbox.published).toEqual([
        { event: { organizationId: 'org', type: 'thing.waiting', data: { id: thing.id } }, inTransaction: true },
      ]);
      expect(await metric(/things_total\{color="red",status="waiting"\} (\d+)/)).toBe(1);
      // Not due yet: no worker is woken for it.
      expect(queue.woken).toEqual([]);
    });

    it('resumes on the new job without counting an attempt; the old job, run again, starts nothing', async () => {
      const thing = await enqueued();
      let calls = 0;
      things.work(async () => (++calls === 1 ? later(new Date(Date.now() - 1)) : { status: 'succeeded', output: 'done' }));
      await queue.deliver(jobFor(thing));
      // Due at once: this process's worker is woken.
      expect(queue.woken).toEqual(['things']);

      expect(await queue.deliver(jobFor(thing))).toEqual([{ id: thing.jobId, status: 'completed' }]);
      expect(calls).toBe(1);
      const resumed = records.rows.get(thing.id)!;
      expect(await queue.deliver(jobFor(resumed))).toEqual([{ id: resumed.jobId, status: 'completed' }]);
      expect(records.rows.get(thing.id)).toMatchObject({ status: 'succeeded', output: 'done', attempts: 1 });
    });

    it('parks nothing when the thing no longer runs on the job (canceled meanwhile)', async () => {
      const thing = await enqueued();
      things.work(async (started) => {
        Object.assign(records.rows.get(started.id)!, { status: 'canceled', finishedAt: new Date() });
        return later(new Date(Date.now() + 1000));
      });
      queue.sent.length = 0;
      expect(await queue.deliver(jobFor(thing))).toEqual([{ id: thing.jobId, status: 'completed' }]);
      expect(records.rows.get(thing.id)?.status).toBe('canceled');
      expect(queue.sent).toEqual([]);
      expect(outbox.published).toEqual([]);
    });
  });

  describe('the reconciler view', () => {
    it('registers the kind with its queue and forgets expired idempotency keys on every pass', async () => {
      expect(reconciler.source?.queue).toBe('things');
      await Promise.all(reconciler.chores.map((chore) => chore()));
      expect(keys.purged).toBe(1);
    });

    it('lists unfinished things with whether they can be queued again and their job options', async () => {
      const young = await enqueued();
      const worn = await enqueued({ attempts: 3 });
      const listed = await reconciler.source!.unfinished(0, 10);
      expect(listed).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            id: young.id,
            jobId: young.jobId,
            recoverable: true,
            sendOptions: { leaseSeconds: 5, retryLimit: 2, group: { id: 'org-1', tier: 'team' } },
          }),
          expect.objectContaining({ id: worn.id, recoverable: false }),
        ]),
      );
    });

    it('moves a thing to a new job only from the job it is on', async () => {
      const thing = await enqueued();
      expect(await reconciler.source!.moveToJob(thing.id, 'another-job', 'new-job')).toBe(false);
      expect(await reconciler.source!.moveToJob(thing.id, thing.jobId, 'new-job')).toBe(true);
      expect(records.rows.get(thing.id)?.jobId).toBe('new-job');
      expect(reconciler.source!.jobData(thing.id)).toEqual({ thingId: thing.id });
    });

    it('abandons a worn-out thing with the kind’s lost failure, counted and announced', async () => {
      const thing = await enqueued({ attempts: 3, color: 'green' });
      const finished: string[] = [];
      signals.on('thing.finished', (id) => finished.push(id));
      const [orphan] = await reconciler.source!.unfinished(0, 10);
      expect(await reconciler.source!.abandon(orphan)).toBe(true);
      expect(records.rows.get(thing.id)).toMatchObject({ status: 'failed', error: { code: 'THING_LOST', message: 'Lost too often' } });
      expect(finished).toEqual([thing.id]);
      expect(await metric(/things_total\{color="green",status="failed"\} (\d+)/)).toBe(1);
      // A second reconciler racing it finds the thing final and does nothing.
      expect(await reconciler.source!.abandon(orphan)).toBe(false);
    });
  });
});
