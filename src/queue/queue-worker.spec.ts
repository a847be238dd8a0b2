import type { Job, JobResult, PgBoss } from 'pg-boss';
import { QueueWorker, QueueWorkerOptions } from './queue-worker';

const QUEUE = 'things';

interface Data {
  n: number;
}

type Attempt = { id: string; retryCount: number };

interface StoredJob {
  id: string;
  name: string;
  data: Data;
  retryCount: number;
  expireInSeconds: number;
  heartbeatSeconds: number | null;
  groupId: string | null;
  groupTier: string | null;
  state: 'created' | 'active' | 'failed';
}

/**
 * pg-boss as QueueWorker uses it, in memory: fetch claims created jobs in the order sent (skipping
 * the groups asked to be ignored), settles are fenced to the active attempt as pg-boss's are, and
 * the put-back UPDATE makes active jobs claimable again.
 */
class FakeBoss {
  readonly jobs: StoredJob[] = [];
  readonly fetches: Array<{ batchSize: number; ignoreGroups?: string[] }> = [];
  /** Ids of every complete() call, in order. */
  readonly completed: string[] = [];
  /** Every attempt fail() was called with, and its output. */
  readonly failed: Array<Attempt & { output: unknown }> = [];
  /** Ids the put-back UPDATE made claimable again. */
  readonly putBack: string[] = [];
  private sent = 0;

  send(overrides: Partial<StoredJob> = {}): StoredJob {
    this.sent++;
    const job: StoredJob = {
      id: `job-${this.sent}`,
      name: QUEUE,
      data: { n: this.sent },
      retryCount: 0,
      expireInSeconds: 60,
      heartbeatSeconds: null,
      groupId: null,
      groupTier: null,
      state: 'created',
      ...overrides,
    };
    this.jobs.push(job);
    return job;
  }

  sendMany(count: number, overrides: Partial<StoredJob> = {}): StoredJob[] {
    return Array.from({ length: count }, () => this.send(overrides));
  }

  /** The job's state; `deleted` once a completion removed it. */
  stateOf(id: string): StoredJob['state'] | 'deleted' | undefined {
    return this.jobs.find((job) => job.id === id)?.state ?? (this.completed.includes(id) ? 'deleted' : undefined);
  }

  /** How long a fetch takes to answer after it read the queue (0: one turn of the event loop). */
  fetchMs = 0;
  /** Fetches that have read the queue (claimed what they answer), and those that have answered. */
  reads = 0;
  answered = 0;

  async fetch(name: string, options: { batchSize: number; ignoreGroups?: string[] }): Promise<Array<Job<Data>>> {
    this.fetches.push(options);
    // A round trip, as the database's is: a worker that fetched in a tight loop would starve the timers otherwise.
    await new Promise((resolve) => setImmediate(resolve));
    const ignored = new Set(options.ignoreGroups ?? []);
    const claimed = this.jobs
      .filter((job) => job.name === name && job.state === 'created' && !(job.groupId && ignored.has(job.groupId)))
      .slice(0, options.batchSize);
    for (const job of claimed) job.state = 'active';
    this.reads++;
    if (this.fetchMs) await wait(this.fetchMs);
    this.answered++;
    return claimed.map(({ state: _state, ...job }) => ({ ...job }) as unknown as Job<Data>);
  }

  async deleteJob(name: string, attempts: Attempt[]): Promise<object> {
    for (const attempt of attempts) {
      const job = this.active(name, attempt);
      if (!job) continue;
      this.completed.push(attempt.id);
      this.jobs.splice(this.jobs.indexOf(job), 1);
    }
    return {};
  }

  async fail(name: string, attempts: Attempt | Attempt[], output: unknown): Promise<object> {
    for (const attempt of [attempts].flat()) {
      this.failed.push({ ...attempt, output });
      this.settle(name, attempt, 'failed');
    }
    return {};
  }

  async touch(name: string, attempt: Attempt): Promise<{ affected: number }> {
    return { affected: this.active(name, attempt) ? 1 : 0 };
  }

