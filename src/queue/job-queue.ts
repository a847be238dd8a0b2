import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Db, Job, JobResult, PgBoss } from 'pg-boss';
import { Gauge } from 'prom-client';
import { DataSource, QueryRunner } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { DatabaseConnection } from '../database/database-connection';
import { preparingClient } from '../database/preparing-client';
import { Statement } from '../shared/jobs/statement';
import { Metrics } from '../shared/metrics/metrics';
import { WorkerSlots } from '../shared/fairness/organization-shares';
import { QueueWorker } from './queue-worker';

export const QUEUE_SCHEMA = 'pgboss';

/**
 * Seconds between pg-boss supervision passes. Expired leases are reclaimed in the per-queue
 * monitor pass, so both intervals are short: a dead worker's job runs again within seconds.
 */
const SUPERVISE_SECONDS = 2;
/**
 * Completed jobs are deleted as they complete (QueueWorker); jobs that failed for good are
 * deleted this long after, by pg-boss's retention pass, which runs at the same interval. The
 * execution, run or delivery a job carried is the record, so the queue's table holds little
 * more than the jobs in flight.
 */
export const FINISHED_JOB_SECONDS = 60;

/** A queue and, on worker processes, what processes its jobs. */
export interface QueueDefinition<T extends object> {
  name: string;
  /**
   * Processes a batch: one promise per job, settling as that job ends (`failed` is retried with
   * backoff while attempts last).
   */
  handler: (jobs: Array<Job<T>>) => Array<Promise<JobResult>>;
  /** Jobs fetched with one statement at most; a worker process works on WORKER_CONCURRENCY times as many at once. */
  batchSize: number;
  /**
   * For jobs of groups (organizations): the jobs a worker process takes at once, given its
   * WORKER_CONCURRENCY batches, and what one group holds of them at most, by the group's tier:
   * a worker skips the jobs of a group at its limit, so the other groups' jobs go first.
   */
  slots?: (base: number) => WorkerSlots;
}

export interface SendOptions {
  /** The job's id, when the caller records it beside its row. */
  id?: string;
  /** Seconds a worker may hold the job before its lease expires and another worker takes it. */
  leaseSeconds: number;
  /** Retries pg-boss allows (failed attempts and lost workers alike). */
  retryLimit: number;
  /**
   * For long jobs: the worker touches the job this often (halved) and a job not touched for
   * this long is taken as lost, whatever its lease. At least 10.
   */
  heartbeatSeconds?: number;
  /** Held back this long before a worker may take it (a retry scheduled for later)... */
  startAfterSeconds?: number;
  /** ...or until this time (a record resuming after a wait). */
  startAt?: Date;
  /** The organization the job works for, and its tier (see QueueDefinition.slots). */
  group?: { id: string; tier: string };
  /** Workers take jobs of higher priority first (default 0). */
  priority?: number;
}

/**
 * The one place that knows the job queue: pg-boss 12 on the application's Postgres, in its
 * own schema. Modules register their queues at init; the queue starts once the app has
 * booted, takes jobs only where this process is a worker, and stops before the pool closes.
 *
 * Jobs are sent inside the caller's transaction (the row that a job carries and the job
 * commit together). The worker of a queue in this process is woken at once after a send; the
 * other processes' workers find it at their next poll (every 250 ms while idle), and a busy
 * worker fetches again as soon as any of its jobs ends (QueueWorker).
 */