  getDb(): { executeSql: (sql: string, values: unknown[]) => Promise<{ rows: unknown[] }> } {
    return {
      executeSql: async (sql, values) => {
        if (!/UPDATE pgboss\.job SET state = 'created'/.test(sql)) throw new Error(`Unexpected statement: ${sql}`);
        const [name, ids] = values as [string, string[]];
        for (const job of this.jobs) {
          if (job.name !== name || !ids.includes(job.id) || job.state !== 'active') continue;
          job.state = 'created';
          this.putBack.push(job.id);
        }
        return { rows: [] };
      },
    };
  }

  private active(name: string, attempt: Attempt): StoredJob | undefined {
    return this.jobs.find(
      (job) => job.name === name && job.id === attempt.id && job.retryCount === attempt.retryCount && job.state === 'active',
    );
  }

  private settle(name: string, attempt: Attempt, state: 'failed'): void {
    const job = this.active(name, attempt);
    if (job) job.state = state;
  }
}

/**
 * A handler that holds each job until the test ends it (or, once released, ends it after a few
 * ms), keeping what ran and the most that ran at once, overall and per group.
 */
class Handler {
  readonly started: string[] = [];
  readonly signals = new Map<string, AbortSignal>();
  maxAtOnce = 0;
  readonly maxByGroup = new Map<string, number>();
  private readonly running = new Map<string, { job: Job<Data>; end: (result: JobResult) => void }>();

  constructor(private holding = true) {}

  readonly handle = (jobs: Array<Job<Data>>): Array<Promise<JobResult>> => jobs.map((job) => this.run(job));

  runningOf(group?: string): number {
    return [...this.running.values()].filter(({ job }) => group === undefined || job.groupId === group).length;
  }

  /** Ends every job held, and each later one shortly after it starts. */
  release(): void {
    this.holding = false;
    for (const id of [...this.running.keys()]) this.end(id);
  }

  private run(job: Job<Data>): Promise<JobResult> {
    this.started.push(job.id);
    this.signals.set(job.id, job.signal);
    return new Promise<JobResult>((resolve) => {
      this.running.set(job.id, { job, end: resolve });
      this.maxAtOnce = Math.max(this.maxAtOnce, this.runningOf());
      if (job.groupId) this.maxByGroup.set(job.groupId, Math.max(this.maxByGroup.get(job.groupId) ?? 0, this.runningOf(job.groupId)));
      if (!this.holding) setTimeout(() => this.end(job.id), 5);
    });
  }

  /** Ends one job held, completed. */
  end(id: string): void {
    const running = this.running.get(id);
    if (!running) return;
    this.running.delete(id);
    running.end({ id, status: 'completed' });
  }
}

function wait(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Retries `check` every 10 ms until it passes, for up to 2 s. */
async function eventually(check: () => void): Promise<void> {
  const deadline = Date.now() + 2000;
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await wait(10);
  }
}

const ids = (jobs: StoredJob[]): string[] => jobs.map((job) => job.id);

describe('QueueWorker', () => {
  let boss: FakeBoss;
  let workers: Array<QueueWorker<Data>>;
  let handlers: Handler[];

  beforeEach(() => {
    boss = new FakeBoss();
    workers = [];
    handlers = [];
  });

  afterEach(async () => {
    for (const handler of handlers) handler.release();
    await Promise.all(workers.map((worker) => worker.stop(2000)));
  });

  function started(options: Partial<QueueWorkerOptions<Data>> & Pick<QueueWorkerOptions<Data>, 'handler'>): QueueWorker<Data> {
    const worker = new QueueWorker<Data>(boss as unknown as PgBoss, {
      schema: 'pgboss',
      name: QUEUE,
      capacity: 4,
      batchSize: 4,
      ...options,
    });
    workers.push(worker);
    worker.start();
    return worker;
  }

  /**
   * Waits until the worker has looked at the queue again: a fetch begun after this call has
   * answered, and what it took has started (in the turn it answered: the fake puts nothing back
   * when the fetch skips the groups at their limit).
   */
  async function nextLook(): Promise<void> {
    const before = boss.fetches.length;
    await eventually(() => expect(boss.answered).toBeGreaterThan(before));
  }

  function holding(): Handler {
    const handler = new Handler();
    handlers.push(handler);
    return handler;
  }

  it('runs every job of the queue and completes each, never more than its capacity at once', async () => {
    const jobs = boss.sendMany(10);
    const handler = new Handler(false);
    started({ capacity: 3, batchSize: 2, handler: handler.handle });

    await eventually(() => expect([...boss.completed].sort()).toEqual(ids(jobs).sort()));
    expect([...handler.started].sort()).toEqual(ids(jobs).sort());
    // A completed job leaves the queue's table: the record it carried is the history.
    expect(jobs.map((job) => boss.stateOf(job.id))).toEqual(jobs.map(() => 'deleted'));
    expect(boss.failed).toEqual([]);
    // The slots were filled, never beyond them.
    expect(handler.maxAtOnce).toBe(3);
  });

  it("holds a group to its limit, and another group's job starts while the first's wait", async () => {
    const a = boss.sendMany(10, { groupId: 'A' });
    const [b] = boss.sendMany(1, { groupId: 'B' });
    const handler = holding();
    started({ capacity: 8, batchSize: 8, groupLimits: { default: 2, tiers: {} }, handler: handler.handle });

    await eventually(() => expect(handler.started).toContain(b.id));
    expect(handler.runningOf('A')).toBe(2);
    expect(a.filter((job) => boss.stateOf(job.id) === 'created')).toHaveLength(8);

    // Nothing more of A starts while its two hold their slots, however often the worker looks.
    await nextLook();
    expect(handler.started.filter((id) => id !== b.id)).toHaveLength(2);

    handler.release();
    await eventually(() => expect([...boss.completed].sort()).toEqual(ids([...a, b]).sort()));
    expect(handler.maxByGroup.get('A')).toBe(2);
    expect(boss.failed).toEqual([]);
  });

  it("holds each group to its tier's limit, and a tier not listed to the default", async () => {
    const enterprise = boss.sendMany(5, { groupId: 'E', groupTier: 'enterprise' });
    const starter = boss.sendMany(3, { groupId: 'S', groupTier: 'starter' });
    const handler = holding();
    started({ capacity: 8, batchSize: 8, groupLimits: { default: 1, tiers: { enterprise: 3 } }, handler: handler.handle });

    await eventually(() => expect([handler.runningOf('E'), handler.runningOf('S')]).toEqual([3, 1]));
    await nextLook();
    expect([handler.runningOf('E'), handler.runningOf('S')]).toEqual([3, 1]);

    handler.release();
    await eventually(() => expect([...boss.completed].sort()).toEqual(ids([...enterprise, ...starter]).sort()));
    expect(Object.fromEntries(handler.maxByGroup)).toEqual({ E: 3, S: 1 });
  });

  it("puts jobs a fetch brought beyond their group's limit back in the queue, unstarted, and runs them later", async () => {
    const [a1, a2, a3, a4] = boss.sendMany(4, { groupId: 'A' });
    const handler = holding();
    started({ capacity: 4, batchSize: 4, groupLimits: { default: 2, tiers: {} }, handler: handler.handle });

    await eventually(() => expect(boss.putBack).toEqual([a3.id, a4.id]));
    expect(boss.fetches[0]).toEqual({ batchSize: 4 });
    expect([a1, a2, a3, a4].map((job) => boss.stateOf(job.id))).toEqual(['active', 'active', 'created', 'created']);
    expect(handler.started).toEqual([a1.id, a2.id]);
    expect(boss.failed).toEqual([]);

    handler.release();
    await eventually(() => expect([...boss.completed].sort()).toEqual(ids([a1, a2, a3, a4]).sort()));
    // Each ran once: the put-back ones only after they were claimed again.
    expect(handler.started).toEqual([a1.id, a2.id, a3.id, a4.id]);
    expect(handler.maxByGroup.get('A')).toBe(2);
    expect(boss.failed).toEqual([]);
  });

  it('wake() makes an idle worker fetch at once rather than at its next poll', async () => {
    const handler = holding();
    const worker = started({ handler: handler.handle });
    await eventually(() => expect(boss.fetches.length).toBeGreaterThanOrEqual(1));
    // Idle once its first fetch has answered (the empty queue): its next poll is about 250 ms away.
    await eventually(() => expect(boss.answered).toBeGreaterThanOrEqual(1));

    const job = boss.send();
    const woken = Date.now();
    worker.wake();

    await eventually(() => expect(handler.started).toContain(job.id));
    expect(Date.now() - woken).toBeLessThan(100);
  });

  it('a wake() while a fetch is under way is not lost: a job sent meanwhile starts at once, not at the poll', async () => {
    boss.fetchMs = 30;
    const handler = holding();
    const worker = started({ handler: handler.handle });
    // The first fetch read the empty queue and has not answered yet.
    await eventually(() => expect(boss.reads).toBeGreaterThanOrEqual(1));
    expect(boss.answered).toBe(0);
    const job = boss.send();
    const woken = Date.now();
    worker.wake();

    await eventually(() => expect(handler.started).toContain(job.id));
    expect(Date.now() - woken).toBeLessThan(150);
  });

  it("a job put back for its group's limit starts as soon as one of the group's jobs ends, not at the poll", async () => {
    const [a1, a2, a3] = boss.sendMany(3, { groupId: 'A' });
    const handler = holding();
    started({ capacity: 4, batchSize: 4, groupLimits: { default: 2, tiers: {} }, handler: handler.handle });
    await eventually(() => expect(boss.putBack).toEqual([a3.id]));
    // The two it had room for hold their slots; the fetch came back short, so the worker sleeps until its poll.
    await eventually(() => expect(handler.started).toEqual([a1.id, a2.id]));

    const ended = Date.now();
    handler.end(a1.id);

    await eventually(() => expect(handler.started).toContain(a3.id));
    expect(Date.now() - ended).toBeLessThan(150);
    expect(handler.maxByGroup.get('A')).toBe(2);
  });

  it('stop() waits for the jobs running; one still running at the timeout has its signal aborted and is failed', async () => {
    const quick = boss.send();
    const stuck = boss.send({ retryCount: 2 });
    const handler = holding();
    started({ capacity: 2, batchSize: 2, handler: handler.handle });
    await eventually(() => expect(handler.started).toEqual([quick.id, stuck.id]));

    // The quick one ends while stop() waits; the stuck one ignores its signal.
    setTimeout(() => handler.end(quick.id), 20);
    await workers[0].stop(150);

    expect(handler.signals.get(stuck.id)?.aborted).toBe(true);
    expect(handler.signals.get(quick.id)?.aborted).toBe(false);
    expect(boss.failed).toEqual([{ id: stuck.id, retryCount: 2, output: { message: 'The worker stopped' } }]);
    expect(boss.completed).toEqual([quick.id]);
    expect(boss.stateOf(stuck.id)).toBe('failed');
  });

  it("fails the attempt of a job whose handler answers 'failed' (or throws), and completes only the others", async () => {
    const bad = boss.send({ retryCount: 1 });
    const broken = boss.send();
    const good = boss.send();
    started({
      handler: (jobs) =>
        jobs.map(async (job): Promise<JobResult> => {
          if (job.id === bad.id) return { id: job.id, status: 'failed', output: { message: 'bad input' } };
          if (job.id === broken.id) throw new Error('connection terminated');
          return { id: job.id, status: 'completed' };
        }),
    });

    await eventually(() => expect(boss.completed).toEqual([good.id]));
    await eventually(() => expect(boss.failed).toHaveLength(2));
    expect(boss.failed).toEqual(
      expect.arrayContaining([
        { id: bad.id, retryCount: 1, output: { message: 'bad input' } },
        { id: broken.id, retryCount: 0, output: { message: 'connection terminated' } },
      ]),
    );
    expect([bad, broken, good].map((job) => boss.stateOf(job.id))).toEqual(['failed', 'failed', 'deleted']);
  });
});