@Injectable()
export class JobQueue implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('JobQueue');
  private readonly boss: PgBoss;
  private readonly definitions = new Map<string, QueueDefinition<object>>();
  /** Queues jobs are sent to (a durable-job kind's), each of which must have a handler. */
  private readonly declared = new Set<string>();
  private readonly workers = new Map<string, QueueWorker<object>>();
  private started = false;

  constructor(
    private readonly config: AppConfig,
    private readonly connection: DatabaseConnection,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    dataSource: DataSource,
    metrics: Metrics,
  ) {
    const worker = config.runsWorker;
    // On a single session (PGlite) the queue shares the service's one connection; on a
    // server it has a small pool of its own, so workers never wait behind API requests.
    const database = connection.singleSession
      ? { db: sharedConnection(dataSource) }
      : {
          connectionString: connection.url,
          max: Math.max(2, Math.min(config.workerConcurrency + 1, 8)),
          ...(config.database.statementCache > 0 ? { Client: preparingClient(config.database.statementCache) } : {}),
        };
    this.boss = new PgBoss({
      ...database,
      schema: QUEUE_SCHEMA,
      application_name: `platform-${config.role}`,
      // Expiry, retention and the schedule run where jobs are worked.
      supervise: worker,
      schedule: false,
      superviseIntervalSeconds: SUPERVISE_SECONDS,
      monitorIntervalSeconds: SUPERVISE_SECONDS,
      maintenanceIntervalSeconds: FINISHED_JOB_SECONDS,
      // Our QueueWorkers poll; pg-boss's own workers (and their LISTEN connection) are not used.
      useListenNotify: false,
      instanceName: `platform-${config.role}`,
      openTelemetry: { enabled: false },
    });
    // pg-boss reports connection trouble as events; an unheard 'error' would end the process.
    this.boss.on('error', (error) => this.logger.warn(`Queue error: ${error.message}`));
    this.boss.on('warning', (warning) => this.logger.debug(`Queue warning: ${warning.message}`));
    // One statement per scrape gives both gauges: their collects start together and share it.
    let snapshot: Promise<QueueSnapshot[]> | null = null;
    const read = () =>
      (snapshot ??= this.snapshot()
        .catch(() => [])
        .finally(() => (snapshot = null)));
    const queues = () => [...this.definitions.keys()];
    new Gauge({
      name: 'job_queue_depth',
      help: 'Jobs in the durable queue by state (created = waiting, retry = waiting to retry, active = held by a worker)',
      labelNames: ['queue', 'state'],
      registers: [metrics.registry],
      async collect() {
        const rows = await read();
        for (const queue of queues()) {
          for (const state of ['created', 'retry', 'active']) {
            this.set({ queue, state }, rows.find((r) => r.queue === queue && r.state === state)?.count ?? 0);
          }
        }
      },
    });
    new Gauge({
      name: 'job_queue_age_seconds',
      help: 'Seconds the longest-waiting due job of the queue (created or to retry, its start time passed, not yet taken by a worker) has waited; 0 when none waits',
      labelNames: ['queue'],
      registers: [metrics.registry],
      async collect() {
        const rows = await read();
        for (const queue of queues()) {
          this.set({ queue }, Math.max(0, ...rows.filter((r) => r.queue === queue).map((r) => r.waitedSeconds)));
        }
      },
    });
  }

  /** Started and not stopped: jobs can be sent (and, on a worker, are taken). */
  get running(): boolean {
    return this.started;
  }

  /** A queue jobs will be sent to: the boot fails unless something registers its handler. */
  declare(name: string): void {
    this.declared.add(name);
  }

  register<T extends object>(definition: QueueDefinition<T>): void {
    if (this.started) throw new Error(`Queue '${definition.name}' registered after the queue started`);
    this.definitions.set(definition.name, definition as unknown as QueueDefinition<object>);
  }

  async onApplicationBootstrap(): Promise<void> {
    const unhandled = unhandledQueues(this.declared, this.definitions);
    if (unhandled.length)
      throw new Error(`No worker handles the jobs of queue ${unhandled.map((q) => `'${q}'`).join(', ')}: call work() on its kind`);
    await this.boss.start();
    this.started = true;
    for (const definition of this.definitions.values()) {
      const retention = { deleteAfterSeconds: FINISHED_JOB_SECONDS };
      await this.boss.createQueue(definition.name, { notify: false, ...retention });
      // A queue created before this retention keeps its own: set it (jobs sent before keep theirs).
      await this.boss.updateQueue(definition.name, retention);
      if (!this.config.runsWorker) continue;
      const base = this.config.workerConcurrency * definition.batchSize;
      const slots = definition.slots?.(base);
      const worker = new QueueWorker(this.boss, {
        schema: QUEUE_SCHEMA,
        name: definition.name,
        capacity: slots?.capacity ?? base,
        batchSize: definition.batchSize,
        handler: definition.handler,
        ...(slots ? { groupLimits: slots.limits } : {}),
      });
      this.workers.set(definition.name, worker);
      worker.start();
    }
  }

  /** Waits for running handlers (up to the grace period); what does not finish is failed, to run again elsewhere. */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    const timeoutMs = Math.max(1000, this.config.http.shutdownGraceMs - 1000);
    await Promise.all([...this.workers.values()].map((worker) => worker.stop(timeoutMs)));
    await this.boss.stop({ graceful: true, timeout: timeoutMs });
  }

  /** Queues a job in the current transaction (or alone, outside one); answers its id. */
  async send(name: string, data: object, options: SendOptions): Promise<string> {
    const id = await this.boss.send(name, data, { ...jobOptions(options), id: options.id, db: this.transactionDb() });
    if (!id) throw new Error(`Queue '${name}' refused the job`);
    return id;
  }

  /** Queues many jobs with one statement in the current transaction (an outbox's). */
  async sendMany(name: string, jobs: QueuedJob[]): Promise<void> {
    if (!jobs.length) return;
    await this.boss.insert(name, jobs.map(toInsert), { db: this.transactionDb() });
  }

  /**
   * The statement that queues these jobs, not run: to run inside the caller's own statement
   * (`withAlongside`), so the jobs commit with the records they carry in one round trip. It is
   * pg-boss's own insert, captured on its way to the database.
   */
  async insertStatement(name: string, jobs: QueuedJob[]): Promise<Statement> {
    let captured: Statement | undefined;
    const capture: Db = {
      executeSql: async (sql, params) => {
        captured = { sql, params: params ?? [] };
        return { rows: [] };
      },
    };
    await this.boss.insert(name, jobs.map(toInsert), { db: capture });
    if (!captured) throw new Error(`Queue '${name}' wrote no insert statement`);
    return captured;
  }

  /** Jobs still waiting for a later start (a retry's) may start now; answers how many. */
  async startNow(name: string, ids: string[]): Promise<number> {
    if (!ids.length) return 0;
    const rows = await this.txHost.tx.query<Array<{ id: string }>>(
      `UPDATE ${QUEUE_SCHEMA}.job SET start_after = now() WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'created' AND start_after > now() RETURNING id`,
      [name, ids],
    );
    return rows.length;
  }

  /** Wakes this process's worker on the queue instead of waiting for its poll. */
  wake(name: string): void {
    this.workers.get(name)?.wake();
  }

  /** Of these job ids, the ones still queued, waiting to retry or held by a worker. */
  async liveJobs(name: string, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.txHost.tx.query<Array<{ id: string }>>(
      `SELECT id FROM ${QUEUE_SCHEMA}.job WHERE name = $1 AND id = ANY($2::uuid[]) AND state IN ('created', 'retry', 'active')`,
      [name, ids],
    );
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Per registered queue and live state: how many jobs, and how long the one waiting longest
   * since its start time (due, not yet taken) has waited. One statement, for the gauges.
   */
  private async snapshot(): Promise<QueueSnapshot[]> {
    const rows = await this.txHost.tx.query<Array<{ name: string; state: string; count: string; waited: string | null }>>(
      `SELECT name, state, count(*) AS count,
              extract(epoch FROM now() - min(start_after) FILTER (WHERE state IN ('created', 'retry') AND start_after <= now())) AS waited
         FROM ${QUEUE_SCHEMA}.job
        WHERE name = ANY($1) AND state IN ('created', 'retry', 'active')
        GROUP BY name, state`,
      [[...this.definitions.keys()]],
    );
    return rows.map((r) => ({ queue: r.name, state: r.state, count: Number(r.count), waitedSeconds: Number(r.waited ?? 0) }));
  }

  /** pg-boss statements run through the current TypeORM transaction, so they commit with it. */
  private transactionDb(): Db {
    const manager = this.txHost.tx;
    return manager.queryRunner
      ? { executeSql: (text, values) => rowsOf(manager.queryRunner!, text, values) }
      : sharedConnection(manager.connection);
  }
}

/** The declared queues no definition handles (a kind whose `work()` was never called). */
export function unhandledQueues(declared: ReadonlySet<string>, registered: ReadonlyMap<string, unknown>): string[] {
  return [...declared].filter((name) => !registered.has(name));
}

/** A job to queue: what it carries, and its options (with its id). */
export interface QueuedJob {
  data: object;
  options: SendOptions;
}

function toInsert({ data, options }: QueuedJob) {
  return { ...jobOptions(options), id: options.id, data };
}

/** A job's lease, retries and start in pg-boss's terms; lost-worker retries back off from 1 s to a minute. */
function jobOptions(options: SendOptions) {
  return {
    expireInSeconds: options.leaseSeconds,
    retryLimit: options.retryLimit,
    ...(options.heartbeatSeconds ? { heartbeatSeconds: options.heartbeatSeconds } : {}),
    ...(options.startAt ? { startAfter: options.startAt } : options.startAfterSeconds ? { startAfter: options.startAfterSeconds } : {}),
    ...(options.group ? { group: options.group } : {}),
    ...(options.priority ? { priority: options.priority } : {}),
    retryDelay: 1,
    retryBackoff: true,
    retryDelayMax: 60,
    deleteAfterSeconds: FINISHED_JOB_SECONDS,
  };
}

/** pg-boss statements through the service's own pool, each on a connection of its own. */
function sharedConnection(dataSource: DataSource): Db {
  return {
    executeSql: async (text: string, values?: unknown[]) => {
      const runner = dataSource.createQueryRunner();
      try {
        return await rowsOf(runner, text, values);
      } finally {
        await runner.release();
      }
    },
  };
}

/**
 * Straight through the runner's pg connection: a multi-statement query answers a result per
 * statement, and pg-boss needs the rows of every one of them (TypeORM keeps only a single
 * result's).
 */
async function rowsOf(runner: QueryRunner, text: string, values?: unknown[]): Promise<{ rows: unknown[] }> {
  const client = (await runner.connect()) as { query(text: string, values?: unknown[]): Promise<PgResult | PgResult[]> };
  const result = await client.query(text, values);
  return { rows: Array.isArray(result) ? result.flatMap((r) => r.rows ?? []) : (result.rows ?? []) };
}

interface QueueSnapshot {
  queue: string;
  state: string;
  count: number;
  waitedSeconds: number;
}

interface PgResult {
  rows?: unknown[];
}
